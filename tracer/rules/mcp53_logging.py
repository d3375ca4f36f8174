"""MCP530-MCP533: logging levels and log messages. The requested level is tracked by the analyser (tracer.tracking)."""

from __future__ import annotations

from tracer.catalog.registry import rule
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import ALL, LOG_LEVEL_RANK, LOGGING_LEVELS, META_LOG_LEVEL, MODERN
from tracer.rules.mcp50_cancellation import NOTE
from tracer.tracking import MISSING, flow_of


def _log_candidates(m: Analysed, s):
    """The client requests a modern log notification may belong to: the request whose HTTP stream
    carries it, else every pending client request (stdio has no per-request stream)."""
    flow = flow_of(m)
    if flow is not None:
        carrier = s.track.flows.get(flow)
        if carrier is not None:
            return [carrier]
    return [r for (d, _), r in s.pending.items() if d is _DIR_C2S]


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
    if m.rec.dir is not _DIR_S2C:
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
    if rank is None or m.rec.dir is not _DIR_S2C:
        return None
    if m.era is _ERA_MODERN:
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
    elif req.era is _ERA_MODERN:
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
