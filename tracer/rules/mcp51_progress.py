"""MCP510-MCP516: progress tokens and notifications. Tokens are tracked by the analyser (tracer.tracking); these rules only read them."""

from __future__ import annotations

from tracer.catalog.registry import rule
from tracer.model import DIR_S2C as _DIR_S2C  # (enum members as globals: tracer.model)
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import MODERN
from tracer.rules.mcp50_cancellation import NOTE, REQUEST
from tracer.tracking import MISSING, flow_of, token_key

PROGRESS = ("notifications/progress",)


PROGRESS_DOC = "spec/2025-11-25/basic/utilities/progress.mdx"


def _num(v) -> bool:
    t = type(v)
    return t is int or t is float


def _progress_entry(m: Analysed, s):
    """(token key, active entry, finished entry) for a progress notification."""
    params = m.params
    tok = token_key(params.get("progressToken")) if params is not None else None
    if tok is None or m.rec.dir is None:
        return None, None, None
    key = (m.rec.dir.other, tok)
    t = s.track
    return tok, t.progress.get(key), t.progress_done.get(key)


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
    if m.kind is _KIND_NOTIFICATION:
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
    who = "client" if m.rec.dir is _DIR_S2C else "server"
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
    if flow is None or m.rec.dir is not _DIR_S2C:
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
