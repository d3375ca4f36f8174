"""MCP501-MCP533: cancellation, progress, ping and logging. (MCP504, a message after its cancel,
lives in correlation.py; subscriptions are in subscriptions.py.)

Progress tokens, log levels and the requests a cancel can name are tracked by the analyser
(tracer.tracking, tracer.pairing); these rules only read them.
"""

from __future__ import annotations

from tracer.classify import id_key
from tracer.http.state import endpoint_request
from tracer.model import Analysed, Direction, Era, Hit, Kind, Severity
from tracer.pairing import cancelled_target
from tracer.protocol import ALL, LEG, LOG_LEVEL_RANK, LOGGING_LEVELS, META_LOG_LEVEL, MODERN
from tracer.rules.registry import RESPONSES, rule
from tracer.tracking import MISSING, flow_of, token_key

NOTE = (Kind.NOTIFICATION,)
REQUEST = (Kind.REQUEST,)
CANCEL = ("notifications/cancelled",)
PROGRESS = ("notifications/progress",)
CANCELLATION = "spec/2025-11-25/basic/utilities/cancellation.mdx"
PROGRESS_DOC = "spec/2025-11-25/basic/utilities/progress.mdx"
RACE_MS = 50  # a cancel this soon after the response may have crossed it on the wire


def _num(v) -> bool:
    t = type(v)
    return t is int or t is float


# -- cancellation --------------------------------------------------------------------------------


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
    if m.era is Era.MODERN and m.rec.dir is Direction.S2C:
        return None
    direction = m.rec.dir
    if (direction, key) in s.pending or (direction, key) in s.used_ids or (direction, key) in s.cancelled:
        return None
    if m.era is Era.MODERN and m.rec.http is not None and endpoint_request(s, m.rec, key) is not None:
        return None  # stateless HTTP: the request went to the same endpoint on another connection
    who = "client" if direction is Direction.C2S else "server"
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
    if m.rec.dir is not Direction.S2C:
        return None
    params = m.params
    key = id_key(params.get("requestId")) if params is not None else None
    if key is None:
        return None
    req = s.pending.get((Direction.C2S, key))
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
    if m.rec.dir is Direction.C2S and m.rec.http is not None:
        return Hit(
            "over Streamable HTTP, cancel a request by closing its response stream, not with "
            "notifications/cancelled",
            path="$.method",
        )
    return None


# -- progress -------------------------------------------------------------------------------------


def _token_problem(v) -> str | None:
    t = type(v)
    if t is str or t is int:
        return None
    if t is float and v.is_integer():
        return None  # MCP110 warns about 1.0-style integers
    return f"{'a boolean' if t is bool else type(v).__name__ if v is not None else 'null'}"


@rule(
    "MCP510",
    "progress-token-type",
    Severity.ERROR,
    kinds=(Kind.REQUEST, Kind.NOTIFICATION),
    spec="spec/2025-11-25/basic/utilities/progress.mdx:L16; schema.json ProgressToken [string, integer]",
)
def progress_token_type(m: Analysed, s):
    """A `progressToken` (in a request's `_meta` or in `notifications/progress`) is not a string or
    an integer. "Progress tokens MUST be a string or integer value."

    Example: `"_meta": {"progressToken": 1.5}` or `{"progressToken": null}`.
    """
    if m.kind is Kind.NOTIFICATION:
        if m.method != "notifications/progress":
            return None
        holder, path = m.params, "$.params.progressToken"
    else:
        holder, path = m.meta, "$.params._meta.progressToken"
    if holder is None:
        return None
    tok = holder.get("progressToken", MISSING)
    if tok is MISSING:
        return None
    why = _token_problem(tok)
    if why:
        return Hit(f"progressToken must be a string or an integer, not {why}", path=path)
    return None


@rule(
    "MCP511",
    "progress-token-reused",
    Severity.ERROR,
    kinds=REQUEST,
    scope="pairing",
    spec=f"{PROGRESS_DOC}:L17-18; spec/2026-07-28/basic/patterns/progress.mdx:L17-18",
)
def progress_token_reused(m: Analysed, s):
    """A sender uses the same `progressToken` on two requests that are active at the same time.
    Tokens "MUST be unique across all active requests".

    Example: `tools/call` id 1 and id 2, both pending, both with `"progressToken": "p"`.
    """
    meta = m.meta
    if meta is None or "progressToken" not in meta:
        return None
    tok = token_key(meta["progressToken"])
    entry = s.track.progress.get((m.rec.dir, tok)) if tok is not None else None
    if entry is None:
        return None
    return Hit(
        f"progressToken {meta['progressToken']!r} is still in use by the request at seq {entry.req_seq}",
        path="$.params._meta.progressToken",
        related_seq=entry.req_seq,
    )


def _progress_entry(m: Analysed, s):
    """(token key, active entry, finished entry) for a progress notification."""
    params = m.params
    tok = token_key(params.get("progressToken")) if params is not None else None
    if tok is None or m.rec.dir is None:
        return None, None, None
    key = (m.rec.dir.other, tok)
    t = s.track
    return tok, t.progress.get(key), t.progress_done.get(key)


@rule(
    "MCP512",
    "progress-token-unknown",
    Severity.ERROR,
    kinds=NOTE,
    methods=PROGRESS,
    scope="pairing",
    spec=f"{PROGRESS_DOC}:L60-62; spec/2026-07-28/basic/patterns/progress.mdx:L60-62",
)
def progress_token_unknown(m: Analysed, s):
    """`notifications/progress` carries a token that no request from the other side supplied.
    Progress MUST only reference tokens "provided in an active request". (After the request's
    response it is MCP513.)

    Example: the server sends progress for token `"abc"`, but no client request carried it.
    """
    tok, active, done = _progress_entry(m, s)
    if tok is None or active is not None or done is not None:
        return None
    who = "client" if m.rec.dir is Direction.S2C else "server"
    return Hit(
        f"no {who} request supplied progressToken {m.params.get('progressToken')!r}",
        path="$.params.progressToken",
    )


@rule(
    "MCP513",
    "progress-after-response",
    Severity.ERROR,
    kinds=NOTE,
    methods=PROGRESS,
    scope="pairing",
    spec=f"{PROGRESS_DOC}:L94, :L69-71; spec/2026-07-28/basic/patterns/progress.mdx:L90",
)
def progress_after_response(m: Analysed, s):
    """`notifications/progress` arrives after the final response to its request. (2025-11-25
    task-augmented requests are exempt: their progress lasts until the task ends.)

    Example: result for `tools/call` id 5 (token 5), then progress for token 5.
    """
    tok, active, done = _progress_entry(m, s)
    if tok is None or active is not None or done is None or done.task:
        return None
    return Hit(
        f"progress for a request that was already answered (seq {done.done_seq})",
        path="$.params.progressToken",
        related_seq=done.done_seq,
    )


@rule(
    "MCP514",
    "progress-not-increasing",
    Severity.ERROR,
    kinds=NOTE,
    methods=PROGRESS,
    scope="pairing",
    spec=f"{PROGRESS_DOC}:L53; spec/2026-07-28/basic/patterns/progress.mdx:L53",
)
def progress_not_increasing(m: Analysed, s):
    """`progress` does not strictly increase across the notifications of one token. "The progress
    value MUST increase with each notification, even if the total is unknown."

    Example: progress 50, then progress 50 (or 40) for the same token.
    """
    _, active, _ = _progress_entry(m, s)
    if active is None or active.last is None:
        return None
    p = m.params.get("progress")
    if _num(p) and type(p) is not bool and p <= active.last:
        return Hit(
            f"progress {p} does not increase on {active.last} (seq {active.last_seq})",
            path="$.params.progress",
            related_seq=active.last_seq,
        )
    return None


@rule(
    "MCP515",
    "progress-notification-malformed",
    Severity.ERROR,
    kinds=NOTE,
    methods=PROGRESS,
    spec="schema ProgressNotificationParams, e.g. schema/2026-07-28/schema.ts:L1009-1031",
)
def progress_notification_malformed(m: Analysed, s):
    """`notifications/progress` lacks `progressToken`, or `progress` is missing or not a number, or
    `total` is present but not a number.

    Example: `{"method": "notifications/progress", "params": {"progressToken": 1, "progress": "50%"}}`.
    """
    params = m.params
    if params is None:
        return Hit("notifications/progress needs params with progressToken and progress", path="$.params")
    out = []
    if "progressToken" not in params:
        out.append(Hit("progressToken is missing", path="$.params"))
    p = params.get("progress", MISSING)
    if p is MISSING or not _num(p) or type(p) is bool:
        out.append(
            Hit(
                f"progress must be a number, not {'missing' if p is MISSING else repr(p)}",
                path="$.params.progress",
            )
        )
    total = params.get("total", MISSING)
    if total is not MISSING and (not _num(total) or type(total) is bool):
        out.append(Hit(f"total must be a number, not {total!r}", path="$.params.total"))
    return out


@rule(
    "MCP516",
    "request-scoped-notification-on-wrong-stream",
    Severity.ERROR,
    kinds=NOTE,
    methods=("notifications/progress", "notifications/message"),
    versions=MODERN,
    scope="http",
    spec="spec/2026-07-28/basic/transports/streamable-http.mdx:L112-116, :L131-134; "
    "spec/2026-07-28/server/utilities/logging.mdx:L67-72",
)
def request_scoped_notification_on_wrong_stream(m: Analysed, s):
    """Over Streamable HTTP, `notifications/progress` or `notifications/message` is delivered on a
    `subscriptions/listen` stream or on the SSE stream of another request than the one it is about.
    Request-scoped notifications MUST travel on the originating request's response stream.

    Example: progress for the token of `tools/call` A arrives on the SSE response of `tools/call` B.
    """
    flow = flow_of(m)
    if flow is None or m.rec.dir is not Direction.S2C:
        return None
    carrier = s.track.flows.get(flow)
    if carrier is not None and carrier.method == "subscriptions/listen":
        return Hit(
            f"{m.method} is request-scoped and must not be delivered on the subscriptions/listen "
            f"stream (seq {carrier.seq})",
            related_seq=carrier.seq,
        )
    if m.method != "notifications/progress" or carrier is None:
        return None
    _, active, done = _progress_entry(m, s)
    entry = active or done
    if entry is not None and entry.flow is not None and entry.flow != flow:
        return Hit(
            f"progress for the request at seq {entry.req_seq} arrives on the stream of the request "
            f"at seq {carrier.seq}",
            related_seq=entry.req_seq,
        )
    return None


# -- ping -----------------------------------------------------------------------------------------

PING_PROMPT_MS = 1000  # "promptly": the inspector's threshold


@rule(
    "MCP520",
    "ping-answer-not-empty",
    Severity.ERROR,
    kinds=RESPONSES,
    versions=LEG,
    methods=("ping",),
    scope="pairing",
    spec="spec/2025-11-25/basic/utilities/ping.mdx:L29-37; spec/2024-11-05/basic/utilities/ping.mdx:L28",
)
def ping_answer_not_empty(m: Analysed, s):
    """A `ping` is answered with an error, or with a result that has members other than `_meta`.
    "The receiver MUST respond promptly with an empty response."

    Example: `ping` answered with `{"result": {"status": "ok"}}`.
    """
    if m.kind is Kind.ERROR:
        return Hit("a ping must be answered with an empty result, not an error", path="$.error")
    r = m.result
    extra = [k for k in r if k != "_meta"] if r is not None else []
    if extra:
        return Hit(f"a ping's result must be empty; it has {', '.join(extra)}", path="$.result")
    return None


@rule(
    "MCP521",
    "ping-slow",
    Severity.WARNING,
    kinds=RESPONSES,
    versions=LEG,
    methods=("ping",),
    scope="pairing",
    spec="spec/2025-11-25/basic/utilities/ping.mdx:L29, :L57-66",
)
def ping_slow(m: Analysed, s):
    """A `ping` is not answered "promptly": the answer took longer than 1 s (mcptrace's threshold).
    A slow ping usually means a blocked event loop or a stuck peer.

    Example: `ping` at t=0, its empty result at t=3 s.
    """
    if m.latency_ns is not None and m.latency_ns > PING_PROMPT_MS * 1_000_000 and m.pair_status == "paired":
        return Hit(
            f"ping answered after {m.latency_ns / 1e6:.0f} ms (more than {PING_PROMPT_MS} ms)",
            related_seq=m.partner_seq,
        )
    return None


@rule(
    "MCP522",
    "ping-with-params",
    Severity.WARNING,
    kinds=REQUEST,
    versions=LEG,
    methods=("ping",),
    spec="spec/2025-11-25/basic/utilities/ping.mdx:L17-19",
)
def ping_with_params(m: Analysed, s):
    """(inferred) A `ping` request has params other than `_meta`: it is "a standard JSON-RPC request
    with no parameters".

    Example: `{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"echo": "x"}}`.
    """
    params = m.params
    extra = [k for k in params if k != "_meta"] if params is not None else []
    if extra:
        return Hit(f"ping takes no parameters; got {', '.join(extra)}", path="$.params")
    return None


# -- logging --------------------------------------------------------------------------------------


def _log_candidates(m: Analysed, s):
    """The client requests a modern log notification may belong to: the request whose HTTP stream
    carries it, else every pending client request (stdio has no per-request stream)."""
    flow = flow_of(m)
    if flow is not None:
        carrier = s.track.flows.get(flow)
        if carrier is not None:
            return [carrier]
    return [r for (d, _), r in s.pending.items() if d is Direction.C2S]


def _log_level(req) -> str | None:
    meta = req.meta
    level = meta.get(META_LOG_LEVEL) if meta is not None else None
    return level if type(level) is str else None


@rule(
    "MCP530",
    "log-without-requested-level",
    Severity.ERROR,
    kinds=NOTE,
    methods=("notifications/message",),
    versions=MODERN,
    scope="pairing",
    spec="spec/2026-07-28/server/utilities/logging.mdx:L62-64; schema/2026-07-28/schema.ts:L100-104",
)
def log_without_requested_level(m: Analysed, s):
    """A 2026-07-28 server emits `notifications/message` although no request it could belong to
    carries `_meta["io.modelcontextprotocol/logLevel"]`. "The server MUST NOT emit
    notifications/message for a request that does not include this field." (On stdio the request is
    unknown, so any pending request with a level is enough.)

    Example: `tools/call` without `logLevel` in `_meta`, then `notifications/message` before its result.
    """
    if m.rec.dir is not Direction.S2C:
        return None
    cands = _log_candidates(m, s)
    if any(_log_level(r) is not None for r in cands):
        return None
    what = f"the request at seq {cands[0].seq}" if len(cands) == 1 else "no pending request"
    return Hit(
        f"log message, but {what} asked for logs (_meta io.modelcontextprotocol/logLevel)",
        path="$.method",
        related_seq=cands[0].seq if len(cands) == 1 else None,
    )


@rule(
    "MCP531",
    "log-below-requested-level",
    Severity.WARNING,
    kinds=NOTE,
    methods=("notifications/message",),
    scope="pairing",
    spec="spec/2026-07-28/server/utilities/logging.mdx:L65-68; schema/2025-11-25/schema.ts:L1507-1511",
)
def log_below_requested_level(m: Analysed, s):
    """(inferred) `notifications/message` has a level below the requested minimum: in 2026-07-28 the
    `_meta` logLevel of the request(s) it may belong to; before, the last accepted
    `logging/setLevel`.

    Example: `logging/setLevel` `warning`, then a `notifications/message` at level `debug`.
    """
    params = m.params
    level = params.get("level") if params is not None else None
    rank = LOG_LEVEL_RANK.get(level) if type(level) is str else None
    if rank is None or m.rec.dir is not Direction.S2C:
        return None
    if m.era is Era.MODERN:
        ranks = [LOG_LEVEL_RANK.get(lv) for r in _log_candidates(m, s) if (lv := _log_level(r)) is not None]
        ranks = [r for r in ranks if r is not None]
        if ranks and rank < min(ranks):
            return Hit(
                f"level {level!r} is below the requested {LOGGING_LEVELS[min(ranks)]!r}",
                path="$.params.level",
            )
        return None
    floor = s.track.log_level
    if floor in LOG_LEVEL_RANK and rank < LOG_LEVEL_RANK[floor]:
        return Hit(
            f"level {level!r} is below the level {floor!r} set with logging/setLevel", path="$.params.level"
        )
    return None


@rule(
    "MCP532",
    "log-message-malformed",
    Severity.ERROR,
    kinds=(Kind.NOTIFICATION, Kind.REQUEST),
    methods=("notifications/message", "logging/setLevel"),
    spec="schema LoggingMessageNotificationParams, LoggingLevel, e.g. schema/2026-07-28/schema.ts:L2031-2084",
)
def log_message_malformed(m: Analysed, s):
    """`notifications/message` lacks `level` or `data`, or its `level` is not one of debug, info,
    notice, warning, error, critical, alert, emergency; `logging/setLevel`'s `level` follows the
    same enum.

    Example: `{"method": "notifications/message", "params": {"level": "verbose", "data": "x"}}`.
    """
    params = m.params or {}
    out = []
    level = params.get("level", MISSING)
    if level is MISSING:
        out.append(Hit("level is missing", path="$.params"))
    elif type(level) is not str or level not in LOG_LEVEL_RANK:
        out.append(Hit(f"level {level!r} is not one of {', '.join(LOGGING_LEVELS)}", path="$.params.level"))
    if m.method == "notifications/message" and "data" not in params:
        out.append(Hit("data is missing", path="$.params"))
    return out


@rule(
    "MCP533",
    "invalid-log-level-accepted",
    Severity.WARNING,
    kinds=(Kind.RESULT,),
    versions=ALL,
    scope="pairing",
    spec="spec/2026-07-28/server/utilities/logging.mdx:L99-104; "
    "spec/2025-11-25/server/utilities/logging.mdx:L108-113",
)
def invalid_log_level_accepted(m: Analysed, s):
    """An invalid log level is not rejected with -32602: a `logging/setLevel` with an unknown
    `level`, or (2026-07-28) a request whose `_meta` logLevel is unknown, is answered with a result.

    Example: `logging/setLevel` `{"level": "verbose"}` answered with `{}`.
    """
    req = m.request
    if req is None or m.pair_status != "paired":
        return None
    if req.method == "logging/setLevel":
        level = (req.params or {}).get("level")
    elif req.era is Era.MODERN:
        meta = req.meta
        level = meta.get(META_LOG_LEVEL, MISSING) if meta is not None else MISSING
        if level is MISSING:
            return None
    else:
        return None
    if type(level) is str and level in LOG_LEVEL_RANK:
        return None
    return Hit(
        f"the request at seq {req.seq} has the invalid log level {level!r}; expected a -32602 error",
        related_seq=req.seq,
    )
