"""The rule catalog. Importing this package registers every rule family."""

# Families: envelope (MCP1xx), schema (MCP150-MCP152, the official-schema safety net), correlation
# (MCP2xx), meta (3a/3b), result_type (MCP320-MCP321), mrtr and caching (3c/3d), errors (3e), lifecycle (MCP401-MCP410),
# stdio (MCP801-MCP809: framing, stderr, process life cycle); capabilities (MCP412-MCP432);
# utilities (MCP501-MCP533: cancellation, progress, ping, logging), subscriptions (MCP540-MCP547);
# features (MCP601-MCP609: tools/list), tool_calls (MCP610-MCP617), content (MCP611-MCP624), client_features (MCP625-MCP630);
# http (MCP701-MCP706, MCP740-MCP745), http_answers (MCP746-MCP755), http_session (MCP714,
# MCP720-MCP732), http_sse (MCP707-MCP717, MCP901-MCP904): Streamable HTTP and legacy HTTP+SSE.
from tracer.rules import (  # noqa: F401
    caching,
    capabilities,
    client_features,
    content,
    correlation,
    deprecated,
    envelope,
    errors,
    features,
    http,
    http_answers,
    http_session,
    http_sse,
    lifecycle,
    meta,
    mrtr,
    result_type,
    schema,
    stdio,
    subscriptions,
    tool_calls,
    utilities,
)
from tracer.rules.registry import REGISTRY, Rule, all_rules, rule, select_rules

__all__ = ["REGISTRY", "Rule", "all_rules", "rule", "select_rules"]
