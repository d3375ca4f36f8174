"""MCP630-MCP631: URL elicitation completions and missing resources."""

from __future__ import annotations

from tracer.catalog.registry import rule
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import L4, M
from tracer.rules.mcp60_tools_list import complete
from tracer.rules.mcp61_tool_calls import RESULT, _template_re


def _listed(uri: str, resources: frozenset[str], templates: tuple[str, ...]) -> bool:
    return uri in resources or any(_template_re(tpl).fullmatch(uri) for tpl in templates)


@rule(
    "MCP630",
    "elicitation-complete-unknown-id",
    Severity.WARNING,
    kinds=(Kind.NOTIFICATION,),
    methods=("notifications/elicitation/complete",),
    versions=frozenset({L4}),
    scope="pairing",
    spec="spec/2025-11-25/client/elicitation.mdx:L396-408",
)
def elicitation_complete_unknown_id(m: Analysed, s):
    """`notifications/elicitation/complete` names an `elicitationId` that no URL-mode elicitation
    (an `elicitation/create` request or a -32042 error's `data.elicitations`) issued. Servers MUST
    include the established id; clients ignore unknown ones.

    Example: `{"method": "notifications/elicitation/complete", "params": {"elicitationId": "nope"}}`.
    """
    eid = (m.params or {}).get("elicitationId")
    if type(eid) is str and eid in s.track.elicitations:
        return None
    return Hit(
        f"elicitationId {eid!r} was not established by a URL-mode elicitation", path="$.params.elicitationId"
    )


@rule(
    "MCP631",
    "missing-resource-empty-contents",
    Severity.ERROR,
    kinds=RESULT,
    methods=("resources/read",),
    versions=frozenset({M}),
    scope="pairing",
    spec="spec/2026-07-28/server/resources.mdx:L404-410",
)
def missing_resource_empty_contents(m: Analysed, s):
    """A `resources/read` of a URI that is not a resource (the capture's complete `resources/list`
    does not list it and no template of its complete `resources/templates/list` can expand to it)
    is answered with an empty `contents` array instead of an error. Reads are only judged once both
    lists were captured.

    "If the requested resource does not exist, servers MUST return a JSON-RPC error with code
    -32602 (Invalid Params)." "Servers MUST NOT return an empty contents array for a non-existent
    resource." Example: `resources/read` of `file:///nope.txt`, answered `{"contents": []}`.
    """
    r = complete(m)
    if r is None or r.get("contents") != []:
        return None
    t = s.track
    resources, templates = t.resources, t.templates
    req = m.request
    uri = (req.params or {}).get("uri") if req is not None else None
    if resources is None or templates is None or type(uri) is not str or _listed(uri, resources, templates):
        return None
    return Hit(
        f"{uri!r} is not a listed resource and matches no template, yet the read answered an empty "
        "contents array; a missing resource is a -32602 error (with the uri in data)",
        path="$.result.contents",
    )
