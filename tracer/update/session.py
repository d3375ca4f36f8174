"""The session's own facts, after the rules read them: message counters, the legacy handshake
(`initialize`, `notifications/initialized`), the `server/discover` probe, cancels, and the
tracking tables (tracer.update.tracking). Also an HTTP exchange that answers a request without a
JSON-RPC body (a 403 page, a 500)."""

from __future__ import annotations

from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import ERA_LEGACY as _ERA_LEGACY
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_ERROR as _KIND_ERROR
from tracer.model import KIND_INVALID as _KIND_INVALID
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed, Record
from tracer.pairing import PairStatus
from tracer.session import DiscoverState, InitState, Session
from tracer.update.pairing import answered_at_http_level, note_cancel
from tracer.update.tracking import apply as apply_tracking


def after_rules(m: Analysed, s: Session) -> None:
    """Update the session with what this message established (after the rules read it)."""
    rec = m.rec
    direction = rec.dir
    kind = m.kind
    s.messages += 1
    s.last_t_ns = rec.t_ns
    method = m.method
    if m.era is _ERA_MODERN and kind is _KIND_REQUEST:
        s.modern_requests += 1
    elif m.era is _ERA_LEGACY and method != "initialize" and m.answers_method != "initialize":
        # the handshake's own messages are not legacy traffic of their own: a rejected
        # initialize must not make a session that goes on in the modern era legacy
        s.legacy_messages += 1
    if kind is _KIND_REQUEST:
        if direction is _DIR_C2S and s.first_c2s is None:
            s.first_c2s = m
        if method == "initialize":
            # only a legacy initialize opens a handshake: one carrying modern _meta is a modern
            # request for a removed method (MCP210), which a modern server rightly rejects
            if m.era is not _ERA_MODERN:
                s.inits += 1
                if s.init is None or s.init.error_seq is not None:  # a retry after a failed one restarts
                    params = m.params or {}
                    pv = params.get("protocolVersion")
                    caps = params.get("capabilities")
                    s.init = InitState(
                        rec.seq,
                        m.id,
                        pv if type(pv) is str else None,
                        caps if type(caps) is dict else None,
                        params.get("clientInfo"),
                    )
                    s.init.modern_before = s.modern_requests
        elif method == "server/discover" and s.discover is None:
            s.discover = DiscoverState(rec.seq, before_initialize=s.init is None)
        elif (
            direction is _DIR_C2S
            and method != "ping"
            and s.init is not None
            and s.init.result_seq is not None
            and s.init.initialized_seq is None
            and s.init.early_request is None
        ):
            s.init.early_request = s.pending.get((direction, m.idkey))
    elif kind is _KIND_NOTIFICATION:
        if direction is _DIR_C2S and s.first_c2s is None:
            s.first_c2s = m
        if method == "notifications/cancelled":
            note_cancel(m, s)
        elif method == "notifications/initialized" and s.init is not None and s.init.initialized_seq is None:
            s.init.initialized_seq = rec.seq
    elif kind is _KIND_RESULT or kind is _KIND_ERROR:
        req = m.request
        if req is not None and m.pair_status in (PairStatus.PAIRED, PairStatus.AFTER_CANCEL):
            init = s.init
            if req.method == "initialize" and init is not None and init.request_seq == req.seq:
                if kind is _KIND_RESULT:
                    res = m.result or {}
                    pv = res.get("protocolVersion")
                    caps = res.get("capabilities")
                    init.result_seq = rec.seq
                    init.negotiated_version = pv if type(pv) is str else None
                    init.server_caps = caps if type(caps) is dict else None
                    init.server_info = res.get("serverInfo")
                else:
                    init.error_seq = rec.seq
            disc = s.discover
            if req.method == "server/discover" and disc is not None and disc.request_seq == req.seq:
                disc.outcome = "result" if kind is _KIND_RESULT else "error"
                disc.result = m.result
                err = m.error
                code = err.get("code") if err else None
                disc.error_code = code if type(code) is int else None  # (rules compare it, use it as a key)
    if kind is not _KIND_INVALID:
        apply_tracking(m, s)  # capabilities, tools, progress, subscriptions, MRTR rounds...
    if kind is not _KIND_INVALID and direction is not None:
        s.last_kind[direction] = kind
        s.last_seq[direction] = rec.seq


def http_answer(rec: Record, s: Session | None) -> None:
    """An HTTP exchange without a JSON-RPC body that answers a request (a 403 page, a 500): the
    request is answered with an error, and a handshake or probe it carried has failed."""
    for req in answered_at_http_level(rec, s) if s is not None else ():
        init = s.init
        if req.method == "initialize" and init is not None and init.request_seq == req.seq:
            init.error_seq = rec.seq
        disc = s.discover
        if req.method == "server/discover" and disc is not None and disc.request_seq == req.seq:
            disc.outcome = "error"
            disc.error_code = None


def close_session(s: Session) -> None:
    """The session is over (its connection closed, a new recording began, the input ended): from now
    on it is read only (the end-of-session rules, the summary)."""
    s.closed = True
