"""MCP420-MCP424: list-changed notifications against the declared capabilities, and L4 tasks."""

from __future__ import annotations

from tracer.catalog.registry import rule
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import Analysed, Direction, Hit, Kind, Severity
from tracer.pairing import cancelled_target
from tracer.protocol import ALL, LEG
from tracer.rules.mcp41_capabilities import L4_ONLY, LIFE, NOTE, REQUEST, _has, _where_declared, subscribed
from tracer.tracking import client_caps, server_caps

_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}


_TASK_CAP = {
    "tools/call": (Direction.S2C, ("tasks", "requests", "tools", "call")),
    "sampling/createMessage": (Direction.C2S, ("tasks", "requests", "sampling", "createMessage")),
    "elicitation/create": (Direction.C2S, ("tasks", "requests", "elicitation", "create")),
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
    if m.rec.dir is not _DIR_S2C:
        return None
    caps = server_caps(m, s)
    feature = _LIST_CHANGED[m.method]
    if caps is None:
        return None
    node = caps.get(feature)
    if type(node) is dict and node.get("listChanged") is True:
        return None
    return Hit(f"{m.method} without {feature}.listChanged: true in {_where_declared(m, s)}", path="$.method")


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
        if m.rec.dir is not _DIR_C2S:
            return None
        caps = client_caps(m, s)
        if caps is None or (type(caps.get("roots")) is dict and caps["roots"].get("listChanged") is True):
            return None
        return Hit(
            "roots/list_changed without roots.listChanged: true in the client's initialize capabilities",
            path="$.method",
            related_seq=s.init.request_seq,
        )
    if m.rec.dir is not _DIR_S2C or s.init is None:
        return None
    uri = (m.params or {}).get("uri")
    if type(uri) is str and not subscribed(uri, s.track.resource_subs):
        return Hit(
            f"resources/updated for {uri!r}, which the client never subscribed to", path="$.params.uri"
        )
    return None


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
    if params is None or m.rec.dir is not _DIR_C2S:
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
    caps = server_caps(m, s) if receiver is _DIR_S2C else client_caps(m, s)
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
