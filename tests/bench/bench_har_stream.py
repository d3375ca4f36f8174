"""Benchmark the viewer's two ways of converting a HAR: entry by entry (tracer.inputs.harstream, what
the viewer's background conversion does first) against the whole-document reader (har.read, what
lint does and what the viewer falls back to), each in a process of its own, alternated rounds.

Prints CPU time (this machine is shared: wall time swings with the load) to the first record and to
the last, and peak RSS, with the ratios whole / streamed:

    python tests/bench/bench_har_stream.py [--file X.har] [--messages 300000] [--rounds 3]

Without --file it generates a HAR (tests/geninputs.py) from a generated capture. Nothing here
asserts a time; it reports.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def child(path: str, how: str) -> dict:
    import resource
    import time

    from tracer.inputs.lazy import converted_records, record_line

    t = time.process_time()
    if how == "whole":
        from tracer.inputs import open_input

        recs = converted_records(open_input(path).records)
    else:
        from tracer.inputs.harstream import stream
        from tracer.inputs.settle import settle

        recs = converted_records(settle(stream(open(path, "rb"), path)))  # noqa: SIM115
    first = None
    n = 0
    for rec in recs:
        record_line(rec)
        n += 1
        if first is None:
            first = time.process_time() - t
    return {
        "records": n,
        "first_s": first or 0.0,
        "all_s": time.process_time() - t,
        "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def run(path: str, how: str) -> dict:
    p = subprocess.run(
        [sys.executable, __file__, "--child", how, "--file", path], capture_output=True, text=True, check=True
    )
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file")
    ap.add_argument("--messages", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.file, args.child)))
        return
    path = args.file
    if path is None:
        from tests.gencapture import generate
        from tests.geninputs import generate as generate_input

        tmp = Path(tempfile.gettempdir())
        capture = str(tmp / f"mcptrace-bench-har-{args.messages}.jsonl")
        path = capture[: -len("jsonl")] + "har"
        if not os.path.exists(path):
            print(f"generating {path}...", file=sys.stderr)
            generate(capture, args.messages, 300)
            generate_input(capture, path, "har")
    print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB; CPU time, whole document vs entry by entry")
    for r in range(args.rounds):
        w, s = run(path, "whole"), run(path, "stream")
        assert w["records"] == s["records"], (w, s)
        print(
            f"  round {r + 1}: first record {w['first_s']:6.2f} s -> {s['first_s']:5.2f} s "
            f"({w['first_s'] / max(s['first_s'], 1e-3):5.1f}x)   all {w['all_s']:6.2f} s -> {s['all_s']:6.2f} s "
            f"({w['all_s'] / s['all_s']:4.2f}x)   peak RSS {w['rss_mb']:5.0f} MB -> {s['rss_mb']:4.0f} MB   "
            f"{s['records']:,} records"
        )


if __name__ == "__main__":
    main()
