"""MCP601-MCP609: tools. `tools/list` payloads and tool schemas (`tools/call` is in
mcp61_tool_calls.py).

The last `tools/list` of a session (all its pages) is kept by the analyser (tracer.tracking);
JSON Schemas are compiled once per distinct schema (a bounded cache keyed by the schema's text).
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from functools import lru_cache

import jsonschema_rs

from tracer.catalog.registry import rule
from tracer.era import possible_versions
from tracer.jsonpath import member
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import ALL, L3, L4, MODERN, between, since
from tracer.tracking import MISSING, canonical

RESULT = (Kind.RESULT,)

REQUEST = (Kind.REQUEST,)

LIST = ("tools/list",)

CALL = ("tools/call",)

TOOLS = "spec/2026-07-28/server/tools.mdx"

LEGACY_DIALECT = "http://json-schema.org/draft-07/schema#"

KNOWN_DIALECTS = frozenset(
    f"{scheme}://json-schema.org/{path}{hash_}"
    for scheme in ("http", "https")
    for path in (
        "draft-04/schema",
        "draft-06/schema",
        "draft-07/schema",
        "draft/2019-09/schema",
        "draft/2020-12/schema",
    )
    for hash_ in ("", "#")
)


def complete(m: Analysed) -> dict | None:
    """The result, unless it is an interim (`input_required`) or extension (`task`) result."""
    r = m.result
    if r is None:
        return None
    rt = r.get("resultType", "complete")
    return r if rt == "complete" else None


# (message, answer) of the last call: one tuple, rebound whole, so analysers in two threads of one
# process can never pair one message with the other's answer
_last_unusual: tuple = (None, True)


def unusual_tool_result(m: Analysed, s) -> bool:
    """The gate of MCP610-MCP613, MCP615 and MCP618 (tracer.rules.mcp61_tool_calls): False promises
    that none of them finds anything. So it is for the common `tools/call` result: an interim one,
    or a content list of text blocks with their text and no annotations, `isError` a boolean or
    absent, no `structuredContent`. Remembered for the last message (two runs of rules ask)."""
    global _last_unusual
    last = _last_unusual
    if last[0] is m:
        return last[1]
    out = _unusual_tool_result(m)
    _last_unusual = (m, out)
    return out


def _unusual_tool_result(m: Analysed) -> bool:
    if m.answers_method != "tools/call":  # (prompts/get, resources/...: those rules always run)
        return True
    r = m.result  # (complete, inlined); none: no content blocks, no call result to judge
    if r is None or r.get("resultType", "complete") != "complete":
        return False
    content = r.get("content")
    if type(content) is not list or "structuredContent" in r:
        return True
    err = r.get("isError", MISSING)
    if err is not MISSING and type(err) is not bool:
        return True
    for block in content:
        if (
            type(block) is not dict
            or block.get("type") != "text"
            or type(block.get("text")) is not str
            or "annotations" in block
        ):
            return True
    return False


def tools_of(m: Analysed) -> list | None:
    r = complete(m)
    tools = r.get("tools") if r is not None else None
    return tools if type(tools) is list else None


@lru_cache(maxsize=512)
def _meta_problem(text: str) -> str | None:
    try:
        jsonschema_rs.meta.validate(json.loads(text))
    except jsonschema_rs.ValidationError as exc:
        return str(exc).split("\n", 1)[0]
    except Exception:  # an unresolvable meta-schema: nothing we can judge
        return None
    return None


def schema_problem(schema: dict, legacy: bool) -> str | None:
    """Why `schema` is not a valid JSON Schema for its dialect (2020-12 by default; draft-07 for
    versions before 2025-11-25, which name no dialect), or None. Unknown dialects are not judged."""
    dialect = schema.get("$schema")
    if dialect is not None and dialect not in KNOWN_DIALECTS:
        return None
    if dialect is None and legacy:
        schema = {**schema, "$schema": LEGACY_DIALECT}
    return _meta_problem(canonical(schema))


@lru_cache(maxsize=512)
def _compiled(text: str):
    try:
        return jsonschema_rs.validator_for(json.loads(text), offline=True)
    except Exception:  # invalid or unresolvable: MCP604 reports the schema itself
        return None


_TEXTS: OrderedDict[int, tuple[dict, str]] = OrderedDict()  # id(schema) -> (schema kept alive, text)


def schema_text(schema: dict) -> str:
    """The canonical text of a schema object, memoised per object: a tool's schema is serialised
    once, not on every call of the tool."""
    hit = _TEXTS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    text = canonical(schema)
    _TEXTS[id(schema)] = (schema, text)
    if len(_TEXTS) > 1024:
        _TEXTS.popitem(last=False)
    return text


_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def _page_names(m: Analysed) -> list[str]:
    return [t["name"] for t in tools_of(m) or () if type(t) is dict and type(t.get("name")) is str]


def _continued(m: Analysed, s):
    req = m.request
    if req is None or req.params is None:
        return None
    return s.track.chain_for("tools/list", req.params.get("cursor"))


_TCHAR = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")

_HEADER_TYPES = ("string", "integer", "boolean")

_MAX_SCHEMA_DEPTH = 64


def _header_problems(schema, path: str, direct: bool, seen: dict, out: list, depth: int = 0) -> None:
    """Walk a JSON Schema; `direct`: reached from the root through `properties` only. A schema nested
    deeper than `_MAX_SCHEMA_DEPTH` is not walked further (a peer may send 1,000 levels)."""
    if depth > _MAX_SCHEMA_DEPTH:
        return
    depth += 1
    if type(schema) is dict:
        if "x-mcp-header" in schema and path != "$":
            value = schema["x-mcp-header"]
            where = f"{path}.x-mcp-header"
            if not direct:
                out.append((where, "is not reachable from the root through properties only"))
            elif type(value) is not str or not value:
                out.append((where, "must be a non-empty string"))
            elif not _TCHAR.fullmatch(value):
                out.append((where, f"{value!r} is not an HTTP token (letters, digits, !#$%&'*+-.^_`|~)"))
            else:
                low = value.lower()
                if low in seen:
                    out.append((where, f"{value!r} repeats {seen[low]!r} (names compare case-insensitively)"))
                seen[low] = value
                t = schema.get("type")
                if t is not None and t not in _HEADER_TYPES:
                    out.append(
                        (where, f"is on a {t!r} property; only string, integer and boolean may be mirrored")
                    )
        for key, sub in schema.items():
            if key == "properties" and type(sub) is dict:
                for name, prop in sub.items():
                    _header_problems(prop, member(f"{path}.properties", name), direct, seen, out, depth)
            elif key != "x-mcp-header" and type(sub) in (dict, list):
                _header_problems(sub, member(path, key), False, seen, out, depth)
    elif type(schema) is list:
        for i, sub in enumerate(schema):
            _header_problems(sub, f"{path}[{i}]", False, seen, out, depth)


@rule(
    "MCP601",
    "tools-list-without-tools",
    Severity.ERROR,
    kinds=RESULT,
    methods=LIST,
    spec="schema ListToolsResult in every version",
)
def tools_list_without_tools(m: Analysed, s):
    """A `tools/list` result lacks a `tools` array.

    Example: `{"jsonrpc": "2.0", "id": 1, "result": {"items": []}}` answering `tools/list`.
    """
    r = complete(m)
    if r is not None and type(r.get("tools")) is not list:
        return Hit("a tools/list result needs a tools array", path="$.result.tools")
    return None


@rule(
    "MCP602",
    "tool-without-name-or-schema",
    Severity.ERROR,
    kinds=RESULT,
    methods=LIST,
    spec="schema Tool in every version, e.g. schema/2026-07-28/schema.ts:L1973-2010",
)
def tool_without_name_or_schema(m: Analysed, s):
    """A tool in `tools/list` lacks `name` (a string) or `inputSchema`.

    Example: `"tools": [{"name": "echo", "description": "..."}]` (no inputSchema).
    """
    out = []
    for i, tool in enumerate(tools_of(m) or ()):
        if type(tool) is not dict:
            out.append(Hit(f"tools[{i}] is not an object", path=f"$.result.tools[{i}]"))
            continue
        if type(tool.get("name")) is not str:
            out.append(Hit(f"tools[{i}] has no name string", path=f"$.result.tools[{i}].name"))
        if "inputSchema" not in tool:
            out.append(Hit(f"tool {tool.get('name')!r} has no inputSchema", path=f"$.result.tools[{i}]"))
    return out


@rule(
    "MCP603",
    "input-schema-not-object",
    Severity.ERROR,
    kinds=RESULT,
    methods=LIST,
    spec=f"{TOOLS}:L290-296; spec/2025-11-25/server/tools.mdx:L198-204",
)
def input_schema_not_object(m: Analysed, s):
    """A tool's `inputSchema` is not an object (e.g. `null`) or its root `type` is not `"object"`:
    tool arguments are always a JSON object.

    Example: `"inputSchema": {"type": "string"}`.
    """
    out = []
    for i, tool in enumerate(tools_of(m) or ()):
        schema = tool.get("inputSchema", MISSING) if type(tool) is dict else MISSING
        if schema is MISSING:
            continue
        if type(schema) is not dict or schema.get("type") != "object":
            got = schema.get("type") if type(schema) is dict else schema
            out.append(
                Hit(
                    f"tool {tool.get('name')!r}: inputSchema must be an object schema with type "
                    f'"object", not {got!r}',
                    path=f"$.result.tools[{i}].inputSchema",
                )
            )
    return out


@rule(
    "MCP604",
    "tool-schema-invalid",
    Severity.ERROR,
    kinds=RESULT,
    methods=LIST,
    versions=ALL,
    spec="spec/2026-07-28/basic/index.mdx:L251-258, :L291-297; spec/2025-11-25/basic/index.mdx:L140-186",
)
def tool_schema_invalid(m: Analysed, s):
    """A tool's `inputSchema` or `outputSchema` is not a valid JSON Schema for its `$schema`
    dialect (2020-12 when absent). Before 2025-11-25 no dialect is named: checked as draft-07, and
    only a warning (inferred).

    Example: `"inputSchema": {"type": "object", "properties": {"n": {"type": "integr"}}}`.
    """
    tools = tools_of(m)
    if not tools:
        return None
    versions = possible_versions(m)
    legacy = not versions & since(L4)
    severity = Severity.WARNING if legacy else None
    out = []
    for i, tool in enumerate(tools):
        if type(tool) is not dict:
            continue
        for key in ("inputSchema", "outputSchema"):
            schema = tool.get(key)
            if type(schema) is not dict:
                continue
            why = schema_problem(schema, legacy)
            if why:
                out.append(
                    Hit(
                        f"tool {tool.get('name')!r}: {key} is not a valid JSON Schema: {why}",
                        path=f"$.result.tools[{i}].{key}",
                        severity=severity,
                    )
                )
    return out


@rule(
    "MCP605",
    "output-schema-not-object",
    Severity.ERROR,
    kinds=RESULT,
    methods=LIST,
    versions=between(L3, L4),
    spec='schema/2025-06-18 and 2025-11-25 Tool.outputSchema.type "object"',
)
def output_schema_not_object(m: Analysed, s):
    """(2025-06-18, 2025-11-25) A tool's `outputSchema` root `type` is not `"object"`. (2026-07-28
    allows any JSON Schema.)

    Example: `"outputSchema": {"type": "array", "items": {"type": "string"}}`.
    """
    out = []
    for i, tool in enumerate(tools_of(m) or ()):
        schema = tool.get("outputSchema", MISSING) if type(tool) is dict else MISSING
        if schema is not MISSING and (type(schema) is not dict or schema.get("type") != "object"):
            got = schema.get("type") if type(schema) is dict else schema
            out.append(
                Hit(
                    f'tool {tool.get("name")!r}: outputSchema must have type "object", not {got!r}',
                    path=f"$.result.tools[{i}].outputSchema",
                )
            )
    return out


@rule(
    "MCP606",
    "tool-name-format",
    Severity.WARNING,
    kinds=RESULT,
    methods=LIST,
    versions=since(L4),
    spec=f"spec/2025-11-25/server/tools.mdx:L219-224; {TOOLS}:L311-316",
)
def tool_name_format(m: Analysed, s):
    """A tool name is outside 1-128 characters or uses characters other than `A-Z a-z 0-9 _ - .`.

    Example: `"name": "get weather"` (a space).
    """
    out = []
    for i, tool in enumerate(tools_of(m) or ()):
        name = tool.get("name") if type(tool) is dict else None
        if type(name) is str and not _TOOL_NAME.fullmatch(name):
            out.append(
                Hit(
                    f"tool name {name!r} should be 1-128 characters of A-Z a-z 0-9 _ - .",
                    path=f"$.result.tools[{i}].name",
                )
            )
    return out


@rule(
    "MCP607",
    "tool-name-duplicate",
    Severity.WARNING,
    kinds=RESULT,
    methods=LIST,
    versions=since(L4),
    scope="pairing",
    spec=f"spec/2025-11-25/server/tools.mdx:L224; {TOOLS}:L316",
)
def tool_name_duplicate(m: Analysed, s):
    """Two tools share a name within one server's `tools/list`, across all its pages.

    Example: page 1 lists `search`, the page fetched with `nextCursor` lists `search` again.
    """
    chain = _continued(m, s)
    seen = set(chain.names) if chain is not None else set()
    out = []
    for name in _page_names(m):
        if name in seen:
            out.append(Hit(f"tool name {name!r} appears twice in one tools/list", path="$.result.tools"))
        seen.add(name)
    return out


@rule(
    "MCP608",
    "tools-order-unstable",
    Severity.WARNING,
    kinds=RESULT,
    methods=LIST,
    versions=MODERN,
    scope="pairing",
    spec=f"{TOOLS}:L71-74; spec/2026-07-28/changelog.mdx:L34",
)
def tools_order_unstable(m: Analysed, s):
    """Two complete `tools/list` results with the same set of tools list them in a different
    order. Servers keep the order stable so clients (and prompt caches) see the same list.

    Example: first `[a, b]`, later `[b, a]`.
    """
    r = complete(m)
    if r is None or type(r.get("nextCursor")) is str:
        return None  # not the last page
    chain = _continued(m, s)
    names = (list(chain.names) if chain is not None else []) + _page_names(m)
    prev = s.track.tools_order
    if prev is None or tuple(names) == prev or sorted(names) != sorted(prev):
        return None
    return Hit(
        "the same tools are listed in another order than in the previous tools/list", path="$.result.tools"
    )


@rule(
    "MCP609",
    "x-mcp-header-invalid",
    Severity.ERROR,
    kinds=RESULT,
    methods=LIST,
    versions=MODERN,
    spec="spec/2026-07-28/basic/transports/streamable-http.mdx:L376-409; spec/2026-07-28/server/tools.mdx:L346-368",
)
def x_mcp_header_invalid(m: Analysed, s):
    """A tool's `x-mcp-header` is invalid: empty, not an HTTP token, duplicated (case-insensitively)
    within the `inputSchema`, on a non-primitive or `number` property, or not reachable from the root
    through `properties` alone. Streamable HTTP clients MUST drop such tools.

    Example: `"properties": {"region": {"type": "object", "x-mcp-header": "Region"}}`.
    """
    out = []
    for i, tool in enumerate(tools_of(m) or ()):
        schema = tool.get("inputSchema") if type(tool) is dict else None
        if type(schema) is not dict or "x-mcp-header" not in canonical(schema):
            continue
        problems: list = []
        _header_problems(schema, "$", True, {}, problems)
        for where, why in problems:
            out.append(
                Hit(
                    f"tool {tool.get('name')!r}: x-mcp-header {why}",
                    path=f"$.result.tools[{i}].inputSchema" + where[1:],
                )
            )
    return out
