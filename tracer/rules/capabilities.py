"""MCP412-MCP432: capability negotiation (legacy `initialize`, modern `server/discover`), L4 tasks.

MCP411 is the umbrella of MCP412-MCP421 and has no check of its own (see the README). Capabilities
come from the session, computed once by the analyser: the `initialize` request and result (legacy)
and the last `server/discover` result (modern, tracer.tracking). Nothing is flagged when the
declaration was not captured.
"""

from __future__ import annotations

from tracer.model import Analysed, Direction, Era, Hit, Kind, Severity
from tracer.pairing import cancelled_target
from tracer.protocol import ALL, L1, L3, L4, LEG, MODERN, between, since
from tracer.rules.registry import RESPONSES, rule
from tracer.tracking import MRTR_METHODS, client_caps, member, request_client_caps, server_caps

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
    if m.rec.dir is not Direction.S2C:
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
    if m.rec.dir is not Direction.S2C:
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
    if (
        m.rec.dir is not Direction.S2C
        or params is None
        or ("tools" not in params and "toolChoice" not in params)
    ):
        return None
    caps = client_caps(m, s)
    if caps is None or _has(caps, "sampling", "tools"):
        return None
    return Hit(
        "sampling with tools/toolChoice needs the client capability sampling.tools",
        path="$.params.tools" if "tools" in params else "$.params.toolChoice",
        related_seq=s.init.request_seq,
    )


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
    if m.kind is Kind.REQUEST:
        if m.method != "sampling/createMessage" or m.rec.dir is not Direction.S2C:
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
    if m.rec.dir is not Direction.C2S:
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


def _where_declared(m: Analysed, s) -> str:
    if m.era is Era.MODERN:
        return f"the server/discover result (seq {s.track.discover_seq})"
    return f"the InitializeResult (seq {s.init.result_seq})"


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
    if m.rec.dir is not Direction.S2C:
        return None
    caps = server_caps(m, s)
    if caps is None or _has(caps, "logging"):
        return None
    return Hit(
        f"log messages need the logging capability, which {_where_declared(m, s)} did not declare",
        path="$.method",
    )


_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}


@rule(
    "MCP420",
    "list-changed-not-declared",
    Severity.WARNING,
    kinds=NOTE,
    versions=ALL,
    methods=tuple(_LIST_CHANGED),
    scope="lifecycle",
    spec=f"spec/2025-11-25/server/tools.mdx:L152-154; {LIFE}",
)
def list_changed_not_declared(m: Analysed, s):
    """(inferred) `notifications/{tools,prompts,resources}/list_changed` is sent although that
    feature's `listChanged` was not declared `true` ("servers that declared the listChanged
    capability SHOULD send" it).

    Example: the server declares `{"tools": {}}`, then sends `notifications/tools/list_changed`.
    """
    if m.rec.dir is not Direction.S2C:
        return None
    caps = server_caps(m, s)
    feature = _LIST_CHANGED[m.method]
    if caps is None:
        return None
    node = caps.get(feature)
    if type(node) is dict and node.get("listChanged") is True:
        return None
    return Hit(f"{m.method} without {feature}.listChanged: true in {_where_declared(m, s)}", path="$.method")


def subscribed(uri: str, subs) -> bool:
    """A URI is covered by a subscription to it or to a resource it is a sub-resource of."""
    if uri in subs:
        return True
    return any(uri.startswith(sub.rstrip("/") + "/") for sub in subs)


@rule(
    "MCP421",
    "unsolicited-change-notification",
    Severity.WARNING,
    kinds=NOTE,
    versions=LEG,
    methods=("notifications/roots/list_changed", "notifications/resources/updated"),
    scope="lifecycle",
    spec="spec/2025-11-25/client/roots.mdx:L78; spec/2025-11-25/server/resources.mdx:L223-250",
)
def unsolicited_change_notification(m: Analysed, s):
    """(inferred) The client sends `notifications/roots/list_changed` without having declared
    `roots.listChanged`, or the server sends `notifications/resources/updated` for a URI the client
    never `resources/subscribe`d (sub-resources of a subscribed URI are allowed).

    Example: no `resources/subscribe` at all, then `notifications/resources/updated` for `file:///a`.
    """
    if m.method == "notifications/roots/list_changed":
        if m.rec.dir is not Direction.C2S:
            return None
        caps = client_caps(m, s)
        if caps is None or (type(caps.get("roots")) is dict and caps["roots"].get("listChanged") is True):
            return None
        return Hit(
            "roots/list_changed without roots.listChanged: true in the client's initialize capabilities",
            path="$.method",
            related_seq=s.init.request_seq,
        )
    if m.rec.dir is not Direction.S2C or s.init is None:
        return None
    uri = (m.params or {}).get("uri")
    if type(uri) is str and not subscribed(uri, s.track.resource_subs):
        return Hit(
            f"resources/updated for {uri!r}, which the client never subscribed to", path="$.params.uri"
        )
    return None


_TASK_CAP = {
    "tools/call": (Direction.S2C, ("tasks", "requests", "tools", "call")),
    "sampling/createMessage": (Direction.C2S, ("tasks", "requests", "sampling", "createMessage")),
    "elicitation/create": (Direction.C2S, ("tasks", "requests", "elicitation", "create")),
}


@rule(
    "MCP422",
    "task-augmentation-misuse",
    Severity.ERROR,
    kinds=REQUEST,
    versions=L4_ONLY,
    methods=("tools/call",),
    scope="pairing",
    spec="spec/2025-11-25/basic/utilities/tasks.mdx:L113-117",
)
def task_augmentation_misuse(m: Analysed, s):
    """(2025-11-25 tasks) `tools/call` carries `params.task` although the server lacks
    `tasks.requests.tools.call` or the tool's `execution.taskSupport` is absent or `"forbidden"`;
    or a tool with `taskSupport: "required"` is called without `params.task`.

    Example: the tool `report` has no `execution`; `tools/call` `report` with `"task": {"ttl": 60000}`.
    """
    params = m.params
    if params is None or m.rec.dir is not Direction.C2S:
        return None
    tool = s.track.tool(params.get("name"))
    execution = tool.get("execution") if tool is not None else None
    support = execution.get("taskSupport") if type(execution) is dict else None
    if "task" not in params:
        if support == "required":
            return Hit(
                f'tool {params.get("name")!r} requires task augmentation (taskSupport "required") '
                f"but is called without params.task",
                path="$.params",
            )
        return None
    caps = server_caps(m, s)
    if caps is not None and not _has(caps, "tasks", "requests", "tools", "call"):
        return Hit(
            "params.task is sent but the server did not declare tasks.requests.tools.call",
            path="$.params.task",
        )
    if tool is not None and support in (None, "forbidden"):
        return Hit(
            f"params.task is sent but tool {params.get('name')!r} does not support tasks "
            f"(taskSupport {support or 'absent'}, default forbidden)",
            path="$.params.task",
        )
    return None


@rule(
    "MCP423",
    "task-cancelled-with-notification",
    Severity.ERROR,
    kinds=NOTE,
    versions=L4_ONLY,
    methods=("notifications/cancelled",),
    scope="pairing",
    spec="spec/2025-11-25/basic/utilities/cancellation.mdx:L36; schema/2025-11-25/schema.ts:L219-223",
)
def task_cancelled_with_notification(m: Analysed, s):
    """A task-augmented request is cancelled with `notifications/cancelled`; "the tasks/cancel
    request MUST be used instead". Only requests whose receiver declared task support for that
    request type count (others are processed normally and are no tasks).

    Example: `tools/call` id 4 with `"task": {}` (server declares `tasks.requests.tools.call`), then
    `notifications/cancelled` for id 4.
    """
    req, _ = cancelled_target(m, s)
    if req is None or req.params is None or "task" not in req.params:
        return None
    spec = _TASK_CAP.get(req.method)
    if spec is None:
        return None
    receiver, path = spec
    caps = server_caps(m, s) if receiver is Direction.S2C else client_caps(m, s)
    if caps is None or not _has(caps, *path):
        return None
    return Hit(
        f"request seq {req.seq} is a task; cancel it with tasks/cancel, not notifications/cancelled",
        path="$.params.requestId",
        related_seq=req.seq,
    )


@rule(
    "MCP424",
    "task-result-without-related-task",
    Severity.ERROR,
    kinds=(Kind.RESULT,),
    versions=L4_ONLY,
    methods=("tasks/result",),
    spec="spec/2025-11-25/basic/utilities/tasks.mdx:L470-473, :L742-755",
)
def task_result_without_related_task(m: Analysed, s):
    """A `tasks/result` result lacks `_meta["io.modelcontextprotocol/related-task"]`. "The
    tasks/result operation MUST include this metadata in its response, as the result structure
    itself does not contain the task ID." (Other task-related messages cannot be recognised as such
    without that very key, so only this one is checked.)

    Example: `tasks/result` answered with `{"content": [...]}` and no `_meta`.
    """
    r = m.result
    if r is None:
        return None
    meta = r.get("_meta")
    rel = meta.get("io.modelcontextprotocol/related-task") if type(meta) is dict else None
    if type(rel) is not dict or type(rel.get("taskId")) is not str:
        return Hit(
            "a tasks/result result must carry _meta io.modelcontextprotocol/related-task {taskId}",
            path="$.result._meta",
        )
    return None


_MODERN_FEATURE = {
    "tools/list": "tools",
    "tools/call": "tools",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "completion/complete": "completions",
}


@rule(
    "MCP430",
    "feature-not-in-discover",
    Severity.WARNING,
    kinds=REQUEST,
    versions=MODERN,
    methods=tuple(_MODERN_FEATURE),
    scope="pairing",
    spec="spec/2026-07-28/architecture/index.mdx:L165-171; spec/2026-07-28/server/tools.mdx:L47",
)
def feature_not_in_discover(m: Analysed, s):
    """(inferred) The client calls a feature method (`tools/*`, `prompts/*`, `resources/*`,
    `completion/complete`) although the last `server/discover` result did not advertise that
    capability.

    Example: discover returns `"capabilities": {"tools": {}}`, then the client sends `prompts/list`.
    """
    caps = s.track.discover_caps
    if caps is None or m.rec.dir is not Direction.C2S:
        return None
    cap = _MODERN_FEATURE[m.method]
    if _has(caps, cap):
        return None
    return Hit(
        f"{m.method} needs the {cap} capability, which server/discover (seq {s.track.discover_seq}) "
        f"did not advertise",
        path="$.method",
        related_seq=s.track.discover_seq,
    )


@rule(
    "MCP431",
    "discover-not-implemented",
    Severity.ERROR,
    kinds=RESPONSES,
    versions=MODERN,
    scope="pairing",
    spec="spec/2026-07-28/basic/versioning.mdx:L73-74; spec/2026-07-28/server/discover.mdx:L7-8",
)
def discover_not_implemented(m: Analysed, s):
    """A modern server answers `server/discover` with -32601 (Method not found) while it serves
    other modern requests. Servers MUST implement `server/discover`. Reported once: on the -32601
    if modern results came before it, else on the first modern result after it.

    Example: `server/discover` -> -32601, then `tools/list` with modern `_meta` -> a result.
    """
    t = s.track
    req = m.request
    if req is None or req.era is not Era.MODERN:
        return None
    if req.method == "server/discover":
        err = m.error
        if (
            err is not None
            and err.get("code") == -32601
            and t.modern_results
            and t.discover_missing_seq is None
        ):
            return Hit(
                "server/discover is answered -32601 although this server answers modern requests",
                path="$.error.code",
            )
        return None
    if (
        m.kind is Kind.RESULT
        and t.discover_missing_seq is not None
        and t.modern_results == 0
        and m.pair_status in ("paired", "after-cancel")
    ):
        return Hit(
            f"this server answers modern {req.method} but said server/discover does not exist "
            f"(seq {t.discover_missing_seq})",
            related_seq=t.discover_missing_seq,
        )
    return None


@rule(
    "MCP432",
    "discover-result-incomplete",
    Severity.ERROR,
    kinds=(Kind.RESULT,),
    versions=MODERN,
    methods=("server/discover",),
    spec="schema/2026-07-28/schema.ts:L678-700; spec/2026-07-28/server/discover.mdx:L90-100",
)
def discover_result_incomplete(m: Analysed, s):
    """A `DiscoverResult` lacks `supportedVersions` (an array of strings) or `capabilities` (an
    object). (`ttlMs` and `cacheScope` are MCP340.)

    Example: `{"resultType": "complete", "capabilities": {}, "ttlMs": 0, "cacheScope": "public"}`.
    """
    r = m.result
    if r is None:
        return None
    out = []
    sv = r.get("supportedVersions")
    if type(sv) is not list or not all(type(v) is str for v in sv):
        out.append(
            Hit("supportedVersions must be an array of version strings", path="$.result.supportedVersions")
        )
    if type(r.get("capabilities")) is not dict:
        out.append(Hit("capabilities must be an object", path="$.result.capabilities"))
    return out


__all__ = ["elicitation_gap", "negotiated_severity", "subscribed"]
