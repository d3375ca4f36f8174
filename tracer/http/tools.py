"""Request-metadata headers of modern Streamable HTTP (2026-07-28): what a request POST's headers
must say, given its body and the tool definitions the server listed.

Used by the rules (MCP740-MCP745, one problem each) and by the HTTP observer, which remembers the
first problem of each request so MCP746 can check the server rejected it.
"""

from __future__ import annotations

from typing import Any

from tracer.http.headers import decode_header_value, header, header_text, headers_with_prefix, needs_encoding
from tracer.model import Analysed, Kind
from tracer.protocol import META_PROTOCOL_VERSION

NAMED_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
_MISSING = object()


def x_mcp_headers(tool: dict) -> list[tuple[tuple[str, ...], str]]:
    """(property path, header name) for every `x-mcp-header` reachable from the schema root through
    `properties` keys only (annotations anywhere else make the tool invalid and are not used)."""
    out: list[tuple[tuple[str, ...], str]] = []
    schema = tool.get("inputSchema") if type(tool) is dict else None

    def walk(node: Any, path: tuple[str, ...]) -> None:
        props = node.get("properties") if type(node) is dict else None
        if type(props) is not dict:
            return
        for key, sub in props.items():
            if type(sub) is not dict:
                continue
            name = sub.get("x-mcp-header")
            if type(name) is str and name:
                out.append(((*path, key), name))
            walk(sub, (*path, key))

    walk(schema, ())
    return out


def _value_at(args: Any, path: tuple[str, ...]) -> Any:
    node = args
    for key in path:
        if type(node) is not dict or key not in node:
            return _MISSING
        node = node[key]
    return node


def _same(decoded: str, value: Any) -> bool:
    if type(value) is bool or type(value) is str:
        return decoded == header_text(value)
    if type(value) in (int, float):
        try:
            return float(decoded) == float(value)  # "integers compare numerically" (42.0 == 42)
        except ValueError:
            return False
    return decoded == header_text(value)


def param_header_problems(tool: dict, args: Any, req_headers: Any) -> list[str]:
    """What is wrong with the `Mcp-Param-*` headers of a call of TOOL with ARGS (MCP745)."""
    out = []
    for path, name in x_mcp_headers(tool):
        value = _value_at(args, path)
        sent = header(req_headers, f"mcp-param-{name}")
        shown = ".".join(path)
        if value is _MISSING or value is None:
            if sent is not None:
                why = "absent" if value is _MISSING else "null"
                out.append(f"Mcp-Param-{name} is sent although argument {shown} is {why}")
            continue
        if sent is None:
            out.append(f"argument {shown} = {value!r} is not mirrored in an Mcp-Param-{name} header")
            continue
        decoded, problem = decode_header_value(sent)
        if problem is None and not _same(decoded, value):
            out.append(f"Mcp-Param-{name} {decoded!r} differs from argument {shown} = {value!r}")
    return out


def header_problem(m: Analysed, req_headers: Any, tool: dict | None) -> str | None:
    """The first reason a modern request's headers fail the server's validation, or None."""
    if m.kind is not Kind.REQUEST:
        return None
    got = header(req_headers, "mcp-protocol-version")
    want = (m.meta or {}).get(META_PROTOCOL_VERSION)
    if got is None:
        return "no MCP-Protocol-Version header"
    if want is not None and got != want:
        return f"MCP-Protocol-Version {got!r} but _meta says {want!r}"
    method = header(req_headers, "mcp-method")
    if method is None:
        return "no Mcp-Method header"
    if method != m.method:
        return f"Mcp-Method {method!r} but the body says {m.method!r}"
    named = [("Mcp-Name", v) for v in [header(req_headers, "mcp-name")] if v is not None]
    for name, value in named + headers_with_prefix(req_headers, "mcp-param-"):
        decoded, problem = decode_header_value(value)
        if problem is not None:
            return f"{name}: {problem}"
        if decoded == value and needs_encoding(value):
            return f"{name} needs Base64 encoding"
    if m.method in NAMED_METHODS:
        params = m.params or {}
        want_name = params.get("uri") if m.method == "resources/read" else params.get("name")
        if not named:
            return "no Mcp-Name header"
        decoded, _ = decode_header_value(named[0][1])
        if decoded != want_name:
            return f"Mcp-Name {decoded!r} but the body says {want_name!r}"
    if m.method == "tools/call" and tool is not None:
        problems = param_header_problems(tool, (m.params or {}).get("arguments"), req_headers)
        if problems:
            return problems[0]
    return None
