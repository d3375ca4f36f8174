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
    "mcp32_mrtr",
    "mcp33_mrtr_retry",
    "mcp34_caching",
    "mcp41_capabilities",
    "mcp42_changes_tasks",
    "mcp43_discover",
    "mcp50_cancellation",
    "mcp51_progress",
    "mcp52_ping",
    "mcp53_logging",
    "mcp54_subscriptions",
    "mcp60_tools_list",
    "mcp61_tool_calls",
    "mcp62_features",
    "mcp63_elicitation_resources",
    "mcp9_legacy",
)

if __name__ == "__main__":
    compare_families(FAMILIES, "these families")
