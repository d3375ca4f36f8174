"""What the message- and session-level rule families (MRTR, caching, capabilities, utilities,
subscriptions, feature payloads, deprecations) cost per message, beside the bare pipeline.

Run: python tests/bench/bench_rules_more.py [--messages N] [--rounds R]

Same records as bench_rules_core.py (legacy and modern sessions of tools/list + tools/call, the mix
of bench_lint.py). Rounds are interleaved and the best of each is kept (these machines are noisy);
the report gives messages/s, the microseconds each family adds per message, and the ratio to the
bare pipeline (classify + pair + era + session state, no rules).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.bench_rules_core import records, run  # noqa: E402
from tracer.model import RecordType  # noqa: E402
from tracer.rules.registry import all_rules  # noqa: E402

FAMILIES = ("mrtr", "caching", "capabilities", "utilities", "subscriptions", "features", "content",
            "client_features", "deprecated")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    recs = records(args.messages)
    n = sum(1 for r in recs if r.type is RecordType.MESSAGE)
    rules = list(all_rules().values())
    variants = {"no rules": []}
    for fam in FAMILIES:
        variants[fam] = [r for r in rules if r.family == fam]
    variants["these families"] = [r for r in rules if r.family in FAMILIES]
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
    main()
