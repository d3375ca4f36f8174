"""The rule catalog. Importing this package registers every rule.

A rule MCPabc lives in the module whose digits are the longest prefix of "abc": MCP101 in
mcp10_envelope.py, MCP310 in mcp31_request_meta.py, MCP2xx in mcp2_correlation.py
(tests/tracer/rules/test_rule_homes.py checks it). Rules run in id order whatever the module order (the schema
safety net, MCP150-MCP152, last on each message: `Rule.order`). The registry, the docs and shared
helpers live in tracer.catalog.
"""

from collections.abc import Iterable

from tracer.catalog.registry import REGISTRY, Rule, SelectionError, rule, select_from
from tracer.rules import (  # noqa: F401  (importing a module registers its rules)
    mcp2_correlation,
    mcp8_stdio,
    mcp9_legacy,
    mcp10_envelope,
    mcp11_envelope_members,
    mcp12_batch,
    mcp15_schema,
    mcp30_meta_keys,
    mcp31_request_meta,
    mcp32_mrtr,
    mcp33_mrtr_retry,
    mcp34_caching,
    mcp35_errors,
    mcp36_tool_errors,
    mcp40_lifecycle,
    mcp41_capabilities,
    mcp42_changes_tasks,
    mcp43_discover,
    mcp50_cancellation,
    mcp51_progress,
    mcp52_ping,
    mcp53_logging,
    mcp54_subscriptions,
    mcp60_tools_list,
    mcp61_tool_calls,
    mcp62_features,
    mcp63_elicitation_resources,
    mcp70_http,
    mcp71_sse,
    mcp72_http_session,
    mcp73_version_header,
    mcp74_http_headers,
    mcp75_modern_http,
)


def all_rules() -> dict[str, Rule]:
    """Every registered rule by id, in id order (the order rules run in)."""
    return dict(sorted(REGISTRY.items()))


def select_rules(select: Iterable[str] | None = None, ignore: Iterable[str] | None = None) -> list[Rule]:
    """Rules chosen by ids or prefixes (`MCP1`, `MCP31`, `MCP310`); unknown tokens are an error, and
    so is a selection that leaves no rule (`--select "$RULES"` of an empty variable, an ignore taking
    back the whole select): a check that ran no rule would pass what it never checked. Every door
    that selects rules (lint, the pytest plugin) comes through here."""
    select = list(select) if select is not None else None
    ignore = list(ignore) if ignore is not None else None
    rules = select_from(all_rules(), select, ignore)
    if not rules:
        sel, ign = ",".join(select or ()), ",".join(ignore or ())
        raise SelectionError(
            f"the selection leaves no rule to run (select {sel!r}"
            + (f", ignore {ign!r}" if ign else "")
            + "; see `mcptrace rules`)"
        )
    return rules


__all__ = ["REGISTRY", "Rule", "SelectionError", "all_rules", "rule", "select_rules"]
