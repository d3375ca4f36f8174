"""MCP360-MCP361: tool errors answered in the wrong form (a protocol error for bad input, a success for an unknown tool)."""

from __future__ import annotations

import re

from tracer.catalog.registry import rule
from tracer.model import ERA_MODERN as _ERA_MODERN  # (enum members as globals: tracer.model)
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import (
    META_CLIENT_CAPS,
    META_PROTOCOL_VERSION,
    since,
)
from tracer.rules.mcp35_errors import ERROR, _code
from tracer.session import Session

_VALIDATION = re.compile(
    r"validat|invalid (?:argument|input|param)|required (?:argument|property)|"
    r"missing (?:argument|required)|schema",
    re.I,
)


def _known_tool(m: Analysed, s: Session):
    """(request params, tool) when the call names a tool of the last tools/list, else (params, None)."""
    req = m.request
    params = req.params if req is not None else None
    if params is None:
        return None, None
    track = getattr(s, "track", None)
    if track is None:
        return params, None
    return params, track.tool(params.get("name"))


@rule(
    "MCP360",
    "tool-input-error-as-protocol-error",
    Severity.WARNING,
    versions=since("2025-11-25"),
    kinds=ERROR,
    methods=("tools/call",),
    scope="pairing",
    spec="spec/2025-11-25/server/tools.mdx:L460-476 (SEP-1303); spec/2026-07-28/server/tools.mdx:L740-763",
)
def tool_input_error_as_protocol_error(m: Analysed, s: Session):
    """(heuristic) `tools/call` of a tool the last `tools/list` advertised, with well-formed
    params, is answered with a JSON-RPC error for what looks like an input validation failure
    (-32602, or a message about validation). Unknown tools and malformed requests stay protocol
    errors.

    Input validation errors "should be reported as tool execution errors" (`isError: true`), so
    the model can see them and retry. Example: `{"code": -32602, "message": "Invalid arguments:
    'city' is required"}` answering a call to a listed tool.
    """
    params, tool = _known_tool(m, s)
    if tool is None:
        return None
    args = params.get("arguments")
    if args is not None and type(args) is not dict:
        return None  # a malformed request: a protocol error is right
    if m.era is _ERA_MODERN:
        meta = params.get("_meta")
        if type(meta) is not dict or META_PROTOCOL_VERSION not in meta or META_CLIENT_CAPS not in meta:
            return None  # a modern request missing its _meta MUST get -32602 (MCP311)
    err = m.error
    msg = err.get("message") if err is not None else None
    code = _code(m)
    if code != -32602 and (type(msg) is not str or _VALIDATION.search(msg) is None):
        return None
    return [
        Hit(
            f"tools/call {params.get('name')!r} input error answered as JSON-RPC error {code}; "
            "report input validation failures as a result with isError: true",
            path="$.error",
            related_seq=m.partner_seq,
        )
    ]


@rule(
    "MCP361",
    "unknown-tool-answered-as-success",
    Severity.WARNING,
    kinds=(Kind.RESULT,),
    methods=("tools/call",),
    scope="pairing",
    spec="spec/2026-07-28/server/tools.mdx:L742-757; spec/2025-11-25/server/tools.mdx:L465, :L486-487 (inferred)",
)
def unknown_tool_answered_as_success(m: Analysed, s: Session):
    """`tools/call` names a tool absent from the last complete `tools/list`, and the server answers
    with a successful result instead of a protocol error (-32602 "Unknown tool"). A result with
    `isError: true` is not flagged: the call did fail, visibly.

    Unknown tools are protocol errors, not results. Example: `tools/list` lists only `echo`, then
    `tools/call` `{"name": "ehco"}` gets `{"content": [...], "isError": false}`.
    """
    res = m.result
    if res is None or res.get("isError") is True or res.get("resultType", "complete") != "complete":
        return None
    track = getattr(s, "track", None)
    if track is None or track.tools is None:
        return None  # no complete tools/list seen: nothing to compare with
    req = m.request
    params = req.params if req is not None else None
    name = params.get("name") if params is not None else None
    if type(name) is not str or track.tool(name) is not None:
        return None
    return [
        Hit(
            f"tools/call {name!r}: no such tool in the last tools/list, yet the call succeeded "
            "(expected a -32602 Unknown tool error)",
            path="$.result",
            related_seq=req.seq,
        )
    ]
