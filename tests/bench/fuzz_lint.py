"""The big structured fuzz run of issue 12: mutated real mini-sessions through the capture reader,
the analyser, every reporter and the viewer's row/preview code (tests/fuzz_support.py).

Run: python tests/bench/fuzz_lint.py [--inputs 100000] [--seed 1] [--annotate-every 50]

Prints the number of inputs, crashes, distinct crash signatures (with one traceback each) and the
rate. Target: 0 crashes. Not a test: it takes minutes.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fuzz_support import capture_bytes, mutate, run_annotator, run_pipeline, seed_sessions, signature


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--inputs", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--annotate-every",
        type=int,
        default=50,
        help="also run the viewer's background analysis on every Nth input (0: never)",
    )
    p.add_argument("--no-reports", action="store_true")
    args = p.parse_args()
    rng = random.Random(args.seed)
    seeds = seed_sessions()
    sigs: Counter = Counter()
    first: dict[str, str] = {}
    crashes = 0
    started = time.perf_counter()
    for i in range(args.inputs):
        data = capture_bytes(mutate(rng, rng.choice(seeds)))
        tb = run_pipeline(data, reports=not args.no_reports)
        if tb is None and args.annotate_every and i % args.annotate_every == 0:
            tb = run_annotator(data)
        if tb is not None:
            crashes += 1
            sig = signature(tb)
            sigs[sig] += 1
            first.setdefault(sig, tb)
        if (i + 1) % 5000 == 0:
            print(
                f"  {i + 1:,} inputs, {crashes} crashes, {len(sigs)} signatures", file=sys.stderr, flush=True
            )
    secs = time.perf_counter() - started
    for sig, n in sigs.most_common():
        print(f"\n=== {n} x {sig}\n{first[sig]}")
    print(
        f"\n{args.inputs:,} inputs from {len(seeds)} seed sessions: {crashes} crashes "
        f"({crashes / args.inputs:.2%}), {len(sigs)} distinct signatures, {args.inputs / secs:,.0f} inputs/s"
    )
    return 1 if crashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
