"""MCP410-MCP419: capability negotiation (legacy `initialize`), and the features used without the
capability that allows them; MCP420-MCP424 (list changes, tasks) and MCP430-MCP432 (modern
`server/discover`) are in mcp42_changes_tasks.py and mcp43_discover.py.

MCP411 is the umbrella of MCP412-MCP421 and has no check of its own (see `mcptrace help rules`). Capabilities
come from the session, computed once by the analyser: the `initialize` request and result (legacy)
and the last `server/discover` result (modern, tracer.tracking). Nothing is flagged when the
declaration was not captured.
"""

from __future__ import annotations

from tracer.catalog.registry import rule
from tracer.classify import id_key
from tracer.jsonpath import member
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import ALL, L1, L3, L4, LEG, between, since
from tracer.session import Session
from tracer.tracking import MRTR_METHODS, client_caps, request_client_caps, server_caps

REQUEST = (Kind.REQUEST,)

NOTE = (Kind.NOTIFICATION,)

LIFE = "spec/2025-11-25/basic/lifecycle.mdx:L217-220 (L1-L2: SHOULD)"

L4_ONLY = frozenset({L4})


def negotiated_severity(m: Analysed) -> Severity:
    """MCP411: "MUST" from 2025-06-18 on, "SHOULD" before (and when the version is unknown)."""
    return Severity.ERROR if m.version in (L3, L4) else Severity.WARNING


def _has(caps: dict | None, *path: str) -> bool:
    node = caps
    for key in path:
        if type(node) is not dict or key not in node:
            return False
        node = node[key]
    return node is not None


def _server_asks(m: Analysed, s, cap: str, rule_text: str) -> Hit | None:
    if m.rec.dir is not _DIR_S2C:
        return None
    caps = client_caps(m, s)
    if caps is None or _has(caps, cap):
        return None
    return Hit(
        f"the server sends {m.method} but the client's initialize capabilities (seq "
        f"{s.init.request_seq}) have no {cap}{rule_text}",
        severity=negotiated_severity(m),
        path="$.method",
        related_seq=s.init.request_seq,
    )


def elicitation_gap(caps: dict, params: dict, modes: bool) -> str | None:
    """What an elicitation needs that the capabilities lack (`modes`: 2025-11-25 form/url)."""
    el = caps.get("elicitation")
    if type(el) is not dict:
        return "elicitation"
    if not modes:
        return None
    if params.get("mode") == "url":
        return None if "url" in el else "elicitation.url"
    return None if (not el or "form" in el) else "elicitation.form"


_CONTEXT_VALUES = ("thisServer", "allServers")


def _context_hit(params: dict, caps: dict, path: str, related: int | None) -> Hit | None:
    ctx = params.get("includeContext")
    if ctx in _CONTEXT_VALUES and not _has(caps, "sampling", "context"):
        return Hit(
            f"includeContext {ctx!r} needs the client capability sampling.context (and the value "
            f"is deprecated)",
            path=path,
            related_seq=related,
        )
    return None


# method -> the server capability that must be declared before the client calls it (MCP417)
_FEATURE_CAP = {
    "tools/list": "tools",
    "tools/call": "tools",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "resources/subscribe": "resources",
    "resources/unsubscribe": "resources",
    "completion/complete": "completions",
    "logging/setLevel": "logging",
    "tasks/get": "tasks",
    "tasks/result": "tasks",
    "tasks/list": "tasks",
    "tasks/cancel": "tasks",
}


def _where_declared(m: Analysed, s) -> str:
    if m.era is _ERA_MODERN:
        return f"the server/discover result (seq {s.track.discover_seq})"
    return f"the InitializeResult (seq {s.init.result_seq})"


def subscribed(uri: str, subs) -> bool:
    """A URI is covered by a subscription to it or to a resource it is a sub-resource of."""
    if uri in subs:
        return True
    return any(uri.startswith(sub.rstrip("/") + "/") for sub in subs)


__all__ = ["elicitation_gap", "negotiated_severity", "subscribed"]


@rule(
    "MCP410",
    "initialize-cancelled",
    Severity.ERROR,
    versions=LEG,
    kinds=(Kind.NOTIFICATION,),
    methods=("notifications/cancelled",),
    scope="pairing",
    spec="spec/2025-11-25/basic/utilities/cancellation.mdx:L35; "
    "spec/2024-11-05/basic/utilities/cancellation.mdx:L34; schema/2025-11-25/schema.ts:L238",
)
def initialize_cancelled(m: Analysed, s: Session):
    """`notifications/cancelled` names the `initialize` request.

    "The initialize request MUST NOT be cancelled by clients." Example:
    `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` where id 1 is
    the initialize.
    """
    init = s.init
    params = m.params
    if init is None or params is None or m.rec.dir is not _DIR_C2S:
        return None
    key = id_key(params.get("requestId"))
    if key is None or key != id_key(init.request_id):
        return None
    return [
        Hit(
            f"the client cancels its initialize request (seq {init.request_seq}), which must not "
            "be cancelled",
            path="$.params.requestId",
            related_seq=init.request_seq,
        )
    ]


@rule(
    "MCP412",
    "sampling-without-client-capability",
    Severity.ERROR,
    kinds=REQUEST,
    versions=LEG,
    methods=("sampling/createMessage",),
    scope="lifecycle",
    spec=f"{LIFE}; spec/2025-11-25/client/sampling.mdx:L44",
)
def sampling_without_client_capability(m: Analysed, s):
    """The server sends `sampling/createMessage` although the client's `initialize` capabilities
    lack `sampling`. Both parties MUST only use capabilities that were negotiated (SHOULD before
    2025-06-18, so a warning there).

    Example: `initialize` with `"capabilities": {}`, later a server `sampling/createMessage` request.
    """
    return _server_asks(m, s, "sampling", "")


@rule(
    "MCP413",
    "roots-without-client-capability",
    Severity.ERROR,
    kinds=REQUEST,
    versions=LEG,
    methods=("roots/list",),
    scope="lifecycle",
    spec=f"{LIFE}; spec/2025-11-25/client/roots.mdx:L27, :L185",
)
def roots_without_client_capability(m: Analysed, s):
    """The server sends `roots/list` although the client did not declare `roots` at `initialize`
    (warning before 2025-06-18).

    Example: `initialize` with `"capabilities": {"sampling": {}}`, then a server `roots/list`.
    """
    return _server_asks(m, s, "roots", "")


@rule(
    "MCP414",
    "elicitation-without-client-capability",
    Severity.ERROR,
    kinds=REQUEST,
    versions=between(L3, L4),
    methods=("elicitation/create",),
    scope="lifecycle",
    spec="spec/2025-11-25/client/elicitation.mdx:L51, :L65-77, :L700",
)
def elicitation_without_client_capability(m: Analysed, s):
    """The server sends `elicitation/create` although the client lacks `elicitation`, or (2025-11-25)
    uses a mode the client did not declare: `{}` means form mode only, URL mode needs
    `elicitation.url`. The expected client reaction is -32602.

    Example: `"elicitation": {}` declared, then `elicitation/create` with `"mode": "url"`.
    """
    if m.rec.dir is not _DIR_S2C:
        return None
    caps = client_caps(m, s)
    if caps is None:
        return None
    lack = elicitation_gap(caps, m.params or {}, modes=m.version == L4)
    if lack is None:
        return None
    return Hit(
        f"the server sends elicitation/create but the client did not declare {lack}",
        path="$.params",
        related_seq=s.init.request_seq,
    )


@rule(
    "MCP415",
    "sampling-tools-without-capability",
    Severity.ERROR,
    kinds=REQUEST,
    versions=L4_ONLY,
    methods=("sampling/createMessage",),
    scope="lifecycle",
    spec="spec/2025-11-25/client/sampling.mdx:L40; schema/2026-07-28/schema.ts:L2143-2148",
)
def sampling_tools_without_capability(m: Analysed, s):
    """The server sends `sampling/createMessage` with `tools` or `toolChoice` although the client
    did not declare `sampling.tools`. (The same check for 2026-07-28 input requests is MCP325.)

    Example: `"sampling": {}` declared, then a sampling request with `"tools": [...]`.
    """
    params = m.params
    if m.rec.dir is not _DIR_S2C or params is None or ("tools" not in params and "toolChoice" not in params):
        return None
    caps = client_caps(m, s)
    if caps is None or _has(caps, "sampling", "tools"):
        return None
    return Hit(
        "sampling with tools/toolChoice needs the client capability sampling.tools",
        path="$.params.tools" if "tools" in params else "$.params.toolChoice",
        related_seq=s.init.request_seq,
    )


@rule(
    "MCP416",
    "include-context-without-capability",
    Severity.WARNING,
    kinds=(Kind.REQUEST, Kind.RESULT),
    needs="inputRequests",
    needs_methods=MRTR_METHODS,  # MRTR: only inside inputRequests
    versions=since(L4),
    scope="lifecycle",
    methods=("sampling/createMessage", *MRTR_METHODS),
    spec="spec/2025-11-25/client/sampling.mdx:L82-86; schema/2026-07-28/schema.ts:L2116-2124",
)
def include_context_without_capability(m: Analysed, s):
    """Sampling uses `includeContext` `"thisServer"` or `"allServers"` although the client did not
    declare `sampling.context` (in 2026-07-28: in the input requests of an `InputRequiredResult`,
    checked against that request's `clientCapabilities`). These values are deprecated (MCP905).

    Example: `"sampling": {}` declared, then sampling with `"includeContext": "allServers"`.
    """
    if m.kind is _KIND_REQUEST:
        if m.method != "sampling/createMessage" or m.rec.dir is not _DIR_S2C:
            return None
        caps = client_caps(m, s)
        params = m.params
        if caps is None or params is None:
            return None
        return _context_hit(params, caps, "$.params.includeContext", s.init.request_seq)
    r = m.result
    reqs = r.get("inputRequests") if r is not None and r.get("resultType") == "input_required" else None
    if type(reqs) is not dict:
        return None
    caps = request_client_caps(m.request)
    if caps is None:
        return None
    out = []
    for key, value in reqs.items():
        if type(value) is dict and value.get("method") == "sampling/createMessage":
            params = value.get("params")
            if type(params) is dict:
                hit = _context_hit(
                    params,
                    caps,
                    member("$.result.inputRequests", key) + ".params.includeContext",
                    m.request.seq,
                )
                if hit is not None:
                    out.append(hit)
    return out


@rule(
    "MCP417",
    "feature-without-server-capability",
    Severity.ERROR,
    kinds=REQUEST,
    versions=LEG,
    methods=tuple(_FEATURE_CAP),
    scope="lifecycle",
    spec=f"{LIFE}; spec/2025-11-25/server/tools.mdx:L38; server/prompts.mdx:L30; server/resources.mdx:L32",
)
def feature_without_server_capability(m: Analysed, s):
    """The client calls a server feature the server did not declare in its `InitializeResult`:
    `tools/*` without `tools`, `prompts/*` without `prompts`, `resources/*` without `resources`,
    `completion/complete` without `completions` (2025-03-26 on), `logging/setLevel` without
    `logging`, `tasks/*` without `tasks` (2025-11-25). Warning before 2025-06-18.

    Example: the server declares `{"tools": {}}`, the client sends `prompts/list`.
    """
    if m.rec.dir is not _DIR_C2S:
        return None
    cap = _FEATURE_CAP[m.method]
    if cap == "completions" and m.version == L1:
        return None  # 2024-11-05 had no completions capability
    if cap == "tasks" and m.version != L4:
        return None
    caps = server_caps(m, s)
    if caps is None or _has(caps, cap):
        return None
    return Hit(
        f"{m.method} needs the server capability {cap}, which the InitializeResult (seq "
        f"{s.init.result_seq}) did not declare",
        severity=negotiated_severity(m),
        path="$.method",
        related_seq=s.init.result_seq,
    )


@rule(
    "MCP418",
    "subscribe-without-capability",
    Severity.ERROR,
    kinds=REQUEST,
    versions=LEG,
    methods=("resources/subscribe",),
    scope="lifecycle",
    spec=f"spec/2025-11-25/server/resources.mdx:L45-52; {LIFE}",
)
def subscribe_without_capability(m: Analysed, s):
    """`resources/subscribe` is sent although the server's `resources.subscribe` is not `true`
    (warning before 2025-06-18).

    Example: the server declares `{"resources": {"listChanged": true}}`, the client subscribes.
    """
    caps = server_caps(m, s)
    if caps is None or type(caps.get("resources")) is not dict:
        return None  # no resources at all is MCP417
    if caps["resources"].get("subscribe") is True:
        return None
    return Hit(
        "resources/subscribe needs resources.subscribe: true in the server's capabilities",
        severity=negotiated_severity(m),
        path="$.method",
        related_seq=s.init.result_seq,
    )


@rule(
    "MCP419",
    "log-without-logging-capability",
    Severity.ERROR,
    kinds=NOTE,
    versions=ALL,
    methods=("notifications/message",),
    scope="lifecycle",
    spec="spec/2025-11-25/server/utilities/logging.mdx:L19; spec/2026-07-28/server/utilities/logging.mdx:L32",
)
def log_without_logging_capability(m: Analysed, s):
    """The server emits `notifications/message` without having declared `logging` (legacy: in the
    `InitializeResult`; 2026-07-28: in `server/discover`, when a discover result was captured).
    "Servers that emit log message notifications MUST declare the logging capability."

    Example: `InitializeResult` with `"capabilities": {"tools": {}}`, then `notifications/message`.
    """
    if m.rec.dir is not _DIR_S2C:
        return None
    caps = server_caps(m, s)
    if caps is None or _has(caps, "logging"):
        return None
    return Hit(
        f"log messages need the logging capability, which {_where_declared(m, s)} did not declare",
        path="$.method",
    )
