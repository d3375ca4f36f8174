"""MCP7xx, Streamable HTTP: what a POST must carry and how each kind of POST must be answered.

HTTP rules (`phase="http"`) see every record of an HTTP connection, messages included, as
`fn(rec, m, session)`; the flow facts come from `tracer.http_state` (its observer ran first). The
session rules (MCP72x/MCP73x) are in `http_session`, the SSE stream rules and the legacy HTTP+SSE
transport (MCP901-MCP904) in `http_sse`.

Guard (RULES.md section 7): header requirements are not defined for modern notification POSTs, so
MCP740-MCP744 judge requests only.
"""

from __future__ import annotations

from tracer.http_headers import (
    accept_lists,
    decode_header_value,
    header,
    headers_with_prefix,
    is_json,
    is_sse,
    media_type,
    needs_encoding,
)
from tracer.http_state import current, req_header, state
from tracer.http_tools import NAMED_METHODS, param_header_problems
from tracer.model import Analysed, Direction, Hit, Kind, Record, Severity
from tracer.protocol import ALL, L3, META_PROTOCOL_VERSION, MODERN, since
from tracer.rules.registry import rule

ST_L2 = "spec/2025-11-25/basic/transports.mdx"
SH_M = "spec/2026-07-28/basic/transports/streamable-http.mdx"
L2_UP = since("2025-03-26")
HTTP = "http"
RESPONSES = (Kind.RESULT, Kind.ERROR)
LOOPBACK = ("localhost", "127.0.0.1", "::1", "[::1]")


def _post_message(rec: Record, m: Analysed | None) -> bool:
    """The JSON-RPC body of a client's HTTP request (not a batch member: the batch is judged once)."""
    return m is not None and rec.dir is Direction.C2S and rec.transport == HTTP


def _flow(rec, s):
    cur = current(rec, s)
    return cur.flow if cur is not None else None


@rule("MCP701", "json-rpc-not-posted", Severity.ERROR, versions=L2_UP, phase="http", scope="http",
      spec=f"{ST_L2}:L88-91; {SH_M}:L72-75")
def json_rpc_not_posted(rec: Record, m: Analysed | None, s):
    """The client sends a JSON-RPC message with an HTTP method other than POST. (GET opens a
    stream and DELETE ends a session in 2025-03-26..2025-11-25; neither carries a JSON-RPC body.)

    "The client MUST use HTTP POST to send JSON-RPC messages to the MCP endpoint." Example: a
    `tools/list` request sent as the body of a PUT.
    """
    if _post_message(rec, m) and rec.http.get("method") != "POST":
        return Hit(f"JSON-RPC {m.kind.value} sent with HTTP {rec.http.get('method')}; every message must be a POST")
    return None


@rule("MCP702", "post-accept-header", Severity.ERROR, versions=L2_UP, phase="http", scope="http",
      spec=f"{ST_L2}:L92-93; {SH_M}:L76-77")
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


@rule("MCP703", "notification-post-status", Severity.ERROR, versions=L2_UP, phase="http", scope="http/pairing",
      spec=f"{ST_L2}:L95-100; {SH_M}:L82-87")
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
            return Hit(f"the {what} POST got 202 Accepted with a body ({len(rec.raw)} bytes); 202 must have none")
        return None
    if 200 <= status < 300:
        return Hit(f"the accepted {what} POST got {status}; it must get 202 Accepted with no body")
    if status < 400:
        return Hit(f"the {what} POST got {status}: accepted is 202, rejected is an HTTP error status")
    if m is not None and m.kind is Kind.ERROR and m.id is not None:
        return Hit(f"the error rejecting a {what} POST carries id {m.id!r}; it must have no id", path="$.id")
    return None


@rule("MCP704", "request-post-answer-type", Severity.ERROR, versions=L2_UP, phase="http", scope="http/pairing",
      spec=f"{ST_L2}:L101-104; {SH_M}:L88-91")
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
        return Hit(f"the {f.rpc_method} request POST got {f.status} with {shown}; "
                   "it must be application/json or text/event-stream")
    if m is None and is_json(ct):
        return Hit(f"the {f.rpc_method} request POST got {f.status} application/json without a JSON-RPC body")
    if m is not None and is_json(ct):
        if m.kind is Kind.BATCH and m.version != "2025-03-26" and (m.version or L3) >= L3:
            return Hit("an application/json answer must be one JSON-RPC object, not a batch array")
        if m.kind is Kind.INVALID and m.problem == "not-object":
            return Hit("an application/json answer must be one JSON-RPC object")
    return None


@rule("MCP705", "modern-response-posted", Severity.ERROR, versions=MODERN, phase="http", scope="http",
      spec=f"{SH_M}:L80-81")
def modern_response_posted(rec: Record, m: Analysed | None, s):
    """A modern (2026-07-28) POST body is a JSON-RPC response. Modern servers send no requests, so a
    client has nothing to answer; input travels in the retried request (MRTR).

    "The body of the HTTP POST MUST be a single JSON-RPC request or notification. The client MUST
    NOT send JSON-RPC responses." Example: a POST of `{"jsonrpc":"2.0","id":0,"result":{}}`.
    """
    if _post_message(rec, m) and m.kind in RESPONSES:
        return Hit(f"a modern client POSTed a JSON-RPC {m.kind.value}; only requests and notifications may be sent")
    return None


def _host(url: str) -> str:
    from urllib.parse import urlsplit

    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


@rule("MCP706", "cross-origin-served", Severity.WARNING, versions=ALL, phase="http", scope="http",
      spec=f"{ST_L2}:L78-80; {SH_M}:L58-62; spec/2024-11-05/basic/transports.mdx:L55")
def cross_origin_served(rec: Record, m: Analysed | None, s):
    """(Inferred detection.) A request whose `Origin` names another, non-loopback host is served
    with a 2xx: the server may not validate `Origin`, which exposes it to DNS rebinding.

    "Servers MUST validate the Origin header on all incoming connections to prevent DNS rebinding
    attacks"; from 2025-11-25 an invalid Origin MUST get 403. Example: `Origin: https://evil.example`
    on a POST to `http://127.0.0.1:8765/mcp`, answered 200.
    """
    cur = current(rec, s)
    if cur is None or not cur.head:
        return None
    f = cur.flow
    origin = req_header(f, "origin")
    if not origin or origin == "null" or f.status is None or not 200 <= f.status < 300:
        return None
    o_host, target = _host(origin), _host(f.url)
    if not o_host or o_host == target or o_host in LOOPBACK or o_host.startswith("127."):
        return None
    return Hit(f"Origin {origin} differs from the endpoint's host {target} and was served {f.status}; "
               "servers must validate Origin (403 for an invalid one)")


# -- modern request metadata headers (MCP740-MCP745) ------------------------------------------------


def _modern_request(rec: Record, m: Analysed | None) -> bool:
    return _post_message(rec, m) and m.kind is Kind.REQUEST and "req_headers" in rec.http


def _req(rec: Record, s) -> dict[str, str]:
    """The request's headers, lowercased names (from the HTTP observer)."""
    cur = current(rec, s)
    return cur.flow.req_map if cur is not None else {}


@rule("MCP740", "modern-post-missing-version-header", Severity.ERROR, versions=MODERN, phase="http",
      scope="http", spec=f"{SH_M}:L252-253, :L277-281")
def modern_post_missing_version_header(rec: Record, m: Analysed | None, s):
    """A modern request POST lacks `MCP-Protocol-Version`. (Notification POSTs are not judged:
    their header requirements are not defined by 2026-07-28.)

    "Every POST request to the MCP endpoint MUST include an MCP-Protocol-Version header." Example:
    a `tools/list` POST whose body has `_meta` protocolVersion but no header.
    """
    if _modern_request(rec, m) and _req(rec, s).get("mcp-protocol-version") is None:
        return Hit(f"the {m.method} POST has no MCP-Protocol-Version header")
    return None


@rule("MCP741", "version-header-mismatch", Severity.ERROR, versions=MODERN, phase="http", scope="http",
      spec=f"{SH_M}:L257-261; schema/2026-07-28/schema.ts:L70-75")
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
        return Hit(f"MCP-Protocol-Version {got!r} differs from _meta protocolVersion {want!r}",
                   path=f"$.params._meta[{META_PROTOCOL_VERSION!r}]")
    return None


@rule("MCP742", "method-header", Severity.ERROR, versions=MODERN, phase="http", scope="http",
      spec=f"{SH_M}:L286-293, :L570-576, :L622-630")
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


@rule("MCP743", "name-header", Severity.ERROR, versions=MODERN, phase="http", scope="http",
      spec=f"{SH_M}:L288-296, :L490-504")
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


@rule("MCP744", "header-value-encoding", Severity.ERROR, versions=MODERN, phase="http", scope="http",
      spec=f"{SH_M}:L467-508")
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
            out.append(Hit(f"{name} value {value[:40]!r} must be Base64-encoded (=?base64?…?=), not sent raw"))
    return out


@rule("MCP745", "param-headers", Severity.ERROR, versions=MODERN, phase="http", scope="http/pairing",
      spec=f"{SH_M}:L467-476, :L522-537, :L561-566, :L589-595")
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
    tool = s.track.tool(params.get("name"))
    if tool is None:
        return None
    return [Hit(p, path="$.params.arguments") for p in param_header_problems(tool, params.get("arguments"),
                                                                            rec.http["req_headers"])]


# -- how a modern server answers (MCP746-MCP753) -----------------------------------------------------


@rule("MCP746", "header-failure-not-rejected", Severity.ERROR, versions=MODERN, phase="http",
      scope="http/pairing", spec=f"{SH_M}:L552-559, :L580-638; schema/2026-07-28/schema.ts:L452-468")
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
        return Hit(f"the request's headers fail validation ({problem}) but it was answered {f.status}, not 400",
                   related_seq=f.first_seq)
    err = m.error if m is not None and m.kind is Kind.ERROR else None
    if err is not None and err.get("code") != -32020:
        return Hit(f"the request's headers fail validation ({problem}); the 400's JSON-RPC error is "
                   f"{err.get('code')}, not -32020 (HeaderMismatch)", path="$.error.code", related_seq=f.first_seq)
    return None


_MUST_BE_400 = {-32020: "HeaderMismatch", -32021: "MissingRequiredClientCapability",
                -32022: "UnsupportedProtocolVersion"}


@rule("MCP747", "modern-error-status", Severity.ERROR, versions=MODERN, phase="http", scope="http/pairing",
      spec="spec/2026-07-28/basic/index.mdx:L380-382, :L387-392; "
           f"{SH_M}:L263-267; schema/2026-07-28/schema.ts:L452-530")
def modern_error_status(rec: Record, m: Analysed | None, s):
    """A -32020, -32021 or -32022 error travels with an HTTP status other than 400 (inside a 200 SSE
    stream, for example).

    "it MUST respond with 400 Bad Request and an UnsupportedProtocolVersionError". Example: a
    `-32022` error in a `200 OK` JSON body.
    """
    if m is None or m.kind is not Kind.ERROR or rec.dir is not Direction.S2C or rec.transport != HTTP:
        return None
    code = (m.error or {}).get("code")
    status = rec.http.get("status")
    if code in _MUST_BE_400 and status != 400:
        return Hit(f"error {code} ({_MUST_BE_400[code]}) sent with HTTP {status}; it must come with 400",
                   path="$.error.code")
    return None


@rule("MCP748", "unknown-method-status", Severity.ERROR, versions=MODERN, phase="http", scope="http/pairing",
      spec=f"{SH_M}:L271-275")
def unknown_method_status(rec: Record, m: Analysed | None, s):
    """An unknown method is not answered with HTTP 404 plus JSON-RPC -32601: a -32601 with another
    status. (The JSON-RPC body is what tells a modern 404 from a legacy server's.)

    "If the server does not implement the requested RPC method, it MUST respond with 404 Not Found
    and a JSON-RPC error with code -32601." Example: -32601 in a `200 OK` body.
    """
    if m is None or m.kind is not Kind.ERROR or rec.dir is not Direction.S2C or rec.transport != HTTP:
        return None
    status = rec.http.get("status")
    if (m.error or {}).get("code") == -32601 and status != 404:
        return Hit(f"-32601 (method not found) sent with HTTP {status}; it must come with 404", path="$.error.code")
    return None


@rule("MCP749", "modern-get-delete-not-405", Severity.WARNING, versions=MODERN, phase="http", scope="http",
      spec=f"{SH_M}:L680-684")
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


@rule("MCP750", "modern-session-id", Severity.WARNING, versions=MODERN, phase="http", scope="http",
      spec=f"{SH_M}:L685-686; spec/2026-07-28/changelog.mdx:L12")
def modern_session_id(rec: Record, m: Analysed | None, s):
    """A modern exchange's response mints or echoes `Mcp-Session-Id`. 2026-07-28 has no sessions.

    "An Mcp-Session-Id header on a request: ignore it, and do not mint or echo session IDs."
    Example: a modern `tools/list` answered with `Mcp-Session-Id: 1868a90c`.
    """
    cur = current(rec, s)
    if cur is None or not cur.head:
        return None
    sid = cur.flow.resp_map.get("mcp-session-id")
    if sid is not None:
        return Hit(f"a modern response carries Mcp-Session-Id {sid[:40]!r}; modern servers do not mint or echo it")
    return None


@rule("MCP751", "modern-resumability-fields", Severity.INFO, versions=MODERN, phase="http", scope="http",
      spec=f"{SH_M}:L157, :L687; spec/2026-07-28/changelog.mdx:L28")
def modern_resumability_fields(rec: Record, m: Analysed | None, s):
    """Modern traffic sends `Last-Event-ID`, or its SSE streams carry `id:` / `retry:` fields.
    Resumability was removed in 2026-07-28, so they have no effect. Reported once per stream.

    "Resumable SSE streams via Last-Event-ID are not supported." Example: `id: 17` on the events
    of a modern `tools/call` stream.
    """
    cur = current(rec, s)
    if cur is None:
        return None
    f = cur.flow
    if cur.first_of_flow and req_header(f, "last-event-id") is not None:
        return Hit("a modern request sends Last-Event-ID; streams are not resumable in 2026-07-28")
    closed = (rec.data or {}).get("event") == "stream-closed"
    if closed and (f.ids_seen or f.retry_seen):
        which = " and ".join(x for x, on in (("id", f.ids_seen), ("retry", f.retry_seen)) if on)
        return Hit(f"the modern SSE stream carried {which} fields, which have no effect (no resumability)")
    return None


@rule("MCP752", "sse-without-accel-buffering", Severity.WARNING, versions=MODERN, phase="http", scope="http",
      spec=f"{SH_M}:L136-142")
def sse_without_accel_buffering(rec: Record, m: Analysed | None, s):
    """A modern SSE response lacks `X-Accel-Buffering: no`, so a reverse proxy such as nginx may
    hold events back.

    "When initiating an SSE stream, servers SHOULD include the X-Accel-Buffering: no header."
    Example: a `tools/call` answered with `text/event-stream` and no such header.
    """
    if (rec.data or {}).get("event") != "stream-open":
        return None
    cur = current(rec, s)
    if cur is None:
        return None
    value = cur.flow.resp_map.get("x-accel-buffering")
    if value is None or value.strip().lower() != "no":
        return Hit("the SSE response has no 'X-Accel-Buffering: no' header")
    return None


@rule("MCP753", "listen-answered-json", Severity.WARNING, versions=MODERN, phase="http", scope="http",
      spec=f"{SH_M}:L127-131")
def listen_answered_json(rec: Record, m: Analysed | None, s):
    """(Inferred.) `subscriptions/listen` over HTTP is answered with a single `application/json`
    result instead of a long-lived SSE stream.

    "The server's response is itself an SSE stream that stays open." Example: the listen request
    answered `200` `application/json` with its closing result.
    """
    if m is None or m.kind is not Kind.RESULT or m.answers_method != "subscriptions/listen":
        return None
    if rec.sse is None and rec.transport == HTTP:
        return Hit("subscriptions/listen was answered with application/json, not an SSE stream")
    return None


@rule("MCP754", "fallback-after-modern-error", Severity.WARNING, versions=ALL, phase="http", scope="http/pairing",
      spec=f"{SH_M}:L650-665, :L729-732; spec/2026-07-28/basic/versioning.mdx:L143-146")
def fallback_after_modern_error(rec: Record, m: Analysed | None, s):
    """A dual-era client falls back to `initialize` after a 400/404 whose body is a recognised
    modern JSON-RPC error (-32020, -32021, -32022 with 400; -32601 with 404): the server speaks a
    modern version, so the client should retry with a supported version or fix the request. (The
    fallback itself is legacy traffic, so this rule judges every version.)

    "If the body contains a recognized modern JSON-RPC error, the server speaks a modern version of
    MCP — retry ... rather than falling back." Example: `server/discover` answered 400 with -32022,
    then an `initialize` POST.
    """
    if m is None or m.kind is not Kind.REQUEST or m.method != "initialize" or rec.dir is not Direction.C2S:
        return None
    st = state(s)
    if st is None or st.modern_rejection is None:
        return None
    seq, status, code = st.modern_rejection
    return Hit(f"the client fell back to initialize after a {status} with the modern error {code} (seq {seq}); "
               "that server speaks a modern version", related_seq=seq)


@rule("MCP755", "modern-server-initialize-error", Severity.WARNING, versions=ALL, kinds=(Kind.ERROR,),
      methods=("initialize",), scope="pairing", spec="spec/2026-07-28/basic/versioning.mdx:L154-157")
def modern_server_initialize_error(m: Analysed, s):
    """A modern-only server (it answered `server/discover` with a result) rejects `initialize` with
    an error that does not name the versions it supports (`error.data.supported`). (The error
    answers legacy traffic, so this rule judges every version.)

    "A server that supports only modern versions SHOULD name the protocol versions it supports in
    any error it returns to an initialize request, on any transport." Example: -32601
    with no `data` in answer to `initialize` after a successful discover.
    """
    disc = s.discover
    if disc is None or disc.outcome != "result" or m.rec.dir is not Direction.S2C:
        return None
    data = (m.error or {}).get("data")
    sup = data.get("supported") if type(data) is dict else None
    if type(sup) is list and sup:
        return None
    return Hit("the modern server's error to initialize does not list its supported versions (error.data.supported)",
               path="$.error")
