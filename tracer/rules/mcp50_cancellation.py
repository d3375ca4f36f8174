"""MCP501-MCP506: cancellation (a cancel naming no request, an unknown or answered one, a message
after its cancel, server cancels outside a listen, cancels over HTTP). Progress, ping and logging
are mcp51_progress.py, mcp52_ping.py and mcp53_logging.py.

Progress tokens, log levels and the requests a cancel can name are tracked by the analyser
(tracer.tracking, tracer.pairing); these rules only read them.
"""

from __future__ import annotations

from tracer.catalog.registry import rule
from tracer.classify import id_key
from tracer.http.state import endpoint_request
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.pairing import PairStatus, cancelled_target
from tracer.protocol import (
    MODERN,
)
from tracer.tracking import token_key


def _cancelled_progress_request(m: Analysed, s):
    """The cancelled request a `notifications/progress` reports on (by its progressToken), or None."""
    params = m.params
    tok = token_key(params.get("progressToken")) if params is not None else None
    if tok is None or m.rec.dir is None:
        return None
    requester = m.rec.dir.other
    for req in s.pending.values():
        if req.cancelled_seq is not None and req.dir is requester:
            meta = req.meta
            if meta is not None and token_key(meta.get("progressToken")) == tok:
                return req
    return None


NOTE = (Kind.NOTIFICATION,)

REQUEST = (Kind.REQUEST,)

CANCEL = ("notifications/cancelled",)


CANCELLATION = "spec/2025-11-25/basic/utilities/cancellation.mdx"


RACE_MS = 50  # a cancel this soon after the response may have crossed it on the wire


@rule(
    "MCP501",
    "cancel-without-request-id",
    Severity.ERROR,
    kinds=NOTE,
    methods=CANCEL,
    spec="schema/2026-07-28/schema.ts:L620-627; schema/2025-11-25/schema.ts:L215-223",
)
def cancel_without_request_id(m: Analysed, s):
    """`notifications/cancelled` has no `params.requestId`, so it cancels nothing. (In 2025-11-25
    the field is optional only because tasks are cancelled with `tasks/cancel`; it "MUST be provided
    for cancelling non-task requests".)

    Example: `{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"reason": "x"}}`.
    """
    params = m.params
    if params is None or params.get("requestId") is None:
        return Hit(
            "notifications/cancelled must name the request it cancels in params.requestId", path="$.params"
        )
    return None


@rule(
    "MCP502",
    "cancel-unknown-request",
    Severity.ERROR,
    kinds=NOTE,
    methods=CANCEL,
    scope="pairing",
    spec=f"{CANCELLATION}:L32-34; spec/2026-07-28/basic/patterns/cancellation.mdx:L68-70",
)
def cancel_unknown_request(m: Analysed, s):
    """`notifications/cancelled` names a request id its sender never issued (in that direction) in
    this session. (A 2026-07-28 server's cancel of a `subscriptions/listen` is MCP505's business.)

    Stateless 2026-07-28 HTTP has no session: a cancel names a request sent to the same endpoint
    on any connection (the request's own is busy streaming its answer, so a cancel POST takes
    another). That it is POSTed at all is MCP506's business.

    Example: the client cancels `requestId: 99` but never sent a request with id 99.
    """
    params = m.params
    key = id_key(params.get("requestId")) if params is not None else None
    if key is None or m.rec.dir is None:
        return None
    if m.era is _ERA_MODERN and m.rec.dir is _DIR_S2C:
        return None
    direction = m.rec.dir
    if (direction, key) in s.pending or (direction, key) in s.used_ids or (direction, key) in s.cancelled:
        return None
    if m.era is _ERA_MODERN and m.rec.http is not None and endpoint_request(s, m.rec, key) is not None:
        return None  # stateless HTTP: the request went to the same endpoint on another connection
    who = "client" if direction is _DIR_C2S else "server"
    return Hit(
        f"the {who} never sent a request with id {params.get('requestId')!r} in this session",
        path="$.params.requestId",
    )


@rule(
    "MCP503",
    "cancel-after-response",
    Severity.WARNING,
    kinds=NOTE,
    methods=CANCEL,
    scope="pairing",
    spec=f"{CANCELLATION}:L32-34, :L48-53; spec/2026-07-28/basic/patterns/cancellation.mdx:L84-89",
)
def cancel_after_response(m: Analysed, s):
    """`notifications/cancelled` names a request whose response its sender had already received.
    Cancels MUST reference requests "believed to still be in-progress"; as responses and cancels
    cross on the wire, only a cancel sent 50 ms or more after the response is flagged.

    Example: result for id 3 at t=0, `notifications/cancelled` for id 3 at t=2 s.
    """
    req, pending = cancelled_target(m, s)
    if req is None or pending or req.response_t_ns is None:
        return None
    gap_ms = (m.rec.t_ns - req.response_t_ns) / 1e6
    if gap_ms < RACE_MS:
        return None
    return Hit(
        f"request {req.method} id {req.id!r} was already answered (seq {req.response_seq}) "
        f"{gap_ms:.0f} ms before this cancel",
        path="$.params.requestId",
        related_seq=req.response_seq,
    )


@rule(
    "MCP504",
    "message-after-cancel",
    Severity.WARNING,
    kinds=(Kind.RESULT, Kind.ERROR, Kind.NOTIFICATION),
    scope="pairing",
    spec="spec/2025-11-25/basic/utilities/cancellation.mdx:L37-40; spec/2026-07-28/basic/transports/stdio.mdx:L78-83",
)
def message_after_cancel(m: Analysed, s):
    """The receiver keeps sending messages for a request after receiving its
    `notifications/cancelled`: a response, or progress notifications for its progressToken.
    Legacy: SHOULD NOT respond (warning). Modern: MUST NOT send anything more for it (error).
    Races are expected, so a message sent within 50 ms of the cancel is not flagged.

    Example: `notifications/cancelled` for id 4, then a result for id 4 a second later.
    """
    if m.kind is _KIND_NOTIFICATION:
        if m.method != "notifications/progress":
            return None
        req = _cancelled_progress_request(m, s)
        what = "progress reported"
    elif m.pair_status == PairStatus.AFTER_CANCEL:
        req = m.request
        what = "answered"
    else:
        return None
    if req is None:
        return None
    gap_ms = (m.rec.t_ns - (req.cancelled_t_ns or m.rec.t_ns)) / 1e6
    if gap_ms < RACE_MS:
        return None
    sev = Severity.ERROR if m.era is _ERA_MODERN else Severity.WARNING
    return Hit(
        f"{what} {gap_ms:.0f} ms after the requester cancelled {req.method} id {req.id!r} "
        f"(seq {req.cancelled_seq})",
        severity=sev,
        related_seq=req.cancelled_seq,
    )


@rule(
    "MCP505",
    "server-cancel-not-listen",
    Severity.ERROR,
    kinds=NOTE,
    methods=CANCEL,
    versions=MODERN,
    scope="pairing",
    spec="spec/2026-07-28/basic/patterns/cancellation.mdx:L11-14, :L71-72; schema/2026-07-28/schema.ts:L637",
)
def server_cancel_not_listen(m: Analysed, s):
    """A 2026-07-28 server sends `notifications/cancelled` for anything other than an in-flight
    `subscriptions/listen` request. "Servers MUST NOT send notifications/cancelled for any other
    purpose." (The server-sent cancel itself is disputed: spec issue #3348, see MCP545.)

    Example: the server sends `notifications/cancelled` for the client's `tools/call` id 4.
    """
    if m.rec.dir is not _DIR_S2C:
        return None
    params = m.params
    key = id_key(params.get("requestId")) if params is not None else None
    if key is None:
        return None
    req = s.pending.get((_DIR_C2S, key))
    if req is not None and req.method == "subscriptions/listen":
        return None
    what = f"the client's {req.method} request" if req is not None else "no in-flight subscriptions/listen"
    return Hit(
        f"a modern server may cancel only an in-flight subscriptions/listen; requestId names {what}",
        path="$.params.requestId",
        related_seq=req.seq if req is not None else None,
    )


@rule(
    "MCP506",
    "cancel-posted-over-http",
    Severity.WARNING,
    kinds=NOTE,
    methods=CANCEL,
    versions=MODERN,
    scope="http",
    spec="spec/2026-07-28/basic/transports/streamable-http.mdx:L93-103; "
    "spec/2026-07-28/basic/patterns/cancellation.mdx:L36-40",
)
def cancel_posted_over_http(m: Analysed, s):
    """(inferred) A 2026-07-28 client POSTs `notifications/cancelled` over Streamable HTTP. There,
    closing the request's SSE response stream is the cancellation signal and "no
    notifications/cancelled message is required or expected".

    Example: `POST /mcp` with body `{"jsonrpc":"2.0","method":"notifications/cancelled",...}`.
    """
    if m.rec.dir is _DIR_C2S and m.rec.http is not None:
        return Hit(
            "over Streamable HTTP, cancel a request by closing its response stream, not with "
            "notifications/cancelled",
            path="$.method",
        )
    return None
