"""MCP740-MCP749: modern Streamable HTTP headers (version, method, name and parameter headers) and the statuses a server answers bad ones with. HTTP rules (`fn(rec, m, session)`); the facts come from `tracer.http.state`."""

from __future__ import annotations

from tracer.catalog.registry import http_rule
from tracer.http.headers import (
    decode_header_value,
    header,
    headers_with_prefix,
    needs_encoding,
)
from tracer.http.state import current, endpoint_tool
from tracer.http.tools import NAMED_METHODS, param_header_problems
from tracer.jsonpath import member
from tracer.model import DIR_S2C as _DIR_S2C  # (enum members as globals: tracer.model)
from tracer.model import KIND_ERROR as _KIND_ERROR
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import Analysed, Hit, Record, Severity
from tracer.protocol import META_PROTOCOL_VERSION, MODERN
from tracer.rules.mcp70_http import SH_M, _post_message, _req
from tracer.rules.mcp75_modern_http import HTTP


def _flow(rec, s):
    cur = current(rec, s)
    return cur.flow if cur is not None else None


def _modern_request(rec: Record, m: Analysed | None) -> bool:
    return _post_message(rec, m) and m.kind is _KIND_REQUEST and "req_headers" in rec.http


def _name_source(m: Analysed) -> tuple[str, object] | None:
    params = m.params or {}
    if m.method == "resources/read":
        return "uri", params.get("uri")
    return "name", params.get("name")


_MUST_BE_400 = {
    -32020: "HeaderMismatch",
    -32021: "MissingRequiredClientCapability",
    -32022: "UnsupportedProtocolVersion",
}


@http_rule(
    "MCP740",
    "modern-post-missing-version-header",
    Severity.ERROR,
    versions=MODERN,
    scope="http",
    spec=f"{SH_M}:L252-253, :L277-281",
)
def modern_post_missing_version_header(rec: Record, m: Analysed | None, s):
    """A modern request POST lacks `MCP-Protocol-Version`. (Notification POSTs are not judged:
    their header requirements are not defined by 2026-07-28.)

    "Every POST request to the MCP endpoint MUST include an MCP-Protocol-Version header." Example:
    a `tools/list` POST whose body has `_meta` protocolVersion but no header.
    """
    if _modern_request(rec, m) and _req(rec, s).get("mcp-protocol-version") is None:
        return Hit(f"the {m.method} POST has no MCP-Protocol-Version header")
    return None


@http_rule(
    "MCP741",
    "version-header-mismatch",
    Severity.ERROR,
    versions=MODERN,
    scope="http",
    spec=f"{SH_M}:L257-261; schema/2026-07-28/schema.ts:L70-75",
)
def version_header_mismatch(rec: Record, m: Analysed | None, s):
    """The `MCP-Protocol-Version` header differs from the body's
    `_meta["io.modelcontextprotocol/protocolVersion"]`.

    "The header value MUST match the io.modelcontextprotocol/protocolVersion field carried in the
    request body's _meta." Example: header `2025-11-25`, body `_meta` `2026-07-28`.
    """
    if not _modern_request(rec, m):
        return None
    got = _req(rec, s).get("mcp-protocol-version")
    meta = m.meta or {}
    want = meta.get(META_PROTOCOL_VERSION)
    if got is not None and want is not None and got != want:
        return Hit(
            f"MCP-Protocol-Version {got!r} differs from _meta protocolVersion {want!r}",
            path=member("$.params._meta", META_PROTOCOL_VERSION),
        )
    return None


@http_rule(
    "MCP742",
    "method-header",
    Severity.ERROR,
    versions=MODERN,
    scope="http",
    spec=f"{SH_M}:L286-293, :L570-576, :L622-630",
)
def method_header(rec: Record, m: Analysed | None, s):
    """A modern request POST lacks `Mcp-Method`, or its value differs from the body's `method`.
    Header names compare case-insensitively, values case-sensitively.

    "These headers are REQUIRED for compliance" (Mcp-Method: all requests). Example: `Mcp-Method:
    tools/list` on a `tools/call` body.
    """
    if not _modern_request(rec, m):
        return None
    got = _req(rec, s).get("mcp-method")
    if got is None:
        return Hit(f"the {m.method} POST has no Mcp-Method header")
    if got != m.method:
        return Hit(f"Mcp-Method {got!r} differs from the body's method {m.method!r}", path="$.method")
    return None


@http_rule(
    "MCP743",
    "name-header",
    Severity.ERROR,
    versions=MODERN,
    scope="http",
    spec=f"{SH_M}:L288-296, :L490-504",
)
def name_header(rec: Record, m: Analysed | None, s):
    """A modern `tools/call`, `prompts/get` or `resources/read` POST lacks `Mcp-Name`, or its value
    (after Base64-sentinel decoding) differs from `params.name` / `params.uri`.

    "Mcp-Name: params.name or params.uri, required for tools/call, resources/read, prompts/get
    requests." Example: `Mcp-Name: add` on a call of the tool `echo`.
    """
    if not _modern_request(rec, m) or m.method not in NAMED_METHODS:
        return None
    field, want = _name_source(m)
    got = _req(rec, s).get("mcp-name")
    if got is None:
        return Hit(f"the {m.method} POST has no Mcp-Name header (params.{field} {want!r})")
    decoded, problem = decode_header_value(got)
    if problem is None and decoded != want:
        return Hit(f"Mcp-Name {decoded!r} differs from params.{field} {want!r}", path=f"$.params.{field}")
    return None


@http_rule(
    "MCP744",
    "header-value-encoding",
    Severity.ERROR,
    versions=MODERN,
    scope="http",
    spec=f"{SH_M}:L467-508",
)
def header_value_encoding(rec: Record, m: Analysed | None, s):
    """An `Mcp-Name` or `Mcp-Param-*` value that needs encoding (non-ASCII, control characters,
    leading/trailing whitespace, or a literal that looks like the sentinel) is sent raw; or the
    sentinel is not exactly lowercase `=?base64?…?=`; or its Base64 is invalid.

    "When a value cannot be safely represented as a plain ASCII header value ... clients MUST use
    Base64 encoding of the UTF-8 representation." Example: `Mcp-Param-City: Zürich` sent raw.
    """
    if not _modern_request(rec, m):
        return None
    out = []
    headers = rec.http["req_headers"]
    named = [("Mcp-Name", v) for v in [header(headers, "mcp-name")] if v is not None]
    for name, value in named + headers_with_prefix(headers, "mcp-param-"):
        decoded, problem = decode_header_value(value)
        if problem is not None:
            out.append(Hit(f"{name}: {problem}"))
        elif decoded == value and needs_encoding(value):
            out.append(
                Hit(f"{name} value {value[:40]!r} must be Base64-encoded (=?base64?…?=), not sent raw")
            )
    return out


@http_rule(
    "MCP745",
    "param-headers",
    Severity.ERROR,
    versions=MODERN,
    scope="http/pairing",
    spec=f"{SH_M}:L467-476, :L522-537, :L561-566, :L589-595",
)
def param_headers(rec: Record, m: Analysed | None, s):
    """A `tools/call` of a tool whose `inputSchema` marks properties with `x-mcp-header` (as listed
    by the last `tools/list`) does not mirror them: `Mcp-Param-{Name}` missing although the argument
    is present and not null, sent although it is null or absent, or its decoded value differs from
    the body (integers compare numerically, booleans as `true`/`false`).

    "When a server's tool definition includes x-mcp-header annotations, conforming clients MUST
    mirror the designated parameter values into HTTP headers." Example: `region: "us-west1"` in
    the arguments, no `Mcp-Param-Region` header.
    """
    if not _modern_request(rec, m) or m.method != "tools/call":
        return None
    params = m.params or {}
    tool = endpoint_tool(s, _flow(rec, s), params.get("name"))
    if tool is None:
        return None
    return [
        Hit(p, path="$.params.arguments")
        for p in param_header_problems(tool, params.get("arguments"), rec.http["req_headers"])
    ]


@http_rule(
    "MCP746",
    "header-failure-not-rejected",
    Severity.ERROR,
    versions=MODERN,
    scope="http/pairing",
    spec=f"{SH_M}:L552-559, :L580-638; schema/2026-07-28/schema.ts:L452-468",
)
def header_failure_not_rejected(rec: Record, m: Analysed | None, s):
    """A modern request whose headers fail validation (missing or mismatched
    `MCP-Protocol-Version` / `Mcp-Method` / `Mcp-Name` / `Mcp-Param-*`, or invalid characters) is
    not rejected with HTTP 400 and JSON-RPC -32020. (An intermediary may answer 400 without a
    JSON-RPC body.)

    "Servers MUST reject requests with a 400 Bad Request HTTP status and JSON-RPC error code -32020
    (HeaderMismatch) if any validation fails." Example: `Mcp-Method: tools/list` on a `tools/call`
    body, answered 200 with the tool's result.
    """
    cur = current(rec, s)
    if cur is None or not cur.head or rec.transport != HTTP:
        return None
    f = cur.flow
    problem = f.header_problem
    if problem is None or f.status is None:
        return None
    if f.status != 400:
        return Hit(
            f"the request's headers fail validation ({problem}) but it was answered {f.status}, not 400",
            related_seq=f.first_seq,
        )
    err = m.error if m is not None and m.kind is _KIND_ERROR else None
    if err is not None and err.get("code") != -32020:
        return Hit(
            f"the request's headers fail validation ({problem}); the 400's JSON-RPC error is "
            f"{err.get('code')}, not -32020 (HeaderMismatch)",
            path="$.error.code",
            related_seq=f.first_seq,
        )
    return None


@http_rule(
    "MCP747",
    "modern-error-status",
    Severity.ERROR,
    versions=MODERN,
    scope="http/pairing",
    spec="spec/2026-07-28/basic/index.mdx:L380-382, :L387-392; "
    f"{SH_M}:L263-267; schema/2026-07-28/schema.ts:L452-530",
)
def modern_error_status(rec: Record, m: Analysed | None, s):
    """A -32020, -32021 or -32022 error travels with an HTTP status other than 400 (inside a 200 SSE
    stream, for example).

    "it MUST respond with 400 Bad Request and an UnsupportedProtocolVersionError". Example: a
    `-32022` error in a `200 OK` JSON body.
    """
    if m is None or m.kind is not _KIND_ERROR or rec.dir is not _DIR_S2C or rec.transport != HTTP:
        return None
    code = (m.error or {}).get("code")
    status = rec.http.get("status")
    if type(code) is int and code in _MUST_BE_400 and status != 400:
        return Hit(
            f"error {code} ({_MUST_BE_400[code]}) sent with HTTP {status}; it must come with 400",
            path="$.error.code",
        )
    return None


@http_rule(
    "MCP748",
    "unknown-method-status",
    Severity.ERROR,
    versions=MODERN,
    scope="http/pairing",
    spec=f"{SH_M}:L271-275",
)
def unknown_method_status(rec: Record, m: Analysed | None, s):
    """An unknown method is not answered with HTTP 404 plus JSON-RPC -32601: a -32601 with another
    status. (The JSON-RPC body is what tells a modern 404 from a legacy server's.)

    "If the server does not implement the requested RPC method, it MUST respond with 404 Not Found
    and a JSON-RPC error with code -32601." Example: -32601 in a `200 OK` body.
    """
    if m is None or m.kind is not _KIND_ERROR or rec.dir is not _DIR_S2C or rec.transport != HTTP:
        return None
    status = rec.http.get("status")
    if (m.error or {}).get("code") == -32601 and status != 404:
        return Hit(
            f"-32601 (method not found) sent with HTTP {status}; it must come with 404", path="$.error.code"
        )
    return None


@http_rule(
    "MCP749",
    "modern-get-delete-not-405",
    Severity.WARNING,
    versions=MODERN,
    scope="http",
    spec=f"{SH_M}:L680-684",
)
def modern_get_delete_not_405(rec: Record, m: Analysed | None, s):
    """A modern-only server answers GET or DELETE on the MCP endpoint with something other than
    405 (the GET stream and sessions were removed in 2026-07-28).

    "HTTP GET or DELETE to the MCP endpoint: respond with 405 Method Not Allowed." Example: a GET
    answered `200` with an SSE stream in a modern session.
    """
    cur = current(rec, s)
    if cur is None or not cur.head or rec.transport != HTTP:
        return None
    f = cur.flow
    if f.method in ("GET", "DELETE") and f.status is not None and f.status != 405:
        return Hit(f"{f.method} on the MCP endpoint answered {f.status}; a modern-only server answers 405")
    return None
