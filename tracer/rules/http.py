"""MCP7xx, Streamable HTTP: what a POST must carry and how each kind of POST must be answered.

HTTP rules (`phase="http"`) see every record of an HTTP connection, messages included, as
`fn(rec, m, session)`; the flow facts come from `tracer.http.state` (its observer ran first). The
session rules (MCP72x/MCP73x) are in `http_session`, the SSE stream rules and the legacy HTTP+SSE
transport (MCP901-MCP904) in `http_sse`, how a modern server answers (MCP746-MCP755) in
`http_answers`.

Guard (RULES.md section 7): header requirements are not defined for modern notification POSTs, so
MCP740-MCP744 judge requests only.
"""

from __future__ import annotations

from tracer.http.headers import (
    accept_lists,
    decode_header_value,
    header,
    headers_with_prefix,
    is_json,
    is_sse,
    media_type,
    needs_encoding,
)
from tracer.http.origin import foreign_origin
from tracer.http.state import current, endpoint_tool, req_header
from tracer.http.tools import NAMED_METHODS, param_header_problems
from tracer.model import Analysed, Direction, Era, Hit, Kind, Record, Severity
from tracer.protocol import ALL, L3, META_PROTOCOL_VERSION, MODERN, since
from tracer.rules.registry import rule

ST_L2 = "spec/2025-11-25/basic/transports.mdx"
SH_M = "spec/2026-07-28/basic/transports/streamable-http.mdx"
L2_UP = since("2025-03-26")
HTTP = "http"
RESPONSES = (Kind.RESULT, Kind.ERROR)
MODERN_VERSION = "2026-07-28"


def _post_message(rec: Record, m: Analysed | None) -> bool:
    """The JSON-RPC body of a client's HTTP request (not a batch member: the batch is judged once)."""
    return m is not None and rec.dir is Direction.C2S and rec.transport == HTTP


def _flow(rec, s):
    cur = current(rec, s)
    return cur.flow if cur is not None else None


@rule(
    "MCP701",
    "json-rpc-not-posted",
    Severity.ERROR,
    versions=L2_UP,
    phase="http",
    scope="http",
    spec=f"{ST_L2}:L88-91; {SH_M}:L72-75",
)
def json_rpc_not_posted(rec: Record, m: Analysed | None, s):
    """The client sends a JSON-RPC message with an HTTP method other than POST. (GET opens a
    stream and DELETE ends a session in 2025-03-26..2025-11-25; neither carries a JSON-RPC body.)

    "The client MUST use HTTP POST to send JSON-RPC messages to the MCP endpoint." Example: a
    `tools/list` request sent as the body of a PUT.
    """
    if _post_message(rec, m) and rec.http.get("method") != "POST":
        return Hit(
            f"JSON-RPC {m.kind.value} sent with HTTP {rec.http.get('method')}; every message must be a POST"
        )
    return None


@rule(
    "MCP702",
    "post-accept-header",
    Severity.ERROR,
    versions=L2_UP,
    phase="http",
    scope="http",
    spec=f"{ST_L2}:L92-93; {SH_M}:L76-77",
)
def post_accept_header(rec: Record, m: Analysed | None, s):
    """A POST's `Accept` header does not list both `application/json` and `text/event-stream`
    (a `*/*` wildcard does not list them).

    "The client MUST include an Accept header, listing both application/json and
    text/event-stream as supported content types." Example: `Accept: application/json`.
    """
    if not _post_message(rec, m) or rec.http.get("method") != "POST" or "req_headers" not in rec.http:
        return None
    accept = _req(rec, s).get("accept")
    missing = [t for t in ("application/json", "text/event-stream") if not accept_lists(accept, t)]
    if missing:
        shown = "no Accept header" if accept is None else f"Accept: {accept}"
        return Hit(f"the POST's Accept does not list {' and '.join(missing)} ({shown})")
    return None


@rule(
    "MCP703",
    "notification-post-status",
    Severity.ERROR,
    versions=L2_UP,
    phase="http",
    scope="http/pairing",
    spec=f"{ST_L2}:L95-100; {SH_M}:L82-87",
)
def notification_post_status(rec: Record, m: Analysed | None, s):
    """A notification POST (2025-03-26..2025-11-25: or a response POST) is accepted with a status
    other than 202, or with a 202 that has a body; or rejected with a status that is not an error;
    or rejected with a JSON-RPC error that carries an `id` (that error "has no id").

    "If the server accepts the input, the server MUST return HTTP status code 202 Accepted with no
    body." Example: `notifications/initialized` answered `200 OK` with `{}`.
    """
    cur = current(rec, s)
    if cur is None or not cur.head or rec.transport != HTTP:
        return None
    f = cur.flow
    if f.body_kind not in (Kind.NOTIFICATION, Kind.RESULT, Kind.ERROR) or f.status is None:
        return None
    what = "notification" if f.body_kind is Kind.NOTIFICATION else "response"
    status = f.status
    if status == 202:
        if rec.raw.strip():
            return Hit(
                f"the {what} POST got 202 Accepted with a body ({len(rec.raw)} bytes); 202 must have none"
            )
        return None
    if 200 <= status < 300:
        return Hit(f"the accepted {what} POST got {status}; it must get 202 Accepted with no body")
    if status < 400:
        return Hit(f"the {what} POST got {status}: accepted is 202, rejected is an HTTP error status")
    if m is not None and m.kind is Kind.ERROR and m.id is not None:
        return Hit(f"the error rejecting a {what} POST carries id {m.id!r}; it must have no id", path="$.id")
    return None


@rule(
    "MCP704",
    "request-post-answer-type",
    Severity.ERROR,
    versions=L2_UP,
    phase="http",
    scope="http/pairing",
    spec=f"{ST_L2}:L101-104; {SH_M}:L88-91",
)
def request_post_answer_type(rec: Record, m: Analysed | None, s):
    """A request POST gets a 2xx whose `Content-Type` is neither `application/json` nor
    `text/event-stream` (or no JSON-RPC answer at all); or an `application/json` body that is not
    exactly one JSON-RPC object (2025-06-18 on: no batches).

    "If the input is a JSON-RPC request, the server MUST either return Content-Type:
    text/event-stream, to initiate an SSE stream, or Content-Type: application/json, to return one
    JSON object." Example: `200 OK` with `Content-Type: text/plain`.
    """
    cur = current(rec, s)
    if cur is None or not cur.head or rec.transport != HTTP:
        return None
    f = cur.flow
    if f.body_kind is not Kind.REQUEST or f.status is None or not 200 <= f.status < 300:
        return None
    ct = f.content_type
    if not (is_json(ct) or is_sse(ct)):
        shown = f"Content-Type {media_type(ct)}" if ct else "no Content-Type"
        return Hit(
            f"the {f.rpc_method} request POST got {f.status} with {shown}; "
            "it must be application/json or text/event-stream"
        )
    if m is None and is_json(ct):
        return Hit(f"the {f.rpc_method} request POST got {f.status} application/json without a JSON-RPC body")
    if m is not None and is_json(ct):
        if m.kind is Kind.BATCH and m.version != "2025-03-26" and (m.version or L3) >= L3:
            return Hit("an application/json answer must be one JSON-RPC object, not a batch array")
        if m.kind is Kind.INVALID and m.problem == "not-object":
            return Hit("an application/json answer must be one JSON-RPC object")
    return None


@rule(
    "MCP705",
    "modern-response-posted",
    Severity.ERROR,
    versions=MODERN,
    phase="http",
    scope="http",
    spec=f"{SH_M}:L80-81",
)
def modern_response_posted(rec: Record, m: Analysed | None, s):
    """A modern (2026-07-28) POST body is a JSON-RPC response. Modern servers send no requests, so a
    client has nothing to answer; input travels in the retried request (MRTR).

    "The body of the HTTP POST MUST be a single JSON-RPC request or notification. The client MUST
    NOT send JSON-RPC responses." Example: a POST of `{"jsonrpc":"2.0","id":0,"result":{}}`.
    """
    if _post_message(rec, m) and m.kind in RESPONSES:
        return Hit(
            f"a modern client POSTed a JSON-RPC {m.kind.value}; only requests and notifications may be sent"
        )
    return None


@rule(
    "MCP706",
    "cross-origin-served",
    Severity.WARNING,
    versions=ALL,
    phase="http",
    scope="http",
    spec=f"{ST_L2}:L78-80; {SH_M}:L58-62; spec/2024-11-05/basic/transports.mdx:L55",
)
def cross_origin_served(rec: Record, m: Analysed | None, s):
    """(Inferred detection.) A request whose `Origin` is foreign is served (2xx), or, from
    2025-11-25 on, answered with anything but 403 (a 500, a 401...; a 421 refusing the `Host` is
    not judged). Foreign: a non-loopback host that differs from the endpoint's, or any
    non-loopback host when the server was reached at a loopback address (DNS rebinding: the
    attacker's name is in `Host` too, so `Host` proves nothing; the address the proxy really
    connected to, recorded with the answer, does).

    "Servers MUST validate the Origin header on all incoming connections to prevent DNS rebinding
    attacks"; "If the Origin header is present and invalid, servers MUST respond with HTTP 403
    Forbidden." Example: `Origin: https://evil.example` on a POST to `http://127.0.0.1:8765/mcp`,
    answered 200 (or 500).
    """
    cur = current(rec, s)
    if cur is None or not cur.head:
        return None
    f = cur.flow
    origin = req_header(f, "origin")
    status = f.status
    # 421: the server refused the request's Host (its own DNS-rebinding defence, as the official
    # Python SDK's): nothing was served, and which of two invalid headers it names first is its call
    if not origin or status is None or status in (403, 421):
        return None
    why = foreign_origin(origin, f.url, f.server)
    if why is None:
        return None
    if 200 <= status < 300:
        return Hit(
            f"Origin {origin} {why} and was served {status}; servers must validate Origin "
            "(403 for an invalid one)"
        )
    version = f.req_map.get("mcp-protocol-version") or (
        MODERN_VERSION if f.era is Era.MODERN else s.legacy_version
    )
    if type(version) is str and version >= "2025-11-25":
        return Hit(
            f"Origin {origin} {why} and was answered {status}; an invalid Origin must get 403 Forbidden"
        )
    return None


# -- modern request metadata headers (MCP740-MCP745) ------------------------------------------------


def _modern_request(rec: Record, m: Analysed | None) -> bool:
    return _post_message(rec, m) and m.kind is Kind.REQUEST and "req_headers" in rec.http


def _req(rec: Record, s) -> dict[str, str]:
    """The request's headers, lowercased names (from the HTTP observer)."""
    cur = current(rec, s)
    return cur.flow.req_map if cur is not None else {}


@rule(
    "MCP740",
    "modern-post-missing-version-header",
    Severity.ERROR,
    versions=MODERN,
    phase="http",
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


@rule(
    "MCP741",
    "version-header-mismatch",
    Severity.ERROR,
    versions=MODERN,
    phase="http",
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
            path=f"$.params._meta[{META_PROTOCOL_VERSION!r}]",
        )
    return None


@rule(
    "MCP742",
    "method-header",
    Severity.ERROR,
    versions=MODERN,
    phase="http",
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


def _name_source(m: Analysed) -> tuple[str, object] | None:
    params = m.params or {}
    if m.method == "resources/read":
        return "uri", params.get("uri")
    return "name", params.get("name")


@rule(
    "MCP743",
    "name-header",
    Severity.ERROR,
    versions=MODERN,
    phase="http",
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


@rule(
    "MCP744",
    "header-value-encoding",
    Severity.ERROR,
    versions=MODERN,
    phase="http",
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


@rule(
    "MCP745",
    "param-headers",
    Severity.ERROR,
    versions=MODERN,
    phase="http",
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
