"""MCP610-MCP619: `tools/call` params and results, checked against the tool the last `tools/list`
advertised (kept by the analyser in tracer.tracking), and the content blocks results carry (their
types, base64, annotations).
"""

from __future__ import annotations

import binascii
import functools
import json
import re

import jsonschema_rs

from tracer.catalog.registry import rule
from tracer.era import possible_versions
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import L1, L2, L3, L4, M, between, since
from tracer.rules.mcp60_tools_list import (
    KNOWN_DIALECTS,
    TOOLS,
    _compiled,
    complete,
    schema_text,
    unusual_tool_result,
)
from tracer.tracking import MISSING


def validation_error(schema: dict, instance) -> str | None:
    """The first reason `instance` fails `schema`, or None (also when the schema is unusable)."""
    dialect = schema.get("$schema")
    if dialect is not None and dialect not in KNOWN_DIALECTS:
        return None
    v = _compiled(schema_text(schema))
    if v is None:
        return None
    try:
        if v.is_valid(instance):  # the common case, without building an error
            return None
        v.validate(instance)
    except jsonschema_rs.ValidationError as exc:
        where = "/".join(str(p) for p in exc.instance_path)
        return f"{exc.message}" + (f" (at {where})" if where else "")
    except Exception:
        return None
    return None


def _cursor(m_or_req) -> object:
    params = m_or_req.params
    return params.get("cursor", MISSING) if params is not None else MISSING


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


def _called_tool(m: Analysed, s) -> dict | None:
    req = m.request
    name = req.params.get("name") if req is not None and req.params is not None else None
    return s.track.tool(name) if type(name) is str else None


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


# content block types each version defines for tool results and prompt messages
_BLOCKS_L1 = frozenset({"text", "image", "resource"})

BLOCK_TYPES = {
    L1: _BLOCKS_L1,
    L2: _BLOCKS_L1 | {"audio"},
    L3: _BLOCKS_L1 | {"audio", "resource_link"},
    L4: _BLOCKS_L1 | {"audio", "resource_link"},
    M: _BLOCKS_L1 | {"audio", "resource_link"},
}

_ALLOWED: dict[frozenset[str], frozenset[str]] = {}


def allowed_blocks(m: Analysed) -> frozenset[str]:
    """Block types of every version the message may speak (lenient when the version is unsure)."""
    versions = possible_versions(m)
    hit = _ALLOWED.get(versions)
    if hit is None:
        hit = _ALLOWED[versions] = frozenset().union(*(BLOCK_TYPES[v] for v in versions))
    return hit


def content_blocks(m: Analysed):
    """(index, block) of the content blocks of a tool result or a prompt's messages (for a prompt,
    the index of its message); `block_path(m, index)` is the block's JSON path. Three rules walk
    these blocks on every tool result, so this builds no generator and no path string: paths are
    made only for a finding."""
    r = complete(m)
    if r is None:
        return ()
    method = m.answers_method
    if method == "tools/call":
        content = r.get("content")
        return enumerate(content) if type(content) is list else ()
    if method == "prompts/get":
        msgs = r.get("messages")
        return [
            (i, msg["content"])
            for i, msg in enumerate(msgs if type(msgs) is list else ())
            if type(msg) is dict and "content" in msg
        ]
    return ()


def block_path(m: Analysed, i: int) -> str:
    """The JSON path of content block `i` of `content_blocks(m)`."""
    if m.answers_method == "tools/call":
        return f"$.result.content[{i}]"
    return f"$.result.messages[{i}].content"


def block_problem(block, allowed: frozenset[str]) -> str | None:
    if type(block) is not dict:
        return "is not an object"
    t = block.get("type")
    if type(t) is not str or t not in allowed:  # (a list or an object is no type name either)
        return f"has type {t!r}, which this protocol version does not define ({', '.join(sorted(allowed))})"
    if t == "text":
        return None if type(block.get("text")) is str else "(text) lacks a text string"
    if t in ("image", "audio"):
        lack = [k for k in ("data", "mimeType") if type(block.get(k)) is not str]
        return f"({t}) lacks {' and '.join(lack)}" if lack else None
    if t == "resource_link":
        lack = [k for k in ("uri", "name") if type(block.get(k)) is not str]
        return f"(resource_link) lacks {' and '.join(lack)}" if lack else None
    if t == "resource":
        res = block.get("resource")
        if type(res) is not dict or type(res.get("uri")) is not str:
            return "(resource) lacks resource.uri"
        if "text" not in res and "blob" not in res:
            return "(resource) has neither resource.text nor resource.blob"
    return None


def b64_problem(value) -> str | None:
    if type(value) is not str:
        return None  # a missing or wrongly typed field is MCP611's
    try:
        binascii.a2b_base64(value, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        return str(exc)
    return None


def _base64_fields(m: Analysed) -> list:
    """(value, JSON path) of the base64 fields of the message (a list: most results have none)."""
    out = []
    for i, block in content_blocks(m):
        if type(block) is not dict:
            continue
        t = block.get("type")
        if t == "text":
            continue
        if t in ("image", "audio"):
            out.append((block.get("data"), f"{block_path(m, i)}.data"))
        elif t == "resource" and type(block.get("resource")) is dict:
            out.append((block["resource"].get("blob"), f"{block_path(m, i)}.resource.blob"))
    if m.answers_method == "resources/read":
        r = complete(m)
        contents = r.get("contents") if r is not None else None
        for i, item in enumerate(contents if type(contents) is list else ()):
            if type(item) is dict and "blob" in item:
                out.append((item["blob"], f"$.result.contents[{i}].blob"))
    return out


def annotation_problem(ann) -> str | None:
    if type(ann) is not dict:
        return "annotations must be an object"
    p = ann.get("priority", MISSING)
    if p is not MISSING and (type(p) not in (int, float) or not 0 <= p <= 1):
        return f"priority {p!r} is outside 0..1"
    aud = ann.get("audience", MISSING)
    if aud is not MISSING and (type(aud) is not list or any(a not in ("user", "assistant") for a in aud)):
        return f'audience {aud!r} may only contain "user" and "assistant"'
    return None


_ANNOTATED_LISTS = {"resources/list": "resources", "resources/templates/list": "resourceTemplates"}


@functools.lru_cache(maxsize=1024)
def _template_re(template: str) -> re.Pattern:
    """An RFC 6570 URI template as a pattern any expansion of it matches: the literal parts as
    written, each `{...}` expression as anything (generous on purpose: a URI that may be an
    expansion counts as a resource)."""
    parts = re.split(r"\{[^{}]*\}", template)
    return re.compile(".*".join(re.escape(p) for p in parts), re.S)


@rule(
    "MCP610",
    "call-result-malformed",
    Severity.ERROR,
    kinds=RESULT,
    methods=CALL,
    gate=unusual_tool_result,
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
    "MCP611",
    "content-block-invalid",
    Severity.ERROR,
    kinds=RESULT,
    methods=("tools/call", "prompts/get"),
    gate=unusual_tool_result,
    spec="schema ContentBlock, e.g. schema/2025-06-18/schema.ts:L1133, schema/2026-07-28/schema.ts:L2305-2406",
)
def content_block_invalid(m: Analysed, s):
    """A content block of a tool result or prompt message has a `type` the version does not define
    (2024-11-05: text, image, resource; 2025-03-26 adds audio; 2025-06-18 adds resource_link) or lacks
    required fields (`text`; `data` + `mimeType`; `uri` + `name`; `resource` with `uri` and `text` or
    `blob`).

    Example: `"content": [{"type": "markdown", "text": "# hi"}]`.
    """
    out = None
    allowed = None
    for i, block in content_blocks(m):
        # the usual block, a text block with its text, is fine in every version: no call for it
        if type(block) is dict and block.get("type") == "text" and type(block.get("text")) is str:
            continue
        if allowed is None:
            allowed = allowed_blocks(m)
        why = block_problem(block, allowed)
        if why:
            out = out or []
            out.append(Hit(f"content block {why}", path=block_path(m, i)))
    return out


@rule(
    "MCP612",
    "base64-invalid",
    Severity.ERROR,
    kinds=RESULT,
    methods=("tools/call", "prompts/get", "resources/read"),
    gate=unusual_tool_result,
    spec="spec/2026-07-28/server/prompts.mdx:L256, :L271; spec/2026-07-28/server/resources.mdx:L432",
)
def base64_invalid(m: Analysed, s):
    """Image or audio `data`, or a resource `blob`, is not valid base64.

    Example: `{"type": "image", "data": "not base64!", "mimeType": "image/png"}`.
    """
    out = None
    for value, path in _base64_fields(m):
        why = b64_problem(value)
        if why:
            out = out or []
            out.append(Hit(f"not valid base64: {why}", path=path))
    return out


@rule(
    "MCP613",
    "structured-content-not-object",
    Severity.ERROR,
    kinds=RESULT,
    methods=CALL,
    versions=between(L3, L4),
    gate=unusual_tool_result,
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


@rule(
    "MCP615",
    "structured-content-without-text",
    Severity.WARNING,
    kinds=RESULT,
    methods=CALL,
    versions=since(L3),
    gate=unusual_tool_result,
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


@rule(
    "MCP618",
    "annotations-out-of-range",
    Severity.ERROR,
    kinds=RESULT,
    methods=("tools/call", "prompts/get", "resources/list", "resources/templates/list"),
    gate=unusual_tool_result,
    spec="schema Annotations, schema/2026-07-28/schema.ts:L2270-2300",
)
def annotations_out_of_range(m: Analysed, s):
    """Annotations are out of range: `priority` outside [0, 1], or `audience` entries other than
    `"user"` / `"assistant"`.

    Example: `"annotations": {"priority": 5, "audience": ["admin"]}`.
    """
    out = None
    for i, block in content_blocks(m):
        if type(block) is dict and "annotations" in block:
            why = annotation_problem(block["annotations"])
            if why:
                out = out or []
                out.append(Hit(why, path=f"{block_path(m, i)}.annotations"))
    key = _ANNOTATED_LISTS.get(m.answers_method)
    if key is not None:
        r = complete(m)
        items = r.get(key) if r is not None else None
        for i, item in enumerate(items if type(items) is list else ()):
            if type(item) is dict and "annotations" in item:
                why = annotation_problem(item["annotations"])
                if why:
                    out = out or []
                    out.append(Hit(why, path=f"$.result.{key}[{i}].annotations"))
    return out
