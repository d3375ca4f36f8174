"""What the core rule families cost per message, beside the bare pipeline, in one run.

Run: python tests/bench/bench_rules_core.py [--messages N] [--rounds R]

Builds N message records in memory (legacy and modern sessions, the same mix as bench_lint.py), then
analyses them with: no rules (classify + pair + era + session state only), each core family alone
(envelope, correlation, meta, errors, lifecycle), and all of them together. Rounds are interleaved
and the best CPU time of each is kept (these machines are noisy), and the report gives messages/s, the
microseconds each family adds per message, and the ratio to the bare pipeline.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.bench_lint import T0, legacy_session, modern_session  # noqa: E402
from tracer.analyser import Analyser, RuleSet  # noqa: E402
from tracer.model import Direction, Record, RecordType  # noqa: E402
from tracer.rules import all_rules  # noqa: E402

FAMILIES = (
    "mcp10_envelope",
    "mcp11_envelope_members",
    "mcp12_batch",
    "mcp2_correlation",
    "mcp30_meta_keys",
    "mcp31_request_meta",
    "mcp35_errors",
    "mcp36_tool_errors",
    "mcp40_lifecycle",
)


def records(messages: int, seed: int = 7) -> list[Record]:
    rnd = random.Random(seed)
    out: list[Record] = []
    seq, t, session = 0, T0, 0
    while len(out) < messages:
        session += 1
        conn = f"c{session}"
        gen = legacy_session if session % 2 else modern_session
        for d, obj in gen(conn, rnd.randint(8, 200), rnd):
            seq += 1
            t += rnd.randint(50_000, 5_000_000)
            out.append(
                Record(
                    RecordType.MESSAGE, seq=seq, t_ns=t, dir=Direction(d), raw=orjson.dumps(obj), conn=conn
                )
            )
        seq += 1
        out.append(Record(RecordType.EVENT, seq=seq, t_ns=t, conn=conn, data={"event": "closed"}))
    return out


def run(recs: list[Record], rules) -> float:
    a = Analyser(RuleSet(rules))
    t = time.process_time()  # CPU time of this process: steadier than wall time on a shared machine
    for rec in recs:
        a.feed(rec)
    a.finish()
    return time.process_time() - t


def compare_families(families: tuple[str, ...], label: str) -> None:
    """Time the bare pipeline, each family alone, the families together and every rule, side by
    side in interleaved rounds, and print what each adds per message."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    recs = records(args.messages)
    n = sum(1 for r in recs if r.type is RecordType.MESSAGE)
    rules = list(all_rules().values())
    variants = {"no rules": []}
    for fam in families:
        variants[fam] = [r for r in rules if r.family == fam]
    variants[label] = [r for r in rules if r.family in families]
    variants["every rule"] = rules
    best = {k: float("inf") for k in variants}
    for _ in range(args.rounds):
        for name, sel in variants.items():
            best[name] = min(best[name], run(recs, sel))
    base = best["no rules"]
    print(f"{n} messages, best of {args.rounds} interleaved rounds, one core")
    print(f"{'variant':<16} {'rules':>5} {'messages/s':>12} {'µs/msg added':>13} {'time vs bare':>13}")
    for name, sel in variants.items():
        dt = best[name]
        print(f"{name:<16} {len(sel):>5} {n / dt:>12,.0f} {(dt - base) / n * 1e6:>13.2f} {dt / base:>12.2f}x")


if __name__ == "__main__":
    compare_families(FAMILIES, "core families")
