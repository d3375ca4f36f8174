"""MCP701-MCP709, Streamable HTTP: what a POST must carry, how each kind of POST must be answered,
and the SSE stream that answers a POST.

HTTP rules (`@http_rule`) see every record of an HTTP connection, messages included, as
`fn(rec, m, session)`; the flow facts come from `tracer.http.state`. The other SSE stream rules
are in mcp71_sse.py, the sessions in mcp72_http_session.py, the version header in
mcp73_version_header.py, modern headers in mcp74_http_headers.py, how a modern server answers in
mcp75_modern_http.py, the legacy HTTP+SSE transport (MCP901-MCP904) in mcp9_legacy.py.
"""

from __future__ import annotations

from tracer.catalog.registry import http_rule
from tracer.http.headers import (
    accept_lists,
    is_json,
    is_sse,
    media_type,
)
from tracer.http.origin import foreign_origin
from tracer.http.state import SERVER_ENDS, current, req_header, state
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_BATCH as _KIND_BATCH
from tracer.model import KIND_ERROR as _KIND_ERROR
from tracer.model import KIND_INVALID as _KIND_INVALID
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed, Hit, Kind, Record, Severity
from tracer.protocol import ALL, L3, MODERN, since
from tracer.rules.mcp71_sse import NOT_A_MESSAGE, SSE_L1, ST, _event_name, _stream_cur

STAYS_OPEN_MS = 1000  # a stream still open this long after its final response "stays open" (MCP709)


def _cancelled(f, s) -> bool:
    """Whether the client cancelled the request of flow F (`notifications/cancelled`): then the
    server SHOULD NOT (2026-07-28: MUST NOT) answer it, so a stream ending without its response is
    what the spec asks for."""
    key = (_DIR_C2S, f.idkey)
    req = s.pending.get(key)
    if req is None or req.seq != f.first_seq:
        req = s.answered.get(key)
    return req is not None and req.seq == f.first_seq and req.cancelled_seq is not None


def _session_ended(f, s) -> bool:
    """Whether the session of flow F's request was terminated (a DELETE answered 2xx, a 404 for
    it) before now: the official SDK's server ends the streams of a session the client DELETEd
    while a call was still running, as the transport allows."""
    st = state(s)
    sid = req_header(f, "mcp-session-id")
    return st is not None and sid is not None and sid in st.terminated


ST_L2 = "spec/2025-11-25/basic/transports.mdx"

SH_M = "spec/2026-07-28/basic/transports/streamable-http.mdx"

L2_UP = since("2025-03-26")

HTTP = "http"

RESPONSES = (Kind.RESULT, Kind.ERROR)

MODERN_VERSION = "2026-07-28"


def _post_message(rec: Record, m: Analysed | None) -> bool:
    """The JSON-RPC body of a client's HTTP request (not a batch member: the batch is judged once)."""
    return m is not None and rec.dir is _DIR_C2S and rec.transport == HTTP


def _req(rec: Record, s) -> dict[str, str]:
    """The request's headers, lowercased names (from the HTTP observer)."""
    cur = current(rec, s)
    return cur.flow.req_map if cur is not None else {}


@http_rule(
    "MCP701",
    "json-rpc-not-posted",
    Severity.ERROR,
    versions=L2_UP,
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


@http_rule(
    "MCP702",
    "post-accept-header",
    Severity.ERROR,
    versions=L2_UP,
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


@http_rule(
    "MCP703",
    "notification-post-status",
    Severity.ERROR,
    versions=L2_UP,
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
    if f.body_kind not in (_KIND_NOTIFICATION, _KIND_RESULT, _KIND_ERROR) or f.status is None:
        return None
    what = "notification" if f.body_kind is _KIND_NOTIFICATION else "response"
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
    if m is not None and m.kind is _KIND_ERROR and m.id is not None:
        return Hit(f"the error rejecting a {what} POST carries id {m.id!r}; it must have no id", path="$.id")
    return None


@http_rule(
    "MCP704",
    "request-post-answer-type",
    Severity.ERROR,
    versions=L2_UP,
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
    if f.body_kind is not _KIND_REQUEST or f.status is None or not 200 <= f.status < 300:
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
        if m.kind is _KIND_BATCH and m.version != "2025-03-26" and (m.version or L3) >= L3:
            return Hit("an application/json answer must be one JSON-RPC object, not a batch array")
        if m.kind is _KIND_INVALID and m.problem == "not-object":
            return Hit("an application/json answer must be one JSON-RPC object")
    return None


@http_rule(
    "MCP705",
    "modern-response-posted",
    Severity.ERROR,
    versions=MODERN,
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


@http_rule(
    "MCP706",
    "cross-origin-served",
    Severity.WARNING,
    versions=ALL,
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
        MODERN_VERSION if f.era is _ERA_MODERN else s.legacy_version
    )
    if type(version) is str and version >= "2025-11-25":
        return Hit(
            f"Origin {origin} {why} and was answered {status}; an invalid Origin must get 403 Forbidden"
        )
    return None


@http_rule(
    "MCP707",
    "sse-data-not-one-message",
    Severity.ERROR,
    versions=L2_UP,
    scope="http",
    spec=f"WHATWG HTML §9.2 (event stream interpretation); {SH_M}:L144-155; {SSE_L1}:L71-72",
)
def sse_data_not_one_message(rec: Record, m: Analysed | None, s):
    """(Inferred.) An SSE event's data (its `data:` lines joined) is not a single JSON-RPC message:
    not JSON, an array, or an event cut off by the server ending the stream. Comment lines (`:`)
    are keep-alives and are not judged. An event cut off by the client closing the stream (the
    official SDK client refuses an event over 1 MiB), or by the capture stopping, is not the
    server's framing.

    Each SSE event carries one JSON-RPC message (2025-11-25 "The server MAY send JSON-RPC requests
    and notifications before sending the JSON-RPC response"). Example: `data: hello`.
    """
    if rec.transport != HTTP:
        return None
    if m is not None and rec.sse is not None:
        if m.kind is _KIND_BATCH:
            return Hit("the SSE event carries a JSON array (a batch), not a single JSON-RPC message")
        if m.kind is _KIND_INVALID and m.problem in NOT_A_MESSAGE:
            return Hit(f"the SSE event's data is not a JSON-RPC message ({m.reason})")
        return None
    data = rec.data or {}
    if _event_name(rec) == "stream-closed" and "unterminated" in data and data.get("reason") in SERVER_ENDS:
        return Hit(
            "the stream ended in the middle of an event (no blank line after its data), so it is lost: "
            f"{rec.data['unterminated'][:60]!r}"
        )
    return None


@http_rule(
    "MCP708",
    "stream-ended-without-response",
    Severity.WARNING,
    versions=L2_UP,
    scope="http/pairing",
    spec=f"{ST}:L117-118; spec/2025-03-26/basic/transports.mdx:L115-117; "
    f"{SH_M}:L33-36; spec/2026-07-28/changelog.mdx:L28",
)
def stream_ended_without_response(rec: Record, m: Analysed | None, s):
    """A request's SSE response stream ends (the server finished or dropped it) without that
    request's JSON-RPC response. Streams the client closed, streams of a request the client
    cancelled (`notifications/cancelled`), streams where the server announced `retry` (it may
    close the connection and let the client resume), and streams of a session already terminated
    (a DELETE answered 2xx, or a 404 for it: "The server MAY terminate the SSE stream if the
    session expires"), are not judged.

    "The SSE stream SHOULD eventually include a JSON-RPC response for the JSON-RPC request sent in
    the POST body." In 2026-07-28 the request is lost and must be re-issued. Example: a
    `tools/call` stream that carries two progress notifications and ends.
    """
    if _event_name(rec) != "stream-closed":
        return None
    cur = _stream_cur(rec, s)
    if cur is None:
        return None
    f = cur.flow
    reason = rec.data.get("reason")
    if f.body_kind is not _KIND_REQUEST or f.answered_seq is not None or f.retry_seen:
        return None
    if reason not in SERVER_ENDS or _cancelled(f, s) or _session_ended(f, s):
        return None
    how = "the server ended it" if reason == "end" else "the server dropped the connection"
    return Hit(
        f"the SSE stream of {f.rpc_method} (seq {f.first_seq}) closed without its response ({how})",
        related_seq=f.first_seq,
    )


@http_rule(
    "MCP709",
    "stream-continues-after-response",
    Severity.WARNING,
    versions=L2_UP,
    scope="http",
    spec=f"{ST}:L124-125; {SH_M}:L125",
)
def stream_continues_after_response(rec: Record, m: Analysed | None, s):
    """A request's SSE stream carries more events after the final response, or stays open more than
    a second after it (the server ended it late).

    "After the JSON-RPC response has been sent, the server SHOULD terminate the SSE stream."
    Example: a progress notification after the result, on the same stream.
    """
    cur = _stream_cur(rec, s)
    if cur is None or cur.flow.method != "POST":
        return None
    f = cur.flow
    if cur.after_answer:
        return Hit(
            f"an SSE event after the final response (seq {f.answered_seq}) on the same stream",
            related_seq=f.answered_seq,
        )
    if _event_name(rec) == "stream-closed" and f.answered_seq is not None and rec.data.get("reason") == "end":
        late = (rec.t_ns - f.t_answered) / 1e6
        if late > STAYS_OPEN_MS:
            return Hit(
                f"the stream stayed open {late:.0f} ms after the final response (seq {f.answered_seq})",
                related_seq=f.answered_seq,
            )
    return None
