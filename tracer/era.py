"""Label each message with its protocol era, the version it speaks, and the reason.

Modern (2026-07-28) is per request: `params._meta["io.modelcontextprotocol/protocolVersion"]`, a
modern-only method, or an answer to a modern request. Legacy is per session: an `initialize`
handshake and its negotiated version, an `MCP-Protocol-Version` header without `_meta`, or a method
the modern revision removed. Everything else is `unknown`, with the reason.
"""

from __future__ import annotations

from tracer.http.headers import header
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import ERA_LEGACY as _ERA_LEGACY
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import ERA_UNKNOWN as _ERA_UNKNOWN
from tracer.model import KIND_ERROR as _KIND_ERROR
from tracer.model import KIND_INVALID as _KIND_INVALID
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed, Era
from tracer.protocol import (
    ALL,
    LEG,
    LEGACY_ONLY_METHODS,
    LEGACY_VERSIONS,
    META_CLIENT_CAPS,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
    MODERN_ONLY_METHODS,
    MODERN_VERSION,
)
from tracer.session import Session

_MODERN_SET = frozenset({MODERN_VERSION})
_LEGACY_SETS = {v: frozenset({v}) for v in LEGACY_VERSIONS}


def versions_of(era: Era, version: str | None) -> frozenset[str]:
    """Which versions something labelled (era, version) may be speaking."""
    if era is _ERA_MODERN:
        return _MODERN_SET
    if era is _ERA_LEGACY:
        return _LEGACY_SETS.get(version, LEG)
    return ALL


def possible_versions(m: Analysed) -> frozenset[str]:
    """Which versions a message may be speaking, by what its era label knows. A rule runs on a
    message only if it applies to every version the message may be speaking: no guessing."""
    return versions_of(m.era, m.version)


def _header(m: Analysed, name: str) -> str | None:
    http = m.rec.http
    return header(http.get("req_headers"), name) if http else None


def _flow_era(m: Analysed, s: Session) -> tuple[str, int] | None:
    """(method, seq) of the modern request whose HTTP response stream carries M, else None. The
    HTTP updater (tracer.update.http) keeps each flow's request facts in `Session.http`."""
    st = s.http
    fid = m.rec.http.get("flow")
    if st is None or fid is None:
        return None
    try:
        facts = st.flows.get(fid)
    except TypeError:  # an unhashable flow id from a foreign file
        return None
    if facts is None or facts.era is not _ERA_MODERN or facts.body_kind is not _KIND_REQUEST:
        return None
    return facts.rpc_method, facts.first_seq


def label_era(m: Analysed, s: Session) -> None:
    kind = m.kind
    method = m.method
    meta = m.meta if kind is _KIND_REQUEST or kind is _KIND_NOTIFICATION else None
    if meta is not None:
        pv = meta.get(META_PROTOCOL_VERSION)
        if pv is not None:
            m.era = _ERA_MODERN
            m.version = pv if type(pv) is str else None
            # (Analysed.explain_era, inlined here and below on the paths nearly every message takes)
            m._era_why = ("params._meta protocolVersion {!r}", (pv,))
            return
        if (META_CLIENT_CAPS in meta or META_CLIENT_INFO in meta) and kind is _KIND_REQUEST:
            init = s.init
            if (init is None or init.error_seq is not None) and m.rec.dir is _DIR_C2S:
                # request metadata only a 2026-07-28 request carries, outside a legacy handshake: a
                # modern request that lacks its protocolVersion (MCP310), not one of unknown era
                # that no modern rule judges
                m.era = _ERA_MODERN
                m.version = None
                m.explain_era(
                    "params._meta {} without protocolVersion",
                    META_CLIENT_CAPS if META_CLIENT_CAPS in meta else META_CLIENT_INFO,
                )
                return
        if kind is _KIND_NOTIFICATION and META_SUBSCRIPTION_ID in meta:
            # only a modern subscriptions/listen stream tags its notifications this way
            m.era = _ERA_MODERN
            m.version = MODERN_VERSION
            m.explain_era("_meta {} (a modern subscription stream)", META_SUBSCRIPTION_ID)
            return
    if method is not None:
        if method in MODERN_ONLY_METHODS:
            m.era = _ERA_MODERN
            m.version = "2026-07-28"
            m.explain_era("{} exists only in 2026-07-28", method)
            return
        if method == "initialize" and kind is _KIND_REQUEST:
            params = m.params or {}
            requested = params.get("protocolVersion")
            m.era = _ERA_LEGACY
            m.version = requested if type(requested) is str else None
            m.explain_era("initialize handshake (client requests {!r})", requested)
            return
    req = m.request
    if req is not None:  # a response: it speaks the era of the request it answers
        if req.method == "initialize" and kind is _KIND_RESULT:
            res = m.result or {}
            negotiated = res.get("protocolVersion")
            m.era = _ERA_LEGACY
            m.version = negotiated if type(negotiated) is str else req.version
            m.explain_era("answers initialize: negotiated {!r}", negotiated)
            return
        if req.method == "initialize" and kind is _KIND_ERROR and req.era is _ERA_LEGACY:
            m.era = _ERA_LEGACY
            m.version = req.version
            m.explain_era("answers initialize (seq {}) with an error: no session opened", req.seq)
            return
        if req.era is _ERA_MODERN:
            m.era = _ERA_MODERN
            m.version = req.version
            m._era_why = ("answers modern {} (seq {})", (req.method, req.seq))
            return
    if m.rec.http is not None and m.dir is _DIR_S2C and kind is not _KIND_INVALID:
        flow_era = _flow_era(m, s)
        if flow_era is not None:
            m.era = _ERA_MODERN
            m.version = MODERN_VERSION
            m.explain_era("travels on the stream of the modern {} request (seq {})", *flow_era)
            return
    init = s.init
    if init is not None and init.error_seq is None:  # (a rejected initialize opened no session)
        m.era = _ERA_LEGACY
        m.version = s.legacy_version
        if init.negotiated_version:
            m._era_why = (
                "session opened by initialize at seq {} (negotiated {})",
                (init.request_seq, init.negotiated_version),
            )
        else:
            m._era_why = ("session opened by initialize at seq {} (not yet negotiated)", (init.request_seq,))
        return
    header = _header(m, "mcp-protocol-version")
    if header == MODERN_VERSION and m.dir is _DIR_C2S:
        # a modern POST whose body has no _meta (a notification, or a response the client should
        # not send): the header the modern transport requires says which era it is
        m.era = _ERA_MODERN
        m.version = MODERN_VERSION
        m.explain_era("MCP-Protocol-Version header {!r} without _meta", header)
        return
    if header is not None and m.dir is _DIR_C2S:
        m.era = _ERA_LEGACY
        m.version = header
        m.explain_era("MCP-Protocol-Version header {!r} without _meta", header)
        return
    if s.modern_requests and not s.legacy_messages and not _only_a_rejected_probe(s):
        m.era = _ERA_MODERN
        m.version = MODERN_VERSION
        m.era_reason = "session carries modern requests and no initialize"
        return
    if method is not None and method in LEGACY_ONLY_METHODS:
        m.era = _ERA_LEGACY
        m.version = None
        m.explain_era("{} exists only before 2026-07-28 (no initialize captured)", method)
        return
    if req is not None and req.era is _ERA_LEGACY:
        m.era = _ERA_LEGACY
        m.version = req.version
        m.explain_era("answers legacy {} (seq {})", req.method, req.seq)
        return
    if s.legacy_messages and not s.modern_requests:
        m.era = _ERA_LEGACY
        m.version = None
        m.era_reason = "session carries legacy-only traffic and no modern _meta"
        return
    m.era = _ERA_UNKNOWN
    m.version = None
    m.era_reason = "no initialize or per-request _meta seen in this session yet"


def _handshake_open(s: Session) -> bool:
    init = s.init
    return init is not None and init.error_seq is None


def _only_a_rejected_probe(s: Session) -> bool:
    """The session's one modern request was a `server/discover` probe the server rejected: per
    versioning "Backward Compatibility" that identifies a legacy server, so what follows before a
    handshake is not modern traffic by inheritance."""
    disc = s.discover
    return disc is not None and disc.outcome == "error" and s.modern_requests <= 1


def session_versions(s: Session, rec=None) -> frozenset[str]:
    """The versions a connection may be speaking, for a record that carries no message of its own
    (an HTTP exchange, an SSE stream event): the session's era, else the request's
    `MCP-Protocol-Version` header, else every version."""
    if _handshake_open(s):
        return _LEGACY_SETS.get(s.legacy_version, LEG)
    if s.modern_requests and not s.legacy_messages and not _only_a_rejected_probe(s):
        return _MODERN_SET
    http = rec.http if rec is not None else None
    v = header(http.get("req_headers"), "mcp-protocol-version") if http else None
    if v is not None:
        return _MODERN_SET if v == MODERN_VERSION else _LEGACY_SETS.get(v, ALL)
    if s.legacy_messages and not s.modern_requests:
        return LEG
    return ALL
