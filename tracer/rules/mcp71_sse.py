"""MCP710-MCP717: SSE streams of Streamable HTTP (streams unrelated to a request, responses on the
GET stream, broadcasts, the GET stream's negotiation, event ids, priming, reconnects).

HTTP rules (`fn(rec, m, session)`, see mcp70_http.py); the facts come from
`tracer.http.state`. Events arrive as `s2c` messages (events with data), `sse-event` events
(priming, retry, bare ids), an `endpoint` event (HTTP+SSE), and `stream-open` / `stream-closed`.
"""

from __future__ import annotations

from tracer.catalog.registry import http_rule
from tracer.classify import id_key
from tracer.http.headers import accept_lists, is_sse
from tracer.http.state import current, req_header, state
from tracer.model import DIR_S2C as _DIR_S2C  # (enum members as globals: tracer.model)
from tracer.model import KIND_ERROR as _KIND_ERROR
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed, Hit, Record, Severity
from tracer.protocol import L4, MODERN, between, since
from tracer.rules.mcp72_http_session import _cur

ST = "spec/2025-11-25/basic/transports.mdx"

SH_M = "spec/2026-07-28/basic/transports/streamable-http.mdx"

SSE_L1 = "spec/2024-11-05/basic/transports.mdx"

L2_UP = since("2025-03-26")

L2_L4 = between("2025-03-26", "2025-11-25")

HTTP, HTTP_SSE = "http", "http+sse"


NOT_A_MESSAGE = frozenset({"not-json", "not-utf8", "not-object", "too-deep"})

LISTEN_NOTES = frozenset(
    {
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
        "notifications/cancelled",
    }
)


def _event_name(rec: Record) -> str | None:
    return (rec.data or {}).get("event")


def _stream_cur(rec: Record, s, transport: str = HTTP):
    if rec.transport != transport:
        return None
    cur = current(rec, s)
    return cur if cur is not None and cur.flow is not None and cur.flow.stream else None


def unrelated(m: Analysed, f) -> str | None:
    """Why a server message on a request's SSE stream does not relate to that request, or None."""
    method = m.method
    if f.rpc_method == "subscriptions/listen":
        return None if method in LISTEN_NOTES else f"{method} on the subscriptions/listen stream"
    params = m.params or {}
    if method == "notifications/progress":
        token = id_key(params.get("progressToken"))
        if f.progress_token is None or token != f.progress_token:
            return f"progress for token {params.get('progressToken')!r}, which {f.rpc_method} did not issue"
        return None
    if method == "notifications/cancelled":
        return None if id_key(params.get("requestId")) == f.idkey else "a cancellation of another request"
    if method in (
        "notifications/message",
        "notifications/tasks/status",
        "notifications/elicitation/complete",
    ):
        return None
    if method in LISTEN_NOTES or method == "notifications/resources/updated":
        return f"{method} is a change notification, not about {f.rpc_method}"
    return None


def _post_stream_message(rec: Record, m: Analysed | None, s):
    if m is None or rec.dir is not _DIR_S2C or rec.sse is None:
        return None
    cur = _stream_cur(rec, s)
    if cur is None or cur.flow.method != "POST" or cur.flow.body_kind is not _KIND_REQUEST:
        return None
    return cur.flow


@http_rule(
    "MCP710",
    "modern-stream-unrelated",
    Severity.ERROR,
    versions=MODERN,
    scope="http",
    spec=f"{SH_M}:L112-124",
)
def modern_stream_unrelated(rec: Record, m: Analysed | None, s):
    """A modern request's SSE response stream carries a JSON-RPC request, or a notification that
    does not relate to the originating request (change notifications belong on a
    `subscriptions/listen` stream).

    "These notifications MUST relate to the originating client request. The server MUST NOT send
    independent JSON-RPC requests on this stream." Example: `notifications/tools/list_changed` on
    a `tools/call` stream.
    """
    f = _post_stream_message(rec, m, s)
    if f is None:
        return None
    if m.kind is _KIND_REQUEST:
        return Hit(
            f"a {m.method} request on the SSE stream of {f.rpc_method}; modern servers send no requests "
            "(input travels in an InputRequiredResult)",
            path="$.method",
        )
    if m.kind is _KIND_NOTIFICATION:
        why = unrelated(m, f)
        if why:
            return Hit(f"unrelated notification on the {f.rpc_method} stream: {why}", path="$.method")
    return None


@http_rule(
    "MCP711",
    "legacy-stream-unrelated",
    Severity.WARNING,
    versions=L2_L4,
    scope="http",
    spec=f"{ST}:L119-121",
)
def legacy_stream_unrelated(rec: Record, m: Analysed | None, s):
    """A notification on a POST's SSE stream does not relate to the originating request (2025-03-26
    .. 2025-11-25: change notifications belong on the GET stream).

    "The server MAY send JSON-RPC requests and notifications before sending the JSON-RPC response.
    These messages SHOULD relate to the originating client request." Example:
    `notifications/resources/list_changed` on a `tools/call` stream.
    """
    f = _post_stream_message(rec, m, s)
    if f is None or m.kind is not _KIND_NOTIFICATION:
        return None
    why = unrelated(m, f)
    return (
        Hit(f"unrelated notification on the {f.rpc_method} stream: {why}", path="$.method") if why else None
    )


@http_rule(
    "MCP712",
    "response-on-get-stream",
    Severity.ERROR,
    versions=L2_L4,
    scope="http",
    spec=f"{ST}:L147-149",
)
def response_on_get_stream(rec: Record, m: Analysed | None, s):
    """The server sends a JSON-RPC response on the GET (listening) stream, other than when the
    client resumes (with `Last-Event-ID`) a stream that belonged to an earlier request.

    "The server MUST NOT send a JSON-RPC response on the stream unless resuming a stream associated
    with a previous client request." Example: a `tools/list` result on the GET stream.
    """
    if m is None or m.kind not in (_KIND_RESULT, _KIND_ERROR) or rec.dir is not _DIR_S2C:
        return None
    cur = _stream_cur(rec, s)
    if cur is None or cur.flow.method != "GET" or req_header(cur.flow, "last-event-id") is not None:
        return None
    return Hit(f"a JSON-RPC {m.kind.value} on the GET stream, which is not a resumption")


@http_rule(
    "MCP713",
    "message-broadcast",
    Severity.ERROR,
    versions=L2_L4,
    scope="http",
    spec=f"{ST}:L158-160",
)
def message_broadcast(rec: Record, m: Analysed | None, s):
    """The same JSON-RPC message (byte for byte, within a second) is sent on more than one stream of
    a session. Replays on a resumed stream are not judged.

    "The server MUST send each of its JSON-RPC messages on only one of the connected streams; that
    is, it MUST NOT broadcast the same message across multiple streams." Example: one
    `notifications/message` on the GET stream and on a POST stream.
    """
    if m is None or rec.transport != HTTP:
        return None
    cur = current(rec, s)
    if cur is None or cur.broadcast_seq is None:
        return None
    return Hit(
        f"the same message was sent on another stream (seq {cur.broadcast_seq})",
        related_seq=cur.broadcast_seq,
    )


@http_rule(
    "MCP714",
    "get-stream-negotiation",
    Severity.ERROR,
    versions=L2_L4,
    scope="http",
    spec=f"{ST}:L135-142",
)
def get_stream_negotiation(rec: Record, m: Analysed | None, s):
    """A GET to the MCP endpoint lacks `Accept: text/event-stream`, or the server answers a GET with
    something other than `text/event-stream` or `405 Method Not Allowed`.

    "The client MUST include an Accept header, listing text/event-stream"; "The server MUST either
    return Content-Type: text/event-stream in response to this HTTP GET, or else return HTTP 405".
    Example: a GET answered `200` with `application/json`. A refusal the spec asks for elsewhere is
    not judged: 400 to a GET without `Mcp-Session-Id` (L209-210, a server that uses sessions, as the
    official SDK servers answer it), 404 to one with it (L211-212, the session ended), 401 or 403
    (authorization, a foreign Origin).
    """
    cur = _cur(rec, s)
    if cur is None or cur.flow.method != "GET":
        return None
    f = cur.flow
    out = []
    if cur.first_of_flow and not accept_lists(req_header(f, "accept"), "text/event-stream"):
        out.append(Hit(f"the GET's Accept ({req_header(f, 'accept')!r}) does not list text/event-stream"))
    if (
        cur.head
        and f.status is not None
        and f.status != 405
        and not (200 <= f.status < 300 and is_sse(f.content_type))
        and not _refusal_asked_elsewhere(f)
    ):
        out.append(
            Hit(
                f"the GET was answered {f.status} {f.content_type or '(no Content-Type)'}; "
                "it must be text/event-stream or 405"
            )
        )
    return out


def _refusal_asked_elsewhere(f) -> bool:
    """A GET's 4xx that another part of the spec requires, whatever the server offers on GET."""
    if f.status in (401, 403):
        return True
    has_session = req_header(f, "mcp-session-id") is not None
    return (f.status == 400 and not has_session) or (f.status == 404 and has_session)


@http_rule(
    "MCP715",
    "sse-id-reused",
    Severity.ERROR,
    versions=L2_L4,
    scope="http",
    spec=f"{ST}:L169-173, :L181-185",
)
def sse_id_reused(rec: Record, m: Analysed | None, s):
    """An SSE event id repeats on another stream of the session (event ids are cursors, unique
    across the session's streams). A resumed stream's replay is not judged.

    "If present, the ID MUST be globally unique across all streams within that session."
    Example: `id: 1` on the first event of every POST stream.
    """
    if rec.transport != HTTP:
        return None
    cur = current(rec, s)
    if cur is None or cur.repeated_id_seq is None:
        return None
    return Hit(
        f"SSE event id {(rec.sse or {}).get('id')!r} was already used on another stream (seq "
        f"{cur.repeated_id_seq})",
        related_seq=cur.repeated_id_seq,
    )


@http_rule(
    "MCP716",
    "stream-not-primed",
    Severity.WARNING,
    versions=frozenset({L4}),
    scope="http",
    spec=f"{ST}:L106-116",
)
def stream_not_primed(rec: Record, m: Analysed | None, s):
    """A POST-initiated SSE stream of a server that uses event ids (so it is resumable) does not
    start with a priming event (an event id with empty data); or the server closes the connection
    before the end of the stream without having sent `retry`. (A server that attaches no event ids
    cannot be resumed, so priming would mean nothing: it is not judged.)

    "The server SHOULD immediately send an SSE event consisting of an event ID and an empty data
    field in order to prime the client to reconnect." Example: `id: 7` + `data: {...}` as the first
    event.
    """
    if _event_name(rec) != "stream-closed":
        return None
    cur = _stream_cur(rec, s)
    if cur is None or cur.flow.method != "POST":
        return None
    f = cur.flow
    if rec.data.get("reason") == "server-closed" and not f.retry_seen and f.answered_seq is None:
        return Hit("the server closed the connection mid-stream without sending a retry field first")
    st = state(s)
    if f.first_event is not None and f.first_event != "priming" and st is not None and st.stream_ids:
        return Hit(
            f"the SSE stream of {f.rpc_method} did not start with a priming event (an id and empty data)"
        )
    return None


@http_rule(
    "MCP717",
    "reconnect-before-retry",
    Severity.ERROR,
    versions=frozenset({L4}),
    scope="http",
    spec=f"{ST}:L114-116",
)
def reconnect_before_retry(rec: Record, m: Analysed | None, s):
    """The client resumes (GET with `Last-Event-ID`) sooner after the stream closed than the
    server's SSE `retry` interval.

    "The client MUST respect the retry field, waiting the given number of milliseconds before
    attempting to reconnect." Example: `retry: 5000`, the stream closes, a GET 40 ms later.
    """
    if rec.transport != HTTP:
        return None
    cur = current(rec, s)
    if cur is None or not cur.first_of_flow or cur.reconnect_gap_ms is None or cur.retry_ms is None:
        return None
    if cur.reconnect_gap_ms < cur.retry_ms:
        return Hit(
            f"the client reconnected {cur.reconnect_gap_ms:.0f} ms after the stream closed; "
            f"the server asked for retry {cur.retry_ms} ms"
        )
    return None
