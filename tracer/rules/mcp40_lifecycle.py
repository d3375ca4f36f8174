"""MCP401-MCP409: the legacy initialize lifecycle (handshake order, its messages, what may travel
before it completes). The handshake state is kept by the analyser in `Session.init` (InitState).
MCP410 (an `initialize` cancelled) opens the capabilities block, mcp41_capabilities.py.
"""

from __future__ import annotations

from tracer.catalog.registry import by_client, end_rule, rule
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import LEG, LEGACY_VERSIONS
from tracer.session import Session

LIFECYCLE = "spec/2025-11-25/basic/lifecycle.mdx"

REQ_NOTE = (Kind.REQUEST, Kind.NOTIFICATION)


def _implementation_problem(value) -> str | None:
    if type(value) is not dict:
        return "is missing" if value is None else "is not an object"
    missing = [k for k in ("name", "version") if type(value.get(k)) is not str]
    return f"lacks string {' and '.join(missing)}" if missing else None


def _handshake_problems(obj: dict, info_key: str, base: str) -> list[Hit]:
    out = []
    pv = obj.get("protocolVersion")
    if type(pv) is not str:
        what = "missing" if pv is None else f"{type(pv).__name__}, not a string"
        out.append(
            Hit(
                f"protocolVersion is {what}",
                path=f"{base}.protocolVersion" if "protocolVersion" in obj else base,
            )
        )
    if type(obj.get("capabilities")) is not dict:
        out.append(
            Hit(
                "capabilities is missing" if "capabilities" not in obj else "capabilities is not an object",
                path=f"{base}.capabilities" if "capabilities" in obj else base,
            )
        )
    why = _implementation_problem(obj.get(info_key))
    if why is not None:
        out.append(
            Hit(
                f"{info_key} {why} (an Implementation needs name and version strings)",
                path=f"{base}.{info_key}" if info_key in obj else base,
            )
        )
    return out


def _requested(m: Analysed):
    req = m.request
    params = req.params if req is not None else None
    pv = params.get("protocolVersion") if params is not None else None
    return pv if type(pv) is str else None


def _early_request_possible(kind, method, direction, versions) -> bool:
    return direction is _DIR_C2S and method not in ("ping", "initialize")


_SERVER_ALLOWED_EARLY = frozenset({"ping", "notifications/message", "notifications/cancelled"})


def _early_server_message_possible(kind, method, direction, versions) -> bool:
    return direction is _DIR_S2C and method not in _SERVER_ALLOWED_EARLY


@rule(
    "MCP401",
    "first-message-not-initialize",
    Severity.ERROR,
    versions=LEG,
    kinds=REQ_NOTE,
    possible=by_client,
    scope="lifecycle",
    spec=f"{LIFECYCLE}:L40, :L47; spec/2024-11-05/basic/lifecycle.mdx:L40, :L47; "
    "probe: spec/2026-07-28/basic/transports/stdio.mdx:L121-137",
)
def first_message_not_initialize(m: Analysed, s: Session):
    """The first client message of a legacy session is not `initialize`. Reported at the
    `initialize` that comes late, or at the first message itself when the capture holds the start
    of the client's stream (stdio offset 0; in a host log, the server's start or first line): a
    capture that starts mid-session is not flagged. A
    dual-era client's modern `server/discover` probe before `initialize` is allowed.

    "The initialization phase MUST be the first interaction between client and server." Example:
    `tools/list` (id 1), then `initialize` (id 2).
    """
    if m.rec.dir is not _DIR_C2S:
        return None
    first = s.first_c2s
    if m.method == "initialize" and m.kind is _KIND_REQUEST:
        if first is None or first.era is _ERA_MODERN or s.inits:
            return None  # initialize is first, follows the modern probe, or is a second one (MCP402)
        return [
            Hit(
                f"initialize is not the first client message: {first.method} came first (seq {first.seq})",
                related_seq=first.seq,
            )
        ]
    if first is not None or m.rec.offset != 0:
        return None
    return [Hit(f"the session's first client message is {m.method}, not initialize", path="$.method")]


@rule(
    "MCP402",
    "second-initialize",
    Severity.WARNING,
    versions=LEG,
    kinds=(Kind.REQUEST,),
    methods=("initialize",),
    scope="lifecycle",
    spec=f"{LIFECYCLE}:L40 (inferred)",
)
def second_initialize(m: Analysed, s: Session):
    """A second `initialize` in the same session (stdio process or `Mcp-Session-Id`). A retry after
    an `initialize` that was answered with an error is not flagged.

    Initialization "MUST be the first interaction"; a session is initialized once. Example: two
    `initialize` requests, the first answered with an InitializeResult.
    """
    init = s.init
    if init is None or init.error_seq is not None or m.rec.dir is not _DIR_C2S:
        return None
    return [
        Hit(
            f"second initialize in this session (the first was seq {init.request_seq})",
            related_seq=init.request_seq,
        )
    ]


@rule(
    "MCP403",
    "initialize-params-incomplete",
    Severity.ERROR,
    versions=LEG,
    kinds=(Kind.REQUEST,),
    methods=("initialize",),
    spec=f"{LIFECYCLE}:L47-51; schema/2025-11-25/schema.ts InitializeRequestParams",
)
def initialize_params_incomplete(m: Analysed, s: Session):
    """`initialize` params lack `protocolVersion`, `capabilities` or `clientInfo` (an
    `Implementation`: `name` and `version`).

    "The client MUST initiate this phase by sending an initialize request containing: protocol
    version supported, client capabilities, client implementation information." Example:
    `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`.
    """
    obj = m.obj
    params = obj.get("params")
    if type(params) is not dict:
        if "params" in obj:
            return None  # params that are not an object: MCP107
        return [
            Hit(
                "initialize has no params (protocolVersion, capabilities and clientInfo are required)",
                path="$",
            )
        ]
    return _handshake_problems(params, "clientInfo", "$.params") or None


@rule(
    "MCP404",
    "initialize-result-incomplete",
    Severity.ERROR,
    versions=LEG,
    kinds=(Kind.RESULT,),
    methods=("initialize",),
    spec=f"{LIFECYCLE}:L98; schema/2025-11-25/schema.ts:L276-292",
)
def initialize_result_incomplete(m: Analysed, s: Session):
    """The `InitializeResult` lacks `protocolVersion`, `capabilities` or `serverInfo` (an
    `Implementation`: `name` and `version`).

    "The server MUST respond with its own capabilities and information". Example:
    `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}`.
    """
    res = m.result
    if res is None:
        return None  # not an object: MCP114
    return _handshake_problems(res, "serverInfo", "$.result") or None


@rule(
    "MCP405",
    "negotiated-version-differs",
    Severity.INFO,
    versions=LEG,
    kinds=(Kind.RESULT,),
    methods=("initialize",),
    scope="lifecycle",
    spec=f"{LIFECYCLE}:L167-172",
)
def negotiated_version_differs(m: Analysed, s: Session):
    """The negotiated version (`InitializeResult.protocolVersion`) differs from the one the client
    requested. Allowed when the server does not support the requested version; the session speaks
    the negotiated one.

    "If the server supports the requested protocol version, it MUST respond with the same
    version. Otherwise, the server MUST respond with another protocol version it supports."
    Example: the client requests 2025-11-25, the server answers 2025-06-18.
    """
    res = m.result
    negotiated = res.get("protocolVersion") if res is not None else None
    requested = _requested(m)
    if type(negotiated) is not str or requested is None or negotiated == requested:
        return None
    return [
        Hit(
            f"the client requested {requested}, the server negotiated {negotiated}; the session "
            f"speaks {negotiated}",
            path="$.result.protocolVersion",
            related_seq=m.partner_seq,
        )
    ]


@rule(
    "MCP406",
    "negotiated-version-unknown",
    Severity.WARNING,
    versions=LEG,
    kinds=(Kind.RESULT, Kind.NOTIFICATION),
    methods=("initialize", "notifications/initialized"),
    scope="lifecycle",
    spec=f"{LIFECYCLE}:L174-175; schema/2025-11-25/schema.ts:L281 (inferred)",
)
def negotiated_version_unknown(m: Analysed, s: Session):
    """`InitializeResult.protocolVersion` is not a handshake-era MCP version (2024-11-05,
    2025-03-26, 2025-06-18, 2025-11-25); and, at its `notifications/initialized`, the client keeps
    operating although it cannot have offered that version. (A known version other than the
    requested one is MCP405: clients often support several, so continuing is not flagged.)

    "If the client does not support the version in the server's response, it SHOULD disconnect."
    Example: `"protocolVersion": "2025-13-01"` in the InitializeResult, then `notifications/initialized`.
    """
    if m.kind is _KIND_NOTIFICATION:
        init = s.init
        v = init.negotiated_version if init is not None and init.result_seq is not None else None
        if v is None or v in LEGACY_VERSIONS or m.rec.dir is not _DIR_C2S:
            return None
        return [
            Hit(
                f"the client keeps operating although the server negotiated {v!r}, which no "
                "client can have offered",
                related_seq=init.result_seq,
            )
        ]
    res = m.result
    v = res.get("protocolVersion") if res is not None else None
    if type(v) is not str or v in LEGACY_VERSIONS:
        return None
    why = "has no initialize handshake" if v >= "2026-07-28" and len(v) == 10 else "is not an MCP version"
    return [Hit(f"the server negotiated {v!r}, which {why}", path="$.result.protocolVersion")]


@end_rule(
    "MCP407",
    "initialized-never-sent",
    Severity.ERROR,
    versions=LEG,
    scope="lifecycle",
    spec=f"{LIFECYCLE}:L147-155; spec/2024-11-05/basic/lifecycle.mdx:L103",
)
def initialized_never_sent(s: Session, end_t_ns: int):
    """After a successful `initialize` result, the client sends further requests but never sends
    `notifications/initialized` (checked when the session ends; reported at the first such request).

    "After successful initialization, the client MUST send an initialized notification to indicate
    it is ready to begin normal operations." Example: `initialize`, its result, then `tools/list`
    with no `notifications/initialized` anywhere.
    """
    init = s.init
    if init is None or init.result_seq is None or init.initialized_seq is not None:
        return None
    req = init.early_request
    if req is None:
        return None
    return [
        (
            req,
            Hit(
                f"the client sent {req.method} after the initialize result (seq {init.result_seq}) "
                "but never sent notifications/initialized",
                related_seq=init.result_seq,
            ),
        )
    ]


@rule(
    "MCP408",
    "request-before-initialize-result",
    Severity.WARNING,
    versions=LEG,
    kinds=(Kind.REQUEST,),
    possible=_early_request_possible,
    scope="lifecycle",
    spec=f"{LIFECYCLE}:L157-159; spec/2024-11-05/basic/lifecycle.mdx:L113-115",
)
def request_before_initialize_result(m: Analysed, s: Session):
    """The client sends a request other than `ping` while its `initialize` is still unanswered.

    "The client SHOULD NOT send requests other than pings before the server has responded to the
    initialize request." Example: `initialize` (id 1), then `tools/list` (id 2) before id 1 is answered.
    """
    init = s.init
    if (
        init is None
        or init.result_seq is not None
        or init.error_seq is not None
        or m.rec.dir is not _DIR_C2S
        or m.method in ("ping", "initialize")
    ):
        return None
    return [
        Hit(
            f"{m.method} sent before the initialize request (seq {init.request_seq}) was answered",
            path="$.method",
            related_seq=init.request_seq,
        )
    ]


@rule(
    "MCP409",
    "server-message-before-initialized",
    Severity.WARNING,
    versions=LEG,
    kinds=REQ_NOTE,
    possible=_early_server_message_possible,
    scope="lifecycle",
    spec=f"{LIFECYCLE}:L160-163; spec/2024-11-05/basic/lifecycle.mdx:L116-118",
)
def server_message_before_initialized(m: Analysed, s: Session):
    """The server sends a request other than `ping`, or a notification other than logging, before
    it has received `notifications/initialized`. Only sessions whose `initialize` was captured (and
    not rejected) are judged.

    "The server SHOULD NOT send requests other than pings and logging before receiving the
    initialized notification." Example: `sampling/createMessage` right after the InitializeResult,
    before the client's `notifications/initialized`.
    """
    init = s.init
    if (
        init is None
        or init.initialized_seq is not None
        or init.error_seq is not None
        or m.rec.dir is not _DIR_S2C
        or m.method in _SERVER_ALLOWED_EARLY
    ):
        return None
    what = "request" if m.kind is _KIND_REQUEST else "notification"
    return [
        Hit(
            f"the server sent the {m.method} {what} before receiving notifications/initialized",
            path="$.method",
            related_seq=init.request_seq,
        )
    ]
