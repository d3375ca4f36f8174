"""MCP610-MCP617 (tools): `tools/call` params and results, checked against the tool the last
`tools/list` advertised (kept by the analyser in tracer.tracking)."""

from __future__ import annotations

import json

from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import L3, L4, between, since
from tracer.rules.features import TOOLS, complete, validation_error
from tracer.rules.registry import rule
from tracer.tracking import MISSING

RESULT = (Kind.RESULT,)
REQUEST = (Kind.REQUEST,)
CALL = ("tools/call",)


def call_result(m: Analysed) -> dict | None:
    """A `tools/call` result carrying the tool's output (not a 2025-11-25 CreateTaskResult)."""
    r = complete(m)
    if r is None:
        return None
    req = m.request
    if "task" in r and req is not None and req.params is not None and "task" in req.params:
        return None
    return r


@rule(
    "MCP610",
    "call-result-malformed",
    Severity.ERROR,
    kinds=RESULT,
    methods=CALL,
    spec="schema CallToolResult, e.g. schema/2026-07-28/schema.ts:L1809-1838",
)
def call_result_malformed(m: Analysed, s):
    """A `tools/call` result (`resultType` `"complete"` in 2026-07-28) lacks a `content` array, or
    `isError` is present but not a boolean.

    Example: `{"result": {"output": "42"}}` answering `tools/call`.
    """
    r = call_result(m)
    if r is None:
        return None
    out = []
    if type(r.get("content")) is not list:
        out.append(Hit("a tools/call result needs a content array", path="$.result.content"))
    err = r.get("isError", MISSING)
    if err is not MISSING and type(err) is not bool:
        out.append(Hit(f"isError must be a boolean, not {err!r}", path="$.result.isError"))
    return out


@rule(
    "MCP613",
    "structured-content-not-object",
    Severity.ERROR,
    kinds=RESULT,
    methods=CALL,
    versions=between(L3, L4),
    spec="schema/2025-11-25/schema.ts:L1113 structuredContent object",
)
def structured_content_not_object(m: Analysed, s):
    """(2025-06-18, 2025-11-25) `structuredContent` is present but is not a JSON object. (2026-07-28
    allows any JSON value.)

    Example: `"structuredContent": [1, 2, 3]`.
    """
    r = call_result(m)
    sc = r.get("structuredContent", MISSING) if r is not None else MISSING
    if sc is not MISSING and type(sc) is not dict:
        return Hit(
            f"structuredContent must be an object in this version, not {type(sc).__name__}",
            path="$.result.structuredContent",
        )
    return None


def _called_tool(m: Analysed, s) -> dict | None:
    req = m.request
    name = req.params.get("name") if req is not None and req.params is not None else None
    return s.track.tool(name) if type(name) is str else None


@rule(
    "MCP614",
    "structured-content-mismatch",
    Severity.ERROR,
    kinds=RESULT,
    methods=CALL,
    versions=since(L3),
    scope="pairing",
    spec=f"spec/2025-11-25/server/tools.mdx:L340; {TOOLS}:L511-515",
)
def structured_content_mismatch(m: Analysed, s):
    """The tool advertised an `outputSchema` in the last `tools/list`, and a non-error result lacks
    `structuredContent` or carries one that does not validate against that schema.

    Example: `outputSchema` requires `celsius` (number); the result has `{"celsius": "warm"}`.
    """
    r = call_result(m)
    if r is None or r.get("isError") is True:
        return None
    tool = _called_tool(m, s)
    schema = tool.get("outputSchema") if tool is not None else None
    if type(schema) is not dict:
        return None
    if "structuredContent" not in r:
        return Hit(
            f"tool {tool.get('name')!r} declares an outputSchema, so its result needs structuredContent",
            path="$.result",
        )
    why = validation_error(schema, r["structuredContent"])
    if why:
        return Hit(
            f"structuredContent does not match tool {tool.get('name')!r}'s outputSchema: {why}",
            path="$.result.structuredContent",
        )
    return None


def _text_holds(text: str, sc) -> bool:
    try:
        if json.loads(text) == sc:
            return True
    except ValueError:
        pass
    # A non-object output wrapped as {"result": value} (tools whose outputSchema must be an object):
    # a text block holding the value itself carries the same data.
    if type(sc) is dict and len(sc) == 1 and "result" in sc:
        inner = sc["result"]
        if text == inner:
            return True
        try:
            return json.loads(text) == inner
        except ValueError:
            return False
    return False


@rule(
    "MCP615",
    "structured-content-without-text",
    Severity.WARNING,
    kinds=RESULT,
    methods=CALL,
    versions=since(L3),
    spec=f"spec/2025-11-25/server/tools.mdx:L326; {TOOLS}:L500",
)
def structured_content_without_text(m: Analysed, s):
    """`structuredContent` is returned without a `TextContent` block holding the same data as JSON,
    for clients that read only `content` (backwards compatibility, SHOULD). A plain value wrapped as
    `{"result": value}` may be given as that value's text.

    Example: `"structuredContent": {"celsius": 21}` with `"content": [{"type": "text", "text": "Sunny"}]`.
    """
    r = call_result(m)
    if r is None or "structuredContent" not in r:
        return None
    sc = r["structuredContent"]
    content = r.get("content")
    for block in content if type(content) is list else ():
        if (
            type(block) is dict
            and block.get("type") == "text"
            and type(block.get("text")) is str
            and _text_holds(block["text"], sc)
        ):
            return None
    return Hit(
        "structuredContent should also be given as serialized JSON in a text content block",
        path="$.result.content",
    )


@rule(
    "MCP616",
    "call-arguments-invalid",
    Severity.WARNING,
    kinds=REQUEST,
    methods=CALL,
    scope="pairing",
    spec=f"{TOOLS}:L290-293, :L760-765",
)
def call_arguments_invalid(m: Analysed, s):
    """(inferred) `tools/call` `arguments` do not validate against the tool's `inputSchema` from the
    last `tools/list`: a client defect (the server should answer with `isError: true`).

    Example: `inputSchema` requires `city`; the call sends `{"arguments": {}}`.
    """
    params = m.params
    name = params.get("name") if params is not None else None
    tool = s.track.tool(name) if type(name) is str else None
    schema = tool.get("inputSchema") if tool is not None else None
    if type(schema) is not dict:
        return None
    args = params.get("arguments", {})
    if type(args) is not dict:
        return None  # MCP617
    why = validation_error(schema, args)
    if why:
        return Hit(f"arguments do not match tool {name!r}'s inputSchema: {why}", path="$.params.arguments")
    return None


@rule(
    "MCP617",
    "call-params-malformed",
    Severity.ERROR,
    kinds=REQUEST,
    methods=CALL,
    spec="schema CallToolRequestParams, e.g. schema/2026-07-28/schema.ts:L1863-1885",
)
def call_params_malformed(m: Analysed, s):
    """`tools/call` params lack `name` (a string), or `arguments` is present but not an object.

    Example: `{"method": "tools/call", "params": {"arguments": ["a"]}}`.
    """
    params = m.params
    if params is None:
        return Hit("tools/call needs params with the tool name", path="$.params")
    out = []
    if type(params.get("name")) is not str:
        out.append(Hit("params.name (the tool name) must be a string", path="$.params.name"))
    args = params.get("arguments", MISSING)
    if args is not MISSING and type(args) is not dict:
        out.append(Hit(f"arguments must be an object, not {type(args).__name__}", path="$.params.arguments"))
    return out
