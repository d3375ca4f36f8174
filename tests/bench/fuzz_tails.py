"""Hostile input through what landed in the sixth session: a HAR cut short (tracer/inputs/harcut.py),
the ends read ahead for `G` (tracer/inputs/tail.py, hartail.py, addons/mitm_stream.read_tail), and
the viewer's flat row loop (tracer/view/hotrows.py, against the analyser row by row).

    python tests/bench/fuzz_tails.py [--rounds 300] [--seed 0] [--only harcut hartail tail mitm hotrows]

A failure is a traceback, a call over SLOW_S of CPU (a hang in the making), or a lost record: a cut
HAR must give every entry whole before its cut, a read-ahead of a whole input only rows the input
has, the viewer's rows what the analyser says. Prints each part's cases and failures (inputs saved
under /tmp/mcptrace-fuzz-tails/). Target: 0.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

SLOW_S = 5.0
OUT = Path(tempfile.gettempdir()) / "mcptrace-fuzz-tails"
NASTY = [
    "\ud800",
    "\udfff",
    "caf\u00e9 \u2615",
    "\x00",
    "\\",
    '"',
    "\\u00",
    "]}",
    "{[",
    "\u2028",
    "é" * 50,
]


def _nasty_value(rng: random.Random):
    pick = rng.randrange(9)
    if pick == 0:
        return rng.choice(NASTY) * rng.randint(1, 40)
    if pick == 1:
        return 2 ** rng.choice([63, 64, 65, 200])
    if pick == 2:
        return json.loads("[" * 40 + "]" * 40)
    if pick == 3:
        return {"request": {"a": [1]}, "startedDateTime": "x"}  # (an entry look-alike)
    if pick == 4:
        return rng.random() * 10 ** rng.randint(-5, 300)
    if pick == 5:
        return [None, True, False, "", {}]
    if pick == 6:
        return "x" * rng.randint(0, 5000)
    if pick == 7:
        return {"log": {"entries": []}}
    return rng.randint(-(2**31), 2**31)


def _entry(rng: random.Random, i: int) -> dict:
    from tests.tracer.cli.test_view_forced_format import _entry as plain

    e = plain(i)
    e["startedDateTime"] = f"2026-11-29T10:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
    if rng.random() < 0.3:
        body = json.loads(e["request"]["postData"]["text"])
        body["params"]["arguments"] = {"v": _nasty_value(rng)}
        e["request"]["postData"]["text"] = json.dumps(body)
    if rng.random() < 0.2:
        e["_extra"] = _nasty_value(rng)
    if rng.random() < 0.1:
        e["response"]["content"]["text"] = rng.choice(NASTY)
    return e


def _har(rng: random.Random) -> tuple[str, list[tuple[int, int]]]:
    """A HAR document and each entry's (start, end) in it."""
    entries = [_entry(rng, i) for i in range(rng.randint(1, 12))]
    doc = {"log": {"version": "1.2", "creator": {"name": "fuzz"}, "entries": entries}}
    if rng.random() < 0.3:
        doc["log"]["pages"] = [{"title": rng.choice(NASTY)}]
    indent = rng.choice([None, 1, 2])
    text = json.dumps(doc, indent=indent, ensure_ascii=rng.random() < 0.5)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # (a lone surrogate: a HAR writer can only escape it)
        text = json.dumps(doc, indent=indent)
    dec = json.JSONDecoder()
    bounds = []
    i = text.index("[", text.index('"entries"'))
    for _ in entries:
        i = text.index("{", i)
        _, end = dec.raw_decode(text, i)
        bounds.append((i, end))
        i = end
    return text, bounds


class Part:
    def __init__(self, name: str):
        self.name = name
        self.cases = 0
        self.failures: list[str] = []

    def fail(self, why: str, data: bytes, suffix: str) -> None:
        OUT.mkdir(exist_ok=True)
        path = OUT / f"{self.name}-{len(self.failures)}{suffix}"
        path.write_bytes(data)
        self.failures.append(f"{why} ({path})")

    def timed(self, fn, *args):
        t = time.process_time()
        try:
            return fn(*args), None, time.process_time() - t
        except Exception:
            return None, traceback.format_exc(limit=6), time.process_time() - t


def _records_or_error(path: str):
    from tracer.inputs import InputError, open_input

    try:
        return list(open_input(path, fmt="har").records)
    except InputError as exc:
        return exc


def fuzz_harcut(rng: random.Random, part: Part, tmp: Path) -> None:
    from tracer.capture import ReadProblem
    from tracer.inputs import InputError

    text, bounds = _har(rng)
    data = text.encode("utf-8", "surrogatepass")
    whole_path = tmp / "whole.har"
    whole_path.write_bytes(data)
    for _ in range(6):
        part.cases += 1
        at = rng.randrange(1, len(data))
        cut = data[:at]
        if rng.random() < 0.2:  # and a hostile byte or two where it ends
            cut += bytes(rng.randrange(256) for _ in range(rng.randint(1, 3)))
        path = tmp / "cut.har"
        path.write_bytes(cut)
        items, tb, cpu = part.timed(lambda p=path: _records_or_error(str(p)))
        if isinstance(items, InputError):  # (a forced format that reads no message: exit 2, said)
            whole_before = sum(
                1 for _, end in bounds if len(text[:end].encode("utf-8", "surrogatepass")) <= at
            )
            if whole_before and len(cut) == at:
                part.fail(f"cut at {at}: {items}, {whole_before} whole entries lost", cut, ".har")
            continue
        if tb is not None:
            part.fail(f"traceback: {tb.splitlines()[-1]}", cut, ".har")
            continue
        if cpu > SLOW_S:
            part.fail(f"{cpu:.1f} s of CPU", cut, ".har")
        if len(cut) != at:
            continue  # (hostile bytes added: no count to hold it to)
        problems = [i for i in items if isinstance(i, ReadProblem)]
        whole_before = sum(1 for _, end in bounds if len(text[:end].encode("utf-8", "surrogatepass")) <= at)
        said = [p for p in problems if "cut short" in p.message]
        if said:
            got = int(said[0].message.rsplit(":", 1)[1])
            if got != whole_before:
                part.fail(
                    f"cut at {at}: {got} entries read, {whole_before} whole before the cut", cut, ".har"
                )
        elif whole_before and len(problems) != 0:
            part.fail(f"cut at {at}: not read as cut, {whole_before} whole entries lost", cut, ".har")


def fuzz_hartail(rng: random.Random, part: Part, tmp: Path) -> None:
    from tracer.capture import ReadProblem
    from tracer.inputs import open_input
    from tracer.inputs.hartail import read_har_tail

    text, _ = _har(rng)
    data = bytearray(text.encode("utf-8", "surrogatepass"))
    for _ in range(4):
        part.cases += 1
        mutated = bytearray(data)
        for _ in range(rng.choice([0, 0, rng.randint(1, 6)])):
            k = rng.randrange(len(mutated))
            op = rng.randrange(4)
            if op == 0:
                mutated[k] = rng.randrange(256)
            elif op == 1:
                del mutated[k : k + rng.randint(1, 50)]
            elif op == 2:
                mutated[k:k] = rng.choice([b"{", b"[", b'"', b"\\", b"{" * 2000, b"\xff", b"\xe2\x98"])
            else:
                mutated = mutated[:k]
            if not mutated:
                mutated = bytearray(b"{")
        path = tmp / "tail.har"
        path.write_bytes(bytes(mutated))
        window = 4096 if rng.random() < 0.5 else 1 << 20
        got, tb, cpu = part.timed(lambda p=path, w=window: read_har_tail(str(p), nbytes=w))
        if tb is not None:
            part.fail(f"traceback: {tb.splitlines()[-1]}", bytes(mutated), ".har")
        elif cpu > SLOW_S:
            part.fail(f"{cpu:.1f} s of CPU", bytes(mutated), ".har")
        elif mutated == data and window >= len(data):  # (the whole document in the window: all its rows)
            whole = [r for r in open_input(str(path)).records if not isinstance(r, ReadProblem)]
            if len(got or ()) != min(len(whole), 512):
                part.fail(f"{len(got or ())} rows read ahead of {len(whole)}", bytes(mutated), ".har")


def _line_input(rng: random.Random, fmt: str) -> bytes:
    lines = []
    for i in range(rng.randint(1, 200)):
        msg = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"v": _nasty_value(rng)}}
        text = json.dumps(msg, ensure_ascii=rng.random() < 0.5)
        if fmt == "hostlog":
            who = rng.choice(["client", "server"])
            text = f"2026-11-29T10:00:{i % 60:02d}.{i % 1000:03d}Z [info] [srv] Message from {who}: {text}"
        line = text.encode("utf-8", "surrogatepass")
        if rng.random() < 0.1:
            line = bytes(rng.randrange(256) for _ in range(rng.randint(0, 300)))
        if rng.random() < 0.03:
            line = b"x" * rng.randint(1000, 300_000)
        lines.append(line)
    data = b"\n".join(lines) + rng.choice([b"\n", b"", b"\r\n", b"\n\xef\xbb\xbf"])
    return data


def fuzz_tail(rng: random.Random, part: Part, tmp: Path) -> None:
    from tracer.capture import ReadProblem
    from tracer.inputs import FORMATS, _ensure_builtin, open_input
    from tracer.inputs.tail import read_tail
    from tracer.model import RecordType

    _ensure_builtin()
    for fmt_name in ("hostlog", "ndjson"):
        part.cases += 1
        fmt = next(f for f in FORMATS if f.name == fmt_name)
        data = _line_input(rng, fmt_name)
        path = tmp / f"tail.{fmt_name}"
        path.write_bytes(data)
        nbytes = rng.choice([64, 1000, 4096, 256 << 10])
        got, tb, cpu = part.timed(lambda p=path, f=fmt, n=nbytes: read_tail(str(p), f, nbytes=n))
        if tb is not None:
            part.fail(f"{fmt_name}: traceback: {tb.splitlines()[-1]}", data, f".{fmt_name}")
        elif cpu > SLOW_S:
            part.fail(f"{fmt_name}: {cpu:.1f} s of CPU", data, f".{fmt_name}")
        else:
            total = data.count(b"\n") + 1
            if got is not None and (got.first_line < 1 or got.first_line > total or got.offset > len(data)):
                part.fail(f"{fmt_name}: window at line {got.first_line} of {total}", data, f".{fmt_name}")
            elif nbytes >= len(data):  # (the whole input in the window: every row lint reads, the last 512)
                inp = open_input(str(path), fmt=fmt_name)
                whole = [
                    r
                    for r in inp.records
                    if not isinstance(r, ReadProblem) and r.type is not RecordType.HEADER
                ]
                if len(got.lines if got else ()) != min(len(whole), 512):
                    n = len(got.lines if got else ())
                    part.fail(f"{fmt_name}: {n} rows read ahead of {len(whole)}", data, f".{fmt_name}")


def _tnetstring(rng: random.Random, depth: int = 0) -> bytes:
    kind = rng.randrange(6 if depth < 6 else 3)
    if kind == 0:
        body = bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
        return b"%d:%s," % (len(body), body)
    if kind == 1:
        body = str(rng.randint(-(2**70), 2**70)).encode()
        return b"%d:%s#" % (len(body), body)
    if kind == 2:
        return rng.choice([b"4:true!", b"5:false!", b"0:~", b"3:1.5^"])
    if kind == 3:
        body = b"".join(_tnetstring(rng, depth + 1) for _ in range(rng.randint(0, 4)))
        return b"%d:%s]" % (len(body), body)
    body = b"".join(
        _tnetstring(rng, depth + 1) + _tnetstring(rng, depth + 1) for _ in range(rng.randint(0, 3))
    )
    return b"%d:%s}" % (len(body), body)


def fuzz_mitm(rng: random.Random, part: Part, tmp: Path, real: bytes) -> None:
    from addons.mitm_stream import read_tail

    for _ in range(3):
        part.cases += 1
        pieces = []
        for _ in range(rng.randint(1, 8)):
            choice = rng.randrange(5)
            if choice == 0 and real:
                pieces.append(real)
            elif choice == 1:
                pieces.append(_tnetstring(rng))
            elif choice == 2:
                pieces.append(b"%d:" % rng.choice([0, 1, 10**12, 10**22]) + b"x" * rng.randint(0, 50))
            elif choice == 3 and real:
                k = rng.randrange(len(real))
                pieces.append(real[:k] + bytes([rng.randrange(256)]) + real[k + 1 :])
            else:
                pieces.append(bytes(rng.randrange(256) for _ in range(rng.randint(0, 64))))
        data = b"".join(pieces)
        path = tmp / "tail.mitm"
        path.write_bytes(data)
        _, tb, cpu = part.timed(read_tail, str(path))
        if tb is not None:
            part.fail(f"traceback: {tb.splitlines()[-1]}", data, ".mitm")
        elif cpu > SLOW_S:
            part.fail(f"{cpu:.1f} s of CPU", data, ".mitm")


def fuzz_hotrows(rng: random.Random, part: Part, tmp: Path, sessions: list) -> None:
    from tests.fuzz_support import capture_bytes, mutate
    from tests.tracer.view.test_view_analysis import _same_rows

    part.cases += 1
    recs = mutate(rng, rng.choice(sessions))
    data = capture_bytes(recs)
    path = tmp / "rows.jsonl"
    path.write_bytes(data)
    work = Path(tempfile.mkdtemp(dir=tmp))
    try:
        _same_rows(path, work)
    except AssertionError as exc:
        part.fail(f"row mismatch: {str(exc).splitlines()[0][:200]}", data, ".jsonl")
    except Exception:
        part.fail(f"traceback: {traceback.format_exc(limit=4).splitlines()[-1]}", data, ".jsonl")


def _real_flows() -> bytes:
    """A real flow file's bytes (mitmproxy's own writer: tests/tracer/inputs' helper), or b''."""
    try:
        import io

        from mitmproxy import io as mio
        from mitmproxy.test import tflow

        out = io.BytesIO()
        w = mio.FlowWriter(out)
        for _ in range(3):
            w.add(tflow.tflow(resp=True))
        return out.getvalue()
    except Exception:
        return b""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", default=[])
    args = ap.parse_args()
    rng = random.Random(args.seed)
    names = ["harcut", "hartail", "tail", "mitm", "hotrows"]
    parts = {n: Part(n) for n in names if not args.only or n in args.only}
    real = _real_flows() if "mitm" in parts else b""
    sessions = []
    if "hotrows" in parts:
        from tests.fuzz_support import seed_sessions

        sessions = seed_sessions()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for _ in range(args.rounds):
            if "harcut" in parts:
                fuzz_harcut(rng, parts["harcut"], tmp)
            if "hartail" in parts:
                fuzz_hartail(rng, parts["hartail"], tmp)
            if "tail" in parts:
                fuzz_tail(rng, parts["tail"], tmp)
            if "mitm" in parts:
                fuzz_mitm(rng, parts["mitm"], tmp, real)
            if "hotrows" in parts:
                fuzz_hotrows(rng, parts["hotrows"], tmp, sessions)
    bad = 0
    for p in parts.values():
        print(f"{p.name:8} {p.cases:6} cases  {len(p.failures)} failures")
        for f in p.failures[:10]:
            print(f"    {f}")
        bad += len(p.failures)
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
