"""What the message- and session-level rule families (MRTR, caching, capabilities, utilities,
subscriptions, feature payloads, deprecations) cost per message, beside the bare pipeline.

Run: python tests/bench/bench_rules_more.py [--messages N] [--rounds R]

Same records as bench_rules_core.py (legacy and modern sessions of tools/list + tools/call, the mix
of bench_lint.py). Rounds are interleaved and the best of each is kept (these machines are noisy);
the report gives messages/s, the microseconds each family adds per message, and the ratio to the
bare pipeline (classify + pair + era + session state, no rules).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.bench_rules_core import compare_families  # noqa: E402

FAMILIES = (
    "mrtr",
    "caching",
    "capabilities",
    "utilities",
    "subscriptions",
    "features",
    "tool_calls",
    "content",
    "client_features",
    "deprecated",
)

if __name__ == "__main__":
    compare_families(FAMILIES, "these families")
