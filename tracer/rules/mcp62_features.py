"""MCP620-MCP629: server features (resources, prompts, completion, pagination) and client features
(roots, sampling, elicitation).

Legacy servers send client-feature requests as JSON-RPC requests; in 2026-07-28 they travel in an
`InputRequiredResult` (`inputRequests`) and come back in the retry's `inputResponses` (tracer.tracking).
"""

from __future__ import annotations

from tracer.catalog.registry import rule
from tracer.jsonpath import member
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import L3, L4, since
from tracer.rules.mcp60_tools_list import complete
from tracer.rules.mcp61_tool_calls import RESULT, _cursor
from tracer.tracking import MISSING, PAGINATED_METHODS

REQ_RES = (Kind.REQUEST, Kind.RESULT)

MRTR_METHODS = ("tools/call", "prompts/get", "resources/read")


def input_requests(m: Analysed, method: str):
    """(params, JSON path) of every modern input request of `method` in an InputRequiredResult."""
    r = m.result
    if r is None or r.get("resultType") != "input_required":
        return
    reqs = r.get("inputRequests")
    for key, value in reqs.items() if type(reqs) is dict else ():
        if type(value) is dict and value.get("method") == method and type(value.get("params")) is dict:
            yield value["params"], member("$.result.inputRequests", key) + ".params"


def input_responses(m: Analysed, s, method: str):
    """(value, JSON path) of each `inputResponses` value answering its round's `method` request."""
    params = m.params
    got = params.get("inputResponses") if params is not None else None
    if type(got) is not dict or m.idkey is None:
        return
    req = s.pending.get((m.rec.dir, m.idkey))
    rnd = req.retry_of if req is not None else None
    if rnd is None or not rnd.input_requests:
        return
    for key, value in got.items():
        asked = rnd.input_requests.get(key)
        if type(asked) is dict and asked.get("method") == method:
            yield value, member("$.params.inputResponses", key)


def legacy_request(m: Analysed, method: str) -> dict | None:
    """The params of a server->client request of `method` (legacy era)."""
    if m.kind is _KIND_REQUEST and m.method == method and m.rec.dir is _DIR_S2C:
        return m.params or {}
    return None


def legacy_result(m: Analysed, method: str) -> dict | None:
    """A client's result answering a server's `method` request (legacy era)."""
    if m.kind is _KIND_RESULT and m.answers_method == method and m.rec.dir is _DIR_C2S:
        return m.result
    return None


def _roots_hits(value, path: str) -> list:
    roots = value.get("roots") if type(value) is dict else None
    return [
        Hit(f"root uri {root.get('uri')!r} must start with file://", path=f"{path}.roots[{i}].uri")
        for i, root in enumerate(roots if type(roots) is list else ())
        if type(root) is dict and not (type(root.get("uri")) is str and root["uri"].startswith("file://"))
    ]


def _blocks(content) -> list:
    if type(content) is list:
        return [b for b in content if type(b) is dict]
    return [content] if type(content) is dict else []


def tool_message_problems(messages, path: str) -> list:
    out = []
    msgs = messages if type(messages) is list else []
    for i, msg in enumerate(msgs):
        if type(msg) is not dict:
            continue
        blocks = _blocks(msg.get("content"))
        types = {t for b in blocks if type(t := b.get("type")) is str}  # (a list is no type, nor hashable)
        if msg.get("role") == "user" and "tool_result" in types and len(types) > 1:
            out.append(
                Hit(
                    "a user message with tool_result blocks must contain only tool results",
                    path=f"{path}[{i}].content",
                )
            )
        # (an array or object id is no key; the schema rules report it)
        uses = [
            u for b in blocks if b.get("type") == "tool_use" and type(u := b.get("id")) not in (list, dict)
        ]
        if msg.get("role") != "assistant" or not uses or i + 1 >= len(msgs):
            continue
        nxt = msgs[i + 1] if type(msgs[i + 1]) is dict else {}
        nblocks = _blocks(nxt.get("content"))
        answered = {
            u
            for b in nblocks
            if b.get("type") == "tool_result" and type(u := b.get("toolUseId")) not in (list, dict)
        }
        if (
            nxt.get("role") != "user"
            or any(b.get("type") != "tool_result" for b in nblocks)
            or not set(uses) <= answered
        ):
            missing = [u for u in uses if u not in answered]
            out.append(
                Hit(
                    f"the assistant's tool_use {', '.join(map(repr, missing or uses))} must be answered by "
                    f"the next message: a user message of matching tool_result blocks",
                    path=f"{path}[{i + 1}]",
                )
            )
    return out


def _sampling_params_hits(params: dict, path: str) -> list:
    lack = [k for k in ("messages", "maxTokens") if k not in params]
    return [Hit(f"sampling params lack {' and '.join(lack)}", path=path)] if lack else []


_PRIMITIVE = ("string", "number", "integer", "boolean")


def _multi_select_items(items) -> bool:
    """The `items` of a 2025-11-25 / 2026-07-28 multi-select enum: untitled (`{"type": "string",
    "enum": [...]}`) or titled (`{"anyOf": [{"const": "a", "title": "A"}, ...]}`, no `type`)."""
    if type(items) is not dict:
        return False
    return items.get("type") == "string" or type(items.get("anyOf")) is list


def elicitation_problems(params: dict, path: str, version_l4: bool, modern: bool) -> list:
    mode = params.get("mode", "form")
    if mode == "url":
        out = []
        if type(params.get("url")) is not str:
            out.append(Hit("URL-mode elicitation needs a url", path=path))
        if version_l4 and not modern and type(params.get("elicitationId")) is not str:
            out.append(Hit("URL-mode elicitation needs an elicitationId (2025-11-25)", path=path))
        return out
    schema = params.get("requestedSchema")
    if type(schema) is not dict or schema.get("type") != "object":
        return [
            Hit(
                'form-mode elicitation needs a requestedSchema with type "object"',
                path=f"{path}.requestedSchema",
            )
        ]
    props = schema.get("properties", {})
    if type(props) is not dict:
        return [
            Hit("requestedSchema.properties must be an object", path=f"{path}.requestedSchema.properties")
        ]
    out = []
    for name, prop in props.items():
        t = prop.get("type") if type(prop) is dict else None
        items = prop.get("items") if type(prop) is dict else None
        multi = t == "array" and version_l4 and _multi_select_items(items)
        if t not in _PRIMITIVE and not multi:
            out.append(
                Hit(
                    f"requestedSchema property {name!r} has type {t!r}; form fields are flat primitives "
                    f"(string, number, integer, boolean{', or an array of enum strings' if version_l4 else ''})",
                    path=member(f"{path}.requestedSchema.properties", name),
                )
            )
    return out


def _elicit_result_hits(value, path: str, check_action: bool) -> list:
    if type(value) is not dict:
        return []
    action = value.get("action", MISSING)
    if action not in ("accept", "decline", "cancel"):
        return (
            [
                Hit(
                    f"action {action if action is not MISSING else 'missing'!r} must be accept, decline or cancel",
                    path=f"{path}.action",
                    severity=Severity.ERROR,
                )
            ]
            if check_action
            else []
        )
    if action != "accept" and "content" in value:
        return [Hit(f'content is only sent with action "accept", not {action!r}', path=f"{path}.content")]
    return []


@rule(
    "MCP620",
    "read-result-malformed",
    Severity.ERROR,
    kinds=RESULT,
    methods=("resources/read",),
    spec="schema ReadResourceResult, TextResourceContents, BlobResourceContents",
)
def read_result_malformed(m: Analysed, s):
    """A `resources/read` result lacks a `contents` array, or an item lacks `uri` or has neither
    `text` nor `blob`.

    Example: `"contents": [{"mimeType": "text/plain", "text": "hi"}]` (no uri).
    """
    r = complete(m)
    if r is None:
        return None
    contents = r.get("contents")
    if type(contents) is not list:
        return Hit("a resources/read result needs a contents array", path="$.result.contents")
    out = []
    for i, item in enumerate(contents):
        path = f"$.result.contents[{i}]"
        if type(item) is not dict:
            out.append(Hit("a contents item must be an object", path=path))
            continue
        if type(item.get("uri")) is not str:
            out.append(Hit("a contents item needs a uri", path=path))
        if "text" not in item and "blob" not in item:
            out.append(Hit("a contents item needs text or blob", path=path))
    return out


@rule(
    "MCP621",
    "prompt-malformed",
    Severity.ERROR,
    kinds=REQ_RES,
    methods=("prompts/get",),
    spec="schema GetPromptRequestParams.arguments {[key]: string}, PromptMessage",
)
def prompt_malformed(m: Analysed, s):
    """`prompts/get` `arguments` values are not strings; or a `GetPromptResult` lacks `messages`, or
    a message `role` is not `user` / `assistant`.

    Example: `{"method": "prompts/get", "params": {"name": "review", "arguments": {"lines": 40}}}`.
    """
    if m.kind is _KIND_REQUEST:
        args = (m.params or {}).get("arguments")
        if type(args) is not dict:
            return None
        return [
            Hit(
                f"prompt argument {k!r} must be a string, not {type(v).__name__}",
                path=member("$.params.arguments", k),
            )
            for k, v in args.items()
            if type(v) is not str
        ]
    r = complete(m)
    if r is None:
        return None
    msgs = r.get("messages")
    if type(msgs) is not list:
        return Hit("a prompts/get result needs a messages array", path="$.result.messages")
    return [
        Hit(
            f'message role {msg.get("role")!r} must be "user" or "assistant"',
            path=f"$.result.messages[{i}].role",
        )
        for i, msg in enumerate(msgs)
        if type(msg) is dict and msg.get("role") not in ("user", "assistant")
    ]


@rule(
    "MCP622",
    "completion-too-many-values",
    Severity.ERROR,
    kinds=RESULT,
    methods=("completion/complete",),
    spec="schema/2026-07-28/schema.ts:L2647-2651 (@maxItems 100); schema/2024-11-05/schema.ts:L980",
)
def completion_too_many_values(m: Analysed, s):
    """`completion.values` has more than 100 entries ("Must not exceed 100 items").

    Example: a `completion/complete` result with 250 values (use `hasMore` / `total` instead).
    """
    r = complete(m)
    comp = r.get("completion") if r is not None else None
    values = comp.get("values") if type(comp) is dict else None
    if type(values) is list and len(values) > 100:
        return Hit(
            f"completion.values has {len(values)} entries; at most 100 are allowed",
            path="$.result.completion.values",
        )
    return None


@rule(
    "MCP623",
    "cursor-not-issued",
    Severity.WARNING,
    kinds=(Kind.REQUEST,),
    methods=tuple(PAGINATED_METHODS),
    scope="pairing",
    spec="spec/2026-07-28/server/utilities/pagination.mdx:L102-107; "
    "spec/2025-11-25/server/utilities/pagination.mdx:L90",
)
def cursor_not_issued(m: Analysed, s):
    """(inferred) The client sends a `cursor` the server never issued as `nextCursor` for that
    method in this session: a fabricated or modified cursor. Clients MUST treat cursors as opaque.

    Example: `tools/list` with `"cursor": "page=2"` although no result carried that nextCursor.
    """
    cursor = _cursor(m)
    if cursor is MISSING or cursor is None or m.rec.dir is not _DIR_C2S:
        return None
    if type(cursor) is not list and type(cursor) is not dict and (m.method, cursor) in s.track.cursors:
        return None  # (an array or object is no key, and was never issued)
    return Hit(
        f"cursor {cursor!r} was never issued as nextCursor of a {m.method} result", path="$.params.cursor"
    )


@rule(
    "MCP624",
    "invalid-cursor-wrong-error",
    Severity.WARNING,
    kinds=(Kind.ERROR,),
    methods=tuple(PAGINATED_METHODS),
    scope="pairing",
    spec="spec/2026-07-28/server/utilities/pagination.mdx:L111; spec/2025-11-25/server/utilities/pagination.mdx:L97",
)
def invalid_cursor_wrong_error(m: Analysed, s):
    """A request with a cursor the server never issued (an invalid cursor) is rejected with an error
    code other than -32602 (Invalid params).

    Example: `tools/list` with an unknown cursor answered `{"code": -32603, ...}`.
    """
    req = m.request
    err = m.error
    if req is None or err is None or err.get("code") == -32602:
        return None
    cursor = _cursor(req)
    if (
        cursor is MISSING
        or cursor is None
        or (type(cursor) is not list and type(cursor) is not dict and (req.method, cursor) in s.track.cursors)
    ):
        return None
    return Hit(
        f"an invalid cursor should be answered with -32602, not {err.get('code')!r}",
        path="$.error.code",
        related_seq=req.seq,
    )


@rule(
    "MCP625",
    "root-not-file-uri",
    Severity.ERROR,
    kinds=(Kind.REQUEST, Kind.RESULT),
    needs="inputResponses",
    needs_methods=MRTR_METHODS,  # MRTR: only in a retry's inputResponses
    methods=("roots/list", *MRTR_METHODS),
    spec="spec/2026-07-28/client/roots.mdx:L100; spec/2025-11-25/client/roots.mdx:L110",
)
def root_not_file_uri(m: Analysed, s):
    """A root's `uri` (in a `roots/list` result, or a 2026-07-28 `inputResponses` answering
    `roots/list`) does not start with `file://`.

    Example: `"roots": [{"uri": "https://github.com/org/repo"}]`.
    """
    if m.kind is _KIND_RESULT:
        r = legacy_result(m, "roots/list")
        return _roots_hits(r, "$.result") if r is not None else None
    out = []
    for value, path in input_responses(m, s, "roots/list"):
        out.extend(_roots_hits(value, path))
    return out


@rule(
    "MCP626",
    "sampling-tool-messages-malformed",
    Severity.ERROR,
    kinds=REQ_RES,
    needs="inputRequests",
    needs_methods=MRTR_METHODS,  # MRTR: only inside inputRequests
    methods=("sampling/createMessage", *MRTR_METHODS),
    versions=since(L4),
    spec="spec/2025-11-25/client/sampling.mdx:L372, :L430; spec/2026-07-28/client/sampling.mdx:L380, :L438",
)
def sampling_tool_messages_malformed(m: Analysed, s):
    """Sampling messages with tools are malformed: a user message mixes `tool_result` with other
    content, or an assistant `tool_use` is not followed by a user message made only of `tool_result`
    blocks whose `toolUseId`s match.

    Example: `[{"role": "assistant", "content": {"type": "tool_use", "id": "c1", ...}},
    {"role": "user", "content": {"type": "text", "text": "go on"}}]`.
    """
    if m.kind is _KIND_REQUEST:
        params = legacy_request(m, "sampling/createMessage")
        return (
            tool_message_problems(params.get("messages"), "$.params.messages") if params is not None else None
        )
    out = []
    for p, path in input_requests(m, "sampling/createMessage"):
        out.extend(tool_message_problems(p.get("messages"), f"{path}.messages"))
    return out


@rule(
    "MCP627",
    "sampling-malformed",
    Severity.ERROR,
    kinds=REQ_RES,
    methods=("sampling/createMessage", *MRTR_METHODS),
    needs="inputRequests",
    needs_methods=MRTR_METHODS,  # MRTR: only inside inputRequests
    spec="schema CreateMessageRequestParams, CreateMessageResult in every version",
)
def sampling_malformed(m: Analysed, s):
    """`sampling/createMessage` params lack `messages` or `maxTokens`, or a `CreateMessageResult`
    lacks `role`, `content` or `model`. (In 2026-07-28 the params of sampling input requests are
    checked; a malformed `inputResponses` value is MCP331.)

    Example: `{"method": "sampling/createMessage", "params": {"messages": [...]}}` (no maxTokens).
    """
    if m.kind is _KIND_REQUEST:
        params = legacy_request(m, "sampling/createMessage")
        return _sampling_params_hits(params, "$.params") if params is not None else None
    r = legacy_result(m, "sampling/createMessage")
    if r is not None:
        lack = [k for k in ("role", "content", "model") if k not in r]
        return Hit(f"a CreateMessageResult needs {' and '.join(lack)}", path="$.result") if lack else None
    out = []
    for p, path in input_requests(m, "sampling/createMessage"):
        out.extend(_sampling_params_hits(p, path))
    return out


@rule(
    "MCP628",
    "elicitation-malformed",
    Severity.ERROR,
    kinds=REQ_RES,
    needs="inputRequests",
    needs_methods=MRTR_METHODS,  # MRTR: only inside inputRequests
    methods=("elicitation/create", *MRTR_METHODS),
    versions=since(L3),
    spec="spec/2025-11-25/client/elicitation.mdx:L85-110, :L340-347; spec/2026-07-28/client/elicitation.mdx:L90-110",
)
def elicitation_malformed(m: Analysed, s):
    """`elicitation/create` is malformed: the form-mode `requestedSchema` is not a flat object
    schema of primitive properties; URL mode lacks `url`; (2025-11-25) URL mode lacks
    `elicitationId`. 2026-07-28 input requests are checked too.

    Example: `"requestedSchema": {"type": "object", "properties": {"address": {"type": "object"}}}`.
    """
    modern = m.era is _ERA_MODERN
    l4 = modern or m.version == L4
    if m.kind is _KIND_REQUEST:
        params = legacy_request(m, "elicitation/create")
        return elicitation_problems(params, "$.params", l4, modern) if params is not None else None
    out = []
    for p, path in input_requests(m, "elicitation/create"):
        out.extend(elicitation_problems(p, path, True, True))
    return out


@rule(
    "MCP629",
    "elicit-result-inconsistent",
    Severity.WARNING,
    kinds=REQ_RES,
    needs="inputResponses",
    needs_methods=MRTR_METHODS,  # MRTR: only in a retry's inputResponses
    methods=("elicitation/create", *MRTR_METHODS),
    versions=since(L3),
    spec="schema ElicitResult, schema/2026-07-28/schema.ts:L3134-3150",
)
def elicit_result_inconsistent(m: Analysed, s):
    """An `ElicitResult` carries `content` although `action` is not `"accept"` (warning), or its
    `action` is not accept, decline or cancel (an error; in 2026-07-28 `inputResponses` that case is
    MCP331).

    Example: `{"action": "decline", "content": {"name": "octocat"}}`.
    """
    if m.kind is _KIND_RESULT:
        r = legacy_result(m, "elicitation/create")
        return _elicit_result_hits(r, "$.result", True) if r is not None else None
    out = []
    for value, path in input_responses(m, s, "elicitation/create"):
        out.extend(_elicit_result_hits(value, path, False))
    return out
