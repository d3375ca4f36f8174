"""MCP2xx: correlation and direction. Pairing is computed once by the analyser
(tracer.pairing); these rules only read its verdict and the direction tables."""

from __future__ import annotations

from tracer.catalog.registry import RESPONSES, by_client, by_server, end_rule, rule
from tracer.era import possible_versions
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.pairing import PairStatus
from tracer.protocol import (
    ALL,
    DIRECTIONS,
    LEG,
    META_PROTOCOL_VERSION,
    MODERN,
    MODERN_EXTENSION_REQUESTS,
)

REQ_NOTE = (Kind.REQUEST, Kind.NOTIFICATION)

_UNMATCHED = frozenset({PairStatus.UNKNOWN_ID, PairStatus.WRONG_DIRECTION, PairStatus.TYPE_MISMATCH})

_MISPAIRED = _UNMATCHED | {PairStatus.DUPLICATE, PairStatus.ANSWERS_NOTIFICATION}


def _mispaired(m: Analysed, s) -> bool:
    """The gate of MCP203-MCP205: a response that paired plainly (nearly all) concerns none of them."""
    return m.pair_status in _MISPAIRED


def _allowed(versions: frozenset[str], c2s: bool, request: bool) -> frozenset[str]:
    out: set[str] = set()
    for v in versions:
        d = DIRECTIONS[v]
        out |= (d[0] if request else d[1]) if c2s else (d[2] if request else d[3])
    if c2s and request and "2026-07-28" in versions:
        out |= MODERN_EXTENSION_REQUESTS
    return frozenset(out)


def _known(versions: frozenset[str]) -> frozenset[str]:
    out: set[str] = set()
    for v in versions:
        for part in DIRECTIONS[v]:
            out |= part
    if "2026-07-28" in versions:
        out |= MODERN_EXTENSION_REQUESTS
    return frozenset(out)


_KNOWN_CACHE: dict[frozenset[str], frozenset[str]] = {}

_ALLOWED_CACHE: dict[tuple, frozenset[str]] = {}


def known_methods(versions: frozenset[str]) -> frozenset[str]:
    k = _KNOWN_CACHE.get(versions)
    if k is None:
        k = _KNOWN_CACHE[versions] = _known(versions)
    return k


_FINE: set[tuple] = set()  # (versions, method, c2s, request) a known method may travel as


def allowed_methods(versions: frozenset[str], c2s: bool, request: bool) -> frozenset[str]:
    key = (versions, c2s, request)
    a = _ALLOWED_CACHE.get(key)
    if a is None:
        a = _ALLOWED_CACHE[key] = _allowed(versions, c2s, request)
    return a


def _wrong_direction_possible(kind, method, direction, versions) -> bool:
    """MCP208 cannot fire on a method every version allows in that direction and kind."""
    if direction is None or method is None:
        return direction is not None
    return method in known_methods(versions) and method not in allowed_methods(
        versions, direction is _DIR_C2S, kind is _KIND_REQUEST
    )


def _unknown_method_possible(kind, method, direction, versions) -> bool:
    return method is None or (method not in known_methods(versions) and not method.startswith("rpc."))


_REMOVED_IN_MODERN = frozenset(
    {
        "initialize",
        "notifications/initialized",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/roots/list_changed",
        "notifications/elicitation/complete",
        "tasks/list",
        "tasks/result",
        "notifications/tasks/status",
        "sampling/createMessage",
        "elicitation/create",
        "roots/list",
    }
)

NEVER_ANSWERED_GRACE_NS = 0


@rule(
    "MCP201",
    "request-id-reused-in-session",
    Severity.ERROR,
    kinds=(Kind.REQUEST,),
    versions=LEG,
    scope="pairing",
    spec="spec/2025-11-25/basic/index.mdx:L48; spec/2024-11-05/basic/messages.mdx:L28",
)
def request_id_reused_in_session(m: Analysed, s):
    """A sender reuses a request id it already used in the same session, even if the earlier
    request has completed. Ids are tracked per direction.

    A dual-era client's modern `server/discover` probe before `initialize` is not part of the
    legacy session: reusing its id afterwards is fine (modern ids may be reused once answered).

    Example: the client sends `tools/list` with id 1, gets the answer, then `tools/call` with id 1.
    """
    if m.pair_status != PairStatus.REUSE_SESSION and m.pair_status != PairStatus.REUSE_PENDING:
        return None
    earlier = m.request
    if earlier is not None and earlier.era is _ERA_MODERN and earlier.response_seq is not None:
        return None
    return Hit(
        f"{m.pair_reason}; legacy ids must be unique per session",
        path="$.id",
        related_seq=earlier.seq if earlier else None,
    )


@rule(
    "MCP202",
    "request-id-reused-while-pending",
    Severity.ERROR,
    kinds=(Kind.REQUEST,),
    versions=MODERN,
    scope="pairing",
    spec="spec/2026-07-28/basic/index.mdx:L48-49",
)
def request_id_reused_while_pending(m: Analysed, s):
    """A request id is reused while the earlier request with that id still awaits its response.
    Modern ids may be reused only after the response.

    Example: two `tools/call` requests with id 7, the second sent before the first is answered.
    """
    if m.pair_status != PairStatus.REUSE_PENDING:
        return None
    return Hit(
        m.pair_reason or "id reused while pending",
        path="$.id",
        related_seq=m.request.seq if m.request else None,
    )


@rule(
    "MCP203",
    "response-id-unknown",
    Severity.ERROR,
    kinds=RESPONSES,
    scope="pairing",
    gate=_mispaired,
    spec="spec/2026-07-28/basic/index.mdx:L70, :L103; JSON-RPC §5",
)
def response_id_unknown(m: Analysed, s):
    """A response's `id` matches no outstanding request sent in the opposite direction: an unknown
    id, the wrong direction, or a type mismatch (`1` is not `"1"`).

    Example: the server answers id `"1"` to the client's request id `1`.
    """
    if m.pair_status not in _UNMATCHED:
        return None
    return Hit(m.pair_reason or "response id matches no request", path="$.id")


@rule(
    "MCP204",
    "duplicate-response",
    Severity.ERROR,
    kinds=RESPONSES,
    scope="pairing",
    gate=_mispaired,
    spec="JSON-RPC §5; spec/2026-07-28/basic/patterns/index.mdx:L17-18 (inferred)",
)
def duplicate_response(m: Analysed, s):
    """A second response arrives for a request that already has one.

    Example: two results with id 3 for one `tools/call` with id 3.
    """
    if m.pair_status != PairStatus.DUPLICATE:
        return None
    req = m.request
    return Hit(
        m.pair_reason or "duplicate response", path="$.id", related_seq=req.response_seq if req else None
    )


@rule(
    "MCP205",
    "notification-answered",
    Severity.ERROR,
    kinds=RESPONSES,
    scope="pairing",
    gate=_mispaired,
    spec="spec/2026-07-28/basic/index.mdx:L160; spec/2025-11-25/basic/index.mdx:L96; JSON-RPC §4.1",
)
def notification_answered(m: Analysed, s):
    """A receiver answers a notification: a response that correlates with no request, right after a
    notification from the other side. The receiver MUST NOT send a response to a notification.

    Example: `notifications/initialized`, then a result with an id the client never used.
    """
    if m.pair_status != PairStatus.ANSWERS_NOTIFICATION:
        return None
    return Hit(m.pair_reason or "response to a notification", related_seq=m.partner_seq)


@rule(
    "MCP206",
    "modern-client-sends-response",
    Severity.ERROR,
    kinds=RESPONSES,
    versions=MODERN,
    possible=by_client,
    spec="spec/2026-07-28/basic/patterns/index.mdx:L20-21; spec/2026-07-28/basic/transports/stdio.mdx:L35-37",
)
def modern_client_sends_response(m: Analysed, s):
    """The client sends a JSON-RPC response in modern (2026-07-28) traffic. Modern servers send no
    requests, so there is nothing for a client to answer.

    On stdio the same message is MCP805's finding, so it is not reported twice.

    Example: a modern client writes `{"jsonrpc": "2.0", "id": 0, "result": {}}` to the server.
    """
    if m.rec.dir is not _DIR_C2S or m.rec.transport == "stdio":
        return None
    return "a modern client sent a JSON-RPC response; 2026-07-28 servers send no requests"


@rule(
    "MCP207",
    "modern-server-sends-request",
    Severity.ERROR,
    kinds=(Kind.REQUEST,),
    versions=MODERN,
    possible=by_server,
    spec="spec/2026-07-28/basic/patterns/index.mdx:L20; spec/2026-07-28/basic/patterns/mrtr.mdx:L10-13",
)
def modern_server_sends_request(m: Analysed, s):
    """The server sends a JSON-RPC request in modern traffic. Input the server needs (sampling,
    elicitation, roots) travels inside an `InputRequiredResult` instead.

    On stdio the same message is MCP805's finding, so it is not reported twice.

    Example: a modern server writes `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage",...}`.
    """
    if m.rec.dir is not _DIR_S2C or m.rec.transport == "stdio":
        return None
    return Hit(
        f"a modern server sent a {m.method} request; use an InputRequiredResult instead", path="$.method"
    )


@rule(
    "MCP208",
    "method-wrong-direction",
    Severity.ERROR,
    kinds=REQ_NOTE,
    possible=_wrong_direction_possible,
    spec="ClientRequest/ServerRequest/ClientNotification/ServerNotification unions, e.g. schema/2026-07-28/schema.ts:L3153-3185",
)
def method_wrong_direction(m: Analysed, s):
    """A known MCP method travels in the wrong direction for the version (RULES.md Appendix A):
    a client sending `sampling/createMessage` or `notifications/message`, a server sending
    `tools/call`, a modern client sending `notifications/progress`.

    Example: the server writes `{"jsonrpc":"2.0","id":5,"method":"tools/call",...}`.
    """
    rec = m.rec
    if rec.dir is None or rec.dir_inferred:
        return None
    versions = possible_versions(m)
    method = m.method
    c2s = rec.dir is _DIR_C2S
    request = m.kind is _KIND_REQUEST
    # the usual answer in one lookup (it runs on every request and notification); keyed only by
    # known methods, so odd traffic cannot grow the table
    key = (versions, method, c2s, request)
    if key in _FINE:
        return None
    if method not in known_methods(versions):
        return None
    if method in allowed_methods(versions, c2s, request):
        _FINE.add(key)
        return None
    # Sent as the wrong kind (a request method as a notification) is MCP111/MCP112, not this.
    if method in allowed_methods(versions, c2s, not request):
        return None
    who = "client" if c2s else "server"
    return Hit(
        f"a {who} must not send {method} ({'request' if request else 'notification'}) "
        f"in this protocol version",
        path="$.method",
    )


@rule(
    "MCP209",
    "unknown-method",
    Severity.INFO,
    kinds=REQ_NOTE,
    possible=_unknown_method_possible,
    spec="schema/2026-07-28/schema.ts:L345-357 (MethodNotFoundError); JSON-RPC §5.1",
)
def unknown_method(m: Analysed, s):
    """The method is unknown to the version's schema: a custom or extension method, or a method of
    another protocol version. The expected reaction is -32601 (Method not found).

    Example: `{"jsonrpc": "2.0", "id": 1, "method": "acme/reindex"}`.
    """
    method = m.method
    versions = possible_versions(m)
    if method is None or method in known_methods(versions) or method.startswith("rpc."):
        return None
    which = "any MCP version" if versions == ALL else ", ".join(sorted(versions))
    return Hit(f"{method} is not a method of {which} (custom or extension method?)", path="$.method")


@rule(
    "MCP210",
    "removed-method-with-modern-meta",
    Severity.ERROR,
    kinds=REQ_NOTE,
    versions=MODERN,
    possible=lambda kind, method, direction, versions: method is None or method in _REMOVED_IN_MODERN,
    spec="spec/2026-07-28/changelog.mdx:L14-L24, :L53-60; spec/2026-07-28/basic/versioning.mdx:L174-180",
)
def removed_method_with_modern_meta(m: Analysed, s):
    """A message carrying modern `_meta` (protocolVersion 2026-07-28) uses a method the modern
    revision removed: `initialize`, `ping`, `logging/setLevel`, `resources/subscribe`, core tasks,
    top-level `sampling/createMessage` / `elicitation/create` / `roots/list`, and others.

    Example: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`.
    """
    if m.method not in _REMOVED_IN_MODERN:
        return None
    meta = m.meta
    if meta is None or META_PROTOCOL_VERSION not in meta:
        return None
    return Hit(f"{m.method} was removed in 2026-07-28 but is sent with modern _meta", path="$.method")


@end_rule(
    "MCP211",
    "request-never-answered",
    Severity.WARNING,
    scope="pairing",
    spec="JSON-RPC §5; spec/2025-11-25/basic/lifecycle.mdx:L248-252",
)
def request_never_answered(s, end_t_ns: int):
    """A request gets no response before the capture (or its connection) ends.

    A request its sender cancelled (`notifications/cancelled`) is not flagged: the receiver SHOULD
    NOT answer it (2025-11-25 cancellation), and at 2026-07-28 MUST NOT send anything more for it.
    Nor is a `subscriptions/listen` still open: its response "is just an open stream of
    notifications" that lasts until the client ends it; nor a notification method sent with an id
    (MCP111 reports that); nor one that a cancel the proxy could not attribute to one session may
    have named, nor a server's request that an answer it could not attribute may have answered
    (`mcptrace help proxy`, "Connections").

    Example: `tools/call` id 9 with no result or error after it.
    """
    for req in s.pending.values():
        if (
            req.idkey is None
            or req.cancelled_seq is not None
            or req.maybe_cancelled
            or req.method == "subscriptions/listen"
            or req.method.startswith("notifications/")
        ):
            continue
        # an input without times (bare NDJSON) gets no made-up age
        age = f" {max(0, end_t_ns - req.t_ns) / 1e6:.0f} ms" if req.t_ns and end_t_ns else ""
        yield req, Hit(f"{req.method} id {req.id!r} was never answered; pending{age} when the capture ended")
