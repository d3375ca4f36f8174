"""Session facts beyond the handshake: capabilities from `server/discover`, the last `tools/list`, list
pagination, progress tokens, log level, subscriptions, MRTR rounds, elicitation ids, HTTP flows.

Read-only: the facts live in `Session.track` (types in tracer.state.tracking), written only by
tracer.update.tracking; rules read them through the pure helpers and queries here.
"""

from __future__ import annotations

import json
from typing import Any

from tracer.classify import id_key
from tracer.jsonpath import member
from tracer.model import ERA_MODERN as _ERA_MODERN  # (enum members as globals: tracer.model)
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed
from tracer.session import PendingRequest, Session
from tracer.state.tracking import MISSING, TRACK_CAP, Listen, Round, Tracking

__all__ = ["MISSING", "TRACK_CAP", "Listen", "Round", "Tracking"]  # (the types, for the rules that name them)

MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
PAGINATED_METHODS = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "tasks/list"}
)


def token_key(value: Any) -> tuple | None:
    """A progress token with its JSON type (`1` and `"1"` are different tokens), or None."""
    if type(value) is bool:
        return None
    return id_key(value)


def flow_of(m: Analysed) -> Any:
    """The HTTP exchange a message travelled in (the POST it was the body of, or whose SSE
    response stream carried it), or None outside HTTP."""
    http = m.rec.http
    return http.get("flow") if http else None


def is_input_required(result: dict | None) -> bool:
    return result is not None and result.get("resultType") == "input_required"


def retry_key(method: str | None, params: dict | None) -> tuple | None:
    """What identifies "the same request" across MRTR rounds: method plus name/uri plus arguments
    (RULES.md MCP329's inferred correlation)."""
    if method not in MRTR_METHODS or params is None:
        return None
    target = params.get("uri") if method == "resources/read" else params.get("name")
    if type(target) is not str:
        return None
    args = params.get("arguments")
    return (method, target, canonical(args) if args is not None else "")


def canonical(value: Any) -> str:
    """A stable text form of a JSON value (sorted keys) for equality across messages."""
    import orjson

    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # integers beyond 64 bits
        return json.dumps(value, sort_keys=True, separators=(",", ":"))


# -- capabilities ------------------------------------------------------------------------------


def server_caps(m: Analysed, s: Session) -> dict | None:
    """The server's declared capabilities as far as this message's era knows them: legacy from
    the InitializeResult, modern from the last `server/discover` result. None: not observed."""
    if m.era is _ERA_MODERN:
        return s.track.discover_caps
    init = s.init
    if init is not None and init.result_seq is not None:
        return init.server_caps if init.server_caps is not None else {}
    return None


def client_caps(m: Analysed, s: Session) -> dict | None:
    """Legacy: the client's `initialize` capabilities (None when no initialize was captured)."""
    init = s.init
    if init is not None:
        return init.client_caps if init.client_caps is not None else {}
    return None


def request_client_caps(req: PendingRequest | None) -> dict | None:
    """Modern: the per-request `clientCapabilities` of a request."""
    if req is None:
        return None
    meta = req.meta
    if meta is None:
        return None
    caps = meta.get("io.modelcontextprotocol/clientCapabilities")
    return caps if type(caps) is dict else None


# -- deprecated features (MCP905) --------------------------------------------------------------

_DEPRECATED_INPUTS = {"sampling/createMessage": "Sampling", "roots/list": "Roots"}

_NO_USES: tuple[()] = ()  # (shared: nearly every message uses no deprecated feature)


def deprecated_uses(m: Analysed) -> list[tuple[str, str, str]] | tuple[()]:
    """(feature, JSON path, what) for each 2026-07-28 deprecated feature this modern message uses:
    Roots, Sampling and Logging (SEP-2577) and sampling's includeContext thisServer/allServers."""
    if m.era is not _ERA_MODERN:
        return _NO_USES
    kind = m.kind
    if kind is _KIND_REQUEST:
        meta = m.meta
        if meta is not None and "io.modelcontextprotocol/logLevel" in meta:
            return [("Logging", "$.params._meta", "the request asks for log messages (logLevel)")]
        return _NO_USES
    if kind is _KIND_NOTIFICATION:
        if m.method == "notifications/message":
            return [("Logging", "$.method", "the server sends log messages")]
        return _NO_USES
    r = m.result if kind is _KIND_RESULT else None
    reqs = r.get("inputRequests") if r is not None and r.get("resultType") == "input_required" else None
    if type(reqs) is not dict:
        return _NO_USES
    out = []
    for key, value in reqs.items():
        method = value.get("method") if type(value) is dict else None
        feature = _DEPRECATED_INPUTS.get(method) if type(method) is str else None
        if feature is None:
            continue
        path = member("$.result.inputRequests", key)
        out.append((feature, path, f"the server asks for {method}"))
        params = value.get("params")
        ctx = params.get("includeContext") if type(params) is dict else None
        if ctx in ("thisServer", "allServers"):
            out.append(
                ("includeContext", path + ".params.includeContext", f"sampling with includeContext {ctx!r}")
            )
    return out


def listen_of(m: Analysed, t: Tracking) -> Listen | None:
    """The listen a server notification names in `_meta` subscriptionId (value and type)."""
    meta = m.meta
    if meta is None:
        return None
    key = id_key(meta.get("io.modelcontextprotocol/subscriptionId"))
    return t.listens.get(key) if key is not None else None
