"""Exhaustive companion of fuzz_lint.py: every value inside every message of every real mini-session,
replaced in turn by an array, an object, a 65-bit integer, a lone surrogate and arrays nested as deep as
the parser takes, through the reader and
the analyser (reports and rows are fuzz_lint's). Prints the count of inputs, crashes and signatures.

Run: python tests/bench/fuzz_sweep.py [--max-depth 4]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fuzz_support import _message_value, _paths, _set, capture_bytes, ruleset, seed_sessions, signature
from tracer.analyser import Analyser
from tracer.capture import ReadProblem, read_capture

REPLACEMENTS = (["x"], {"a": 1}, 2**64 + 1, "\ud800", "deep")


def _deep_for(path: tuple) -> list:
    """Arrays nested as deep as orjson still parses at that place (1,024 levels in all): the most a
    recursive walker can be handed."""
    return json.loads("[" * (1020 - len(path)) + "]" * (1020 - len(path)))


def analyse(data: bytes) -> str | None:
    try:
        a = Analyser(ruleset())
        for item in read_capture(io.BytesIO(data), "sweep.jsonl"):
            if not isinstance(item, ReadProblem):
                a.feed(item)
        a.finish()
    except Exception:
        return traceback.format_exc()
    return None


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--max-depth", type=int, default=4)
    args = p.parse_args()
    sigs: Counter = Counter()
    first: dict[str, str] = {}
    n = crashes = 0
    started = time.perf_counter()
    for session in seed_sessions():
        for i, rec in enumerate(session):
            value = _message_value(rec)
            if value is None:
                continue
            for path in _paths(value):
                if not path or len(path) > args.max_depth:
                    continue
                for new in REPLACEMENTS:
                    recs = json.loads(json.dumps(session))
                    v = json.loads(recs[i]["text"])
                    recs[i]["text"] = json.dumps(_set(v, path, _deep_for(path) if new == "deep" else new))
                    n += 1
                    tb = analyse(capture_bytes(recs))
                    if tb is not None:
                        crashes += 1
                        sig = signature(tb)
                        sigs[sig] += 1
                        first.setdefault(sig, tb)
    for sig, k in sigs.most_common():
        print(f"\n=== {k} x {sig}\n{first[sig]}")
    print(
        f"\n{n:,} inputs: {crashes} crashes, {len(sigs)} distinct signatures, "
        f"{n / (time.perf_counter() - started):,.0f} inputs/s"
    )
    return 1 if crashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
