"""Hostile NDJSON through the viewer's lazy rows (tracer.inputs.lazy.RecordIndex: each row's capture
line made again from its input line when shown) against the lines of the converted capture, row
for row: type-confused ids and methods, 65-bit ids, lone surrogates, bytes that are not UTF-8, NUL,
a BOM mid-file, batches with junk, nesting past the parser, a 300 KB line, CR, duplicate members.
(The hand-made cases and the hostile host log of tests/tracer/view/test_view_lazy_rows.py, at scale.)

    python tests/bench/fuzz_lazy_rows.py [--files 150] [--seed 0]

Prints the files tried, the row mismatches and the crashes (each input saved under /tmp). Target: 0.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.tracer.view.test_view_lazy_rows import _converted_lines, _viewer_lines

FIRST = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'  # (so that every file is detected as NDJSON)
PIECES = [
    FIRST,
    b'{"jsonrpc":"2.0","id":1,"result":{}}',
    b'{"jsonrpc":"2.0","id":"1","method":"initialize","params":{"protocolVersion":"2025-11-25"}}',
    b'{"jsonrpc":"2.0","id":18446744073709551617,"method":"ping"}',
    b'{"jsonrpc":"2.0","id":18446744073709551617,"result":{}}',
    b'{"jsonrpc":"2.0","id":1.5,"result":{}}',
    b'{"jsonrpc":"2.0","id":[1],"method":{"a":1}}',
    b'{"jsonrpc":"2.0","id":null,"error":{"code":"x"}}',
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":[1],"progress":NaN}}',
    b'{"jsonrpc":"2.0","id":1,"result":{"s":"\\ud800"}}',
    b'{"jsonrpc":"2.0","id":"\\udfff","method":"x"}',
    b'{"s":"\xff\xfe"}',
    b"\x00",
    b"\x00{}",
    b"\xef\xbb\xbf{}",
    b"[]",
    b"[1,2]",
    b'[{"jsonrpc":"2.0","id":9,"method":"ping"},5]',
    b"[" * 3000 + b"]" * 3000,
    b'{"a":' * 300 + b"1" + b"}" * 300,
    b"null",
    b"1e999",
    b'"str"',
    b"",
    b"   ",
    b"\r",
    b'{"jsonrpc":"2.0","id":1,"result":{}}\r',
    b'{"jsonrpc":"2.0","id":1,"method":"x","params":"' + b"A" * 300_000 + b'"}',
    b'{"jsonrpc":"2.0","id":1,"method":"x"} trailing',
    b'{"jsonrpc":"2.0","id":1,"id":2,"method":"x"}',
    b'{"jsonrpc":"2.0","id":true,"method":"x"}',
    b'{"jsonrpc":2,"id":1,"method":"x"}',
    b'{"jsonrpc":"2.0","dir":"c2s","id":3,"method":"y"}',
]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=150)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    out = Path(tempfile.mkdtemp(prefix="fuzz_lazy_rows-"))
    mismatches = crashes = 0
    for k in range(args.files):
        rnd = random.Random(args.seed * 1_000_003 + k)
        lines = [FIRST] + [rnd.choice(PIECES) for _ in range(rnd.randint(1, 80))]
        data = b"\n".join(lines) + (b"\n" if rnd.random() < 0.5 else b"")
        path = out / f"{k}.ndjson"
        path.write_bytes(data)
        try:
            _how, rows = _viewer_lines(str(path))
            if rows != _converted_lines(str(path)):
                mismatches += 1
                print(f"rows differ from the converted capture: {path}")
                continue
        except Exception:  # (the harness reports every crash, it does not stop)
            crashes += 1
            print(f"crash on {path}:\n{traceback.format_exc(limit=6)}")
            continue
        path.unlink()
    print(f"{args.files} files, {mismatches} row mismatches, {crashes} crashes (kept under {out})")
    return 1 if mismatches or crashes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
