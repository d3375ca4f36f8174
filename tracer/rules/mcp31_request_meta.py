"""MCP310-MCP315 (section 3b): modern per-request and per-result `_meta` (protocol version, client and server info, subscription ids)."""

from __future__ import annotations

from tracer.catalog.registry import not_by_client, not_by_server, rule
from tracer.jsonpath import member
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import KIND_ERROR as _KIND_ERROR
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import (
    LOGGING_LEVELS,
    META_CLIENT_CAPS,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    MODERN,
)
from tracer.rules.mcp30_meta_keys import BASIC, _pending_listens, legacy_server
from tracer.session import Session

REQUEST = (Kind.REQUEST,)


RESULT = (Kind.RESULT,)


_LEVELS = frozenset(LOGGING_LEVELS)


_LISTEN_NOTIFICATIONS = frozenset(
    {
        "notifications/subscriptions/acknowledged",
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/resources/updated",
    }
)


_OK_CAPS: dict = {}


_OK_INFO = {"name": "", "version": ""}


def _client_request(m: Analysed) -> bool:
    return m.rec.dir is not _DIR_S2C


def _implementation_problem(value) -> str | None:
    if type(value) is not dict:
        return "is not an object"
    if type(value.get("name")) is str and type(value.get("version")) is str:
        return None
    missing = [k for k in ("name", "version") if type(value.get(k)) is not str]
    if missing:
        return f"lacks string {' and '.join(missing)}"
    return None


def _missing_required_meta(params) -> bool:
    if type(params) is not dict:
        return True
    meta = params.get("_meta")
    return type(meta) is not dict or META_PROTOCOL_VERSION not in meta or META_CLIENT_CAPS not in meta


def _on_listen_stream(m: Analysed, s: Session) -> bool:
    """Whether a server notification travels on a `subscriptions/listen` stream: the
    acknowledgment always does; on HTTP, any notification in the SSE response of a listen POST;
    elsewhere (stdio), list_changed / resources/updated while a listen is open (modern servers
    deliver those only on listen streams)."""
    if m.method == "notifications/subscriptions/acknowledged":
        return True
    listens = _pending_listens(s)
    if not listens:
        return False
    http = m.rec.http
    flow = http.get("flow") if http else None
    if flow is None:
        return True
    for req in listens:
        rhttp = req.msg.rec.http if req.msg is not None else None
        if rhttp and rhttp.get("flow") == flow:
            return True
    return False


@rule(
    "MCP310",
    "modern-request-missing-meta",
    Severity.ERROR,
    versions=MODERN,
    kinds=REQUEST,
    possible=not_by_server,
    spec=f"{BASIC}:L365-382; schema/2026-07-28/schema.ts:L63-98 (RequestParams._meta required)",
)
def modern_request_missing_meta(m: Analysed, s: Session):
    """A modern request lacks `params`, `params._meta`, or the required per-request fields
    `io.modelcontextprotocol/protocolVersion` and `io.modelcontextprotocol/clientCapabilities`
    (every request, `server/discover` and `subscriptions/listen` included).

    "fields marked as required MUST be included on every request"; the server MUST reject such a
    request with -32602. Example: `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`.
    """
    if not _client_request(m):
        return None
    obj = m.obj
    params = obj.get("params")
    if type(params) is not dict:
        if "params" in obj:
            return None  # params that are not an object: MCP107
        return [
            Hit(
                f"modern {m.method} request has no params (params._meta with protocolVersion "
                "and clientCapabilities is required)",
                path="$",
            )
        ]
    meta = params.get("_meta")
    if type(meta) is not dict:
        if "_meta" in params:
            return None  # not an object: MCP119
        return [
            Hit(
                f"modern {m.method} request has no params._meta (protocolVersion and "
                "clientCapabilities are required on every request)",
                path="$.params",
            )
        ]
    if META_PROTOCOL_VERSION in meta and META_CLIENT_CAPS in meta:
        return None
    missing = [k for k in (META_PROTOCOL_VERSION, META_CLIENT_CAPS) if k not in meta]
    return [
        Hit(f"modern {m.method} request lacks required _meta {' and '.join(missing)}", path="$.params._meta")
    ]


@rule(
    "MCP311",
    "missing-meta-not-rejected",
    Severity.ERROR,
    versions=MODERN,
    kinds=(Kind.RESULT, Kind.ERROR),
    scope="pairing",
    spec=f"{BASIC}:L380-382",
)
def missing_meta_not_rejected(m: Analysed, s: Session):
    """The server does not reject a modern request that lacks the required `_meta` fields
    (protocolVersion, clientCapabilities) with -32602: it answers with a result, or with another
    error code. (-32601 is left alone: the server does not know the method at all. The HTTP
    status of the rejection is MCP747's.)

    "A request missing any required field is malformed; the server MUST reject it with JSON-RPC
    error code -32602 (Invalid params)." Example: `server/discover` without params answered with a
    DiscoverResult.
    """
    req = m.request
    if req is None or req.dir is not _DIR_C2S or not _missing_required_meta(req.params):
        return None
    if m.kind is _KIND_ERROR:
        err = m.error
        code = err.get("code") if err is not None else None
        if code in (-32602, -32601):
            return None
        what = f"error {code!r}"
    else:
        what = "a result"
    return [
        Hit(
            f"the {req.method} request (seq {req.seq}) lacks required _meta fields, yet it was answered "
            f"with {what} instead of -32602 Invalid params",
            related_seq=req.seq,
        )
    ]


@rule(
    "MCP312",
    "modern-request-missing-client-info",
    Severity.WARNING,
    versions=MODERN,
    kinds=REQUEST,
    possible=not_by_server,
    spec=f"{BASIC}:L384-385; schema/2026-07-28/schema.ts:L77-90",
)
def modern_request_missing_client_info(m: Analysed, s: Session):
    """A modern request's `_meta` lacks `io.modelcontextprotocol/clientInfo`. (A request with no
    `_meta` at all is MCP310.)

    "Clients SHOULD include io.modelcontextprotocol/clientInfo on every request unless
    specifically configured not to do so." Example: `_meta` with only protocolVersion and
    clientCapabilities.
    """
    meta = m.meta
    if meta is None or META_CLIENT_INFO in meta or not _client_request(m):
        return None
    return [Hit(f"modern {m.method} request has no _meta {META_CLIENT_INFO}", path="$.params._meta")]


@rule(
    "MCP313",
    "modern-meta-field-wrong-type",
    Severity.ERROR,
    versions=MODERN,
    kinds=(Kind.REQUEST, Kind.RESULT),
    spec="schema/2026-07-28/schema.ts:L63-107, Implementation L976-1000, LoggingLevel L2075",
)
def modern_meta_field_wrong_type(m: Analysed, s: Session):
    """A per-request or per-result `_meta` field has the wrong type: `protocolVersion` not a
    string, `clientCapabilities` not an object, `clientInfo` / `serverInfo` not an
    `Implementation` (`name` and `version` strings), `logLevel` not one of the eight levels.

    The schema types these fields (RequestMetaObject, ResultMetaObject). Example:
    `"io.modelcontextprotocol/logLevel": "verbose"`.
    """
    if m.kind is _KIND_RESULT:
        res = m.result
        meta = res.get("_meta") if res is not None else None
        if type(meta) is not dict or META_SERVER_INFO not in meta:
            return None
        info = meta[META_SERVER_INFO]
        if type(info) is dict and type(info.get("name")) is str and type(info.get("version")) is str:
            return None  # the common case (_implementation_problem, inlined)
        why = _implementation_problem(info)
        if why is None:
            return None
        return [
            Hit(
                f"_meta {META_SERVER_INFO} {why} (an Implementation needs name and version)",
                path=member("$.result._meta", META_SERVER_INFO),
            )
        ]
    meta = m.meta
    if meta is None:
        return None
    base = "$.params._meta"
    pv = meta.get(META_PROTOCOL_VERSION)
    level = meta.get(META_LOG_LEVEL)
    info = meta.get(META_CLIENT_INFO, _OK_INFO)
    if (
        type(pv) is str
        and type(meta.get(META_CLIENT_CAPS, _OK_CAPS)) is dict
        and (level is None or (type(level) is str and level in _LEVELS))
        and type(info) is dict
        and type(info.get("name")) is str
        and type(info.get("version")) is str
    ):
        return None  # the common case: every field present is well typed (_implementation_problem, inlined)
    out = []
    if pv is not None and type(pv) is not str:
        out.append(
            Hit(
                f"_meta {META_PROTOCOL_VERSION} is {type(pv).__name__}, not a string",
                path=member(base, META_PROTOCOL_VERSION),
            )
        )
    if META_CLIENT_CAPS in meta and type(meta[META_CLIENT_CAPS]) is not dict:
        out.append(Hit(f"_meta {META_CLIENT_CAPS} is not an object", path=member(base, META_CLIENT_CAPS)))
    if META_CLIENT_INFO in meta:
        why = _implementation_problem(meta[META_CLIENT_INFO])
        if why is not None:
            out.append(
                Hit(
                    f"_meta {META_CLIENT_INFO} {why} (an Implementation needs name and version)",
                    path=member(base, META_CLIENT_INFO),
                )
            )
    if META_LOG_LEVEL in meta:
        level = meta[META_LOG_LEVEL]
        if type(level) is not str or level not in _LEVELS:
            out.append(
                Hit(
                    f"_meta {META_LOG_LEVEL} {level!r} is not one of {', '.join(LOGGING_LEVELS)}",
                    path=member(base, META_LOG_LEVEL),
                )
            )
    return out


@rule(
    "MCP314",
    "modern-result-missing-server-info",
    Severity.WARNING,
    versions=MODERN,
    kinds=RESULT,
    possible=not_by_client,
    spec=f"{BASIC}:L396-402; schema/2026-07-28/schema.ts:L143-157; "
    "spec/2026-07-28/server/discover.mdx:L98-99",
)
def modern_result_missing_server_info(m: Analysed, s: Session):
    """A modern result's `_meta` lacks `io.modelcontextprotocol/serverInfo`.

    "Servers SHOULD include the following io.modelcontextprotocol/* field in every result's
    _meta, unless specifically configured not to do so". Example: a `tools/list` result with no
    `_meta`.
    """
    if m.rec.dir is _DIR_C2S:
        return None  # a client's result is MCP206
    res = m.result
    if res is None:
        return None
    meta = res.get("_meta")
    if type(meta) is dict and META_SERVER_INFO in meta:
        return None
    if legacy_server(s):
        return None
    return [
        Hit(
            f"result has no _meta {META_SERVER_INFO}",
            path="$.result._meta" if type(meta) is dict else "$.result",
        )
    ]


@rule(
    "MCP315",
    "listen-message-missing-subscription-id",
    Severity.ERROR,
    versions=MODERN,
    kinds=(Kind.NOTIFICATION, Kind.RESULT),
    methods=(*_LISTEN_NOTIFICATIONS, "subscriptions/listen"),
    scope="pairing",
    spec=f"{BASIC}:L412-414; schema/2026-07-28/schema.ts:L120-134, :L1326-1335",
)
def listen_message_missing_subscription_id(m: Analysed, s: Session):
    """A notification delivered on a `subscriptions/listen` stream, or the listen's closing result,
    lacks `_meta["io.modelcontextprotocol/subscriptionId"]`. See also MCP541 (wrong value).

    "On notifications delivered via a subscriptions/listen stream, the server MUST include
    io.modelcontextprotocol/subscriptionId in _meta". Example:
    `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{}}}`.
    """
    if m.kind is _KIND_RESULT:
        res = m.result
        if res is None:
            return None
        meta = res.get("_meta")
        if type(meta) is dict and META_SUBSCRIPTION_ID in meta:
            return None
        return [
            Hit(
                f"the closing result of subscriptions/listen has no _meta {META_SUBSCRIPTION_ID}",
                path="$.result._meta" if type(meta) is dict else "$.result",
            )
        ]
    if m.rec.dir is _DIR_C2S or m.method not in _LISTEN_NOTIFICATIONS:
        return None  # a client sending these is MCP208
    meta = m.meta
    if meta is not None and META_SUBSCRIPTION_ID in meta:
        return None
    if not _on_listen_stream(m, s):
        return None  # not on a listen stream at all: MCP544
    return [
        Hit(
            f"{m.method} on a subscriptions/listen stream has no _meta {META_SUBSCRIPTION_ID}",
            path="$.params._meta" if meta is not None else "$.params",
        )
    ]
