"""MCP611-MCP624: content blocks, annotations, resources, prompts, completion and pagination."""

from __future__ import annotations

import binascii
import functools
import re

from tracer.era import possible_versions
from tracer.model import Analysed, Direction, Hit, Kind, Severity
from tracer.protocol import L1, L2, L3, L4, M
from tracer.rules.features import complete
from tracer.rules.registry import rule
from tracer.tracking import MISSING, PAGINATED_METHODS, member

RESULT = (Kind.RESULT,)
# content block types each version defines for tool results and prompt messages
_BLOCKS_L1 = frozenset({"text", "image", "resource"})
BLOCK_TYPES = {
    L1: _BLOCKS_L1,
    L2: _BLOCKS_L1 | {"audio"},
    L3: _BLOCKS_L1 | {"audio", "resource_link"},
    L4: _BLOCKS_L1 | {"audio", "resource_link"},
    M: _BLOCKS_L1 | {"audio", "resource_link"},
}


_ALLOWED: dict[frozenset[str], frozenset[str]] = {}


def allowed_blocks(m: Analysed) -> frozenset[str]:
    """Block types of every version the message may speak (lenient when the version is unsure)."""
    versions = possible_versions(m)
    hit = _ALLOWED.get(versions)
    if hit is None:
        hit = _ALLOWED[versions] = frozenset().union(*(BLOCK_TYPES[v] for v in versions))
    return hit


def content_blocks(m: Analysed):
    """(index, block) of the content blocks of a tool result or a prompt's messages (for a prompt,
    the index of its message); `block_path(m, index)` is the block's JSON path. Three rules walk
    these blocks on every tool result, so this builds no generator and no path string: paths are
    made only for a finding."""
    r = complete(m)
    if r is None:
        return ()
    method = m.answers_method
    if method == "tools/call":
        content = r.get("content")
        return enumerate(content) if type(content) is list else ()
    if method == "prompts/get":
        msgs = r.get("messages")
        return [
            (i, msg["content"])
            for i, msg in enumerate(msgs if type(msgs) is list else ())
            if type(msg) is dict and "content" in msg
        ]
    return ()


def block_path(m: Analysed, i: int) -> str:
    """The JSON path of content block `i` of `content_blocks(m)`."""
    if m.answers_method == "tools/call":
        return f"$.result.content[{i}]"
    return f"$.result.messages[{i}].content"


def block_problem(block, allowed: frozenset[str]) -> str | None:
    if type(block) is not dict:
        return "is not an object"
    t = block.get("type")
    if type(t) is not str or t not in allowed:  # (a list or an object is no type name either)
        return f"has type {t!r}, which this protocol version does not define ({', '.join(sorted(allowed))})"
    if t == "text":
        return None if type(block.get("text")) is str else "(text) lacks a text string"
    if t in ("image", "audio"):
        lack = [k for k in ("data", "mimeType") if type(block.get(k)) is not str]
        return f"({t}) lacks {' and '.join(lack)}" if lack else None
    if t == "resource_link":
        lack = [k for k in ("uri", "name") if type(block.get(k)) is not str]
        return f"(resource_link) lacks {' and '.join(lack)}" if lack else None
    if t == "resource":
        res = block.get("resource")
        if type(res) is not dict or type(res.get("uri")) is not str:
            return "(resource) lacks resource.uri"
        if "text" not in res and "blob" not in res:
            return "(resource) has neither resource.text nor resource.blob"
    return None


@rule(
    "MCP611",
    "content-block-invalid",
    Severity.ERROR,
    kinds=RESULT,
    methods=("tools/call", "prompts/get"),
    spec="schema ContentBlock, e.g. schema/2025-06-18/schema.ts:L1133, schema/2026-07-28/schema.ts:L2305-2406",
)
def content_block_invalid(m: Analysed, s):
    """A content block of a tool result or prompt message has a `type` the version does not define
    (2024-11-05: text, image, resource; 2025-03-26 adds audio; 2025-06-18 adds resource_link) or lacks
    required fields (`text`; `data` + `mimeType`; `uri` + `name`; `resource` with `uri` and `text` or
    `blob`).

    Example: `"content": [{"type": "markdown", "text": "# hi"}]`.
    """
    out = None
    allowed = None
    for i, block in content_blocks(m):
        # the usual block, a text block with its text, is fine in every version: no call for it
        if type(block) is dict and block.get("type") == "text" and type(block.get("text")) is str:
            continue
        if allowed is None:
            allowed = allowed_blocks(m)
        why = block_problem(block, allowed)
        if why:
            out = out or []
            out.append(Hit(f"content block {why}", path=block_path(m, i)))
    return out


def b64_problem(value) -> str | None:
    if type(value) is not str:
        return None  # a missing or wrongly typed field is MCP611's
    try:
        binascii.a2b_base64(value, strict_mode=True)
    except (binascii.Error, ValueError) as exc:
        return str(exc)
    return None


def _base64_fields(m: Analysed) -> list:
    """(value, JSON path) of the base64 fields of the message (a list: most results have none)."""
    out = []
    for i, block in content_blocks(m):
        if type(block) is not dict:
            continue
        t = block.get("type")
        if t == "text":
            continue
        if t in ("image", "audio"):
            out.append((block.get("data"), f"{block_path(m, i)}.data"))
        elif t == "resource" and type(block.get("resource")) is dict:
            out.append((block["resource"].get("blob"), f"{block_path(m, i)}.resource.blob"))
    if m.answers_method == "resources/read":
        r = complete(m)
        contents = r.get("contents") if r is not None else None
        for i, item in enumerate(contents if type(contents) is list else ()):
            if type(item) is dict and "blob" in item:
                out.append((item["blob"], f"$.result.contents[{i}].blob"))
    return out


@rule(
    "MCP612",
    "base64-invalid",
    Severity.ERROR,
    kinds=RESULT,
    methods=("tools/call", "prompts/get", "resources/read"),
    spec="spec/2026-07-28/server/prompts.mdx:L256, :L271; spec/2026-07-28/server/resources.mdx:L432",
)
def base64_invalid(m: Analysed, s):
    """Image or audio `data`, or a resource `blob`, is not valid base64.

    Example: `{"type": "image", "data": "not base64!", "mimeType": "image/png"}`.
    """
    out = None
    for value, path in _base64_fields(m):
        why = b64_problem(value)
        if why:
            out = out or []
            out.append(Hit(f"not valid base64: {why}", path=path))
    return out


def annotation_problem(ann) -> str | None:
    if type(ann) is not dict:
        return "annotations must be an object"
    p = ann.get("priority", MISSING)
    if p is not MISSING and (type(p) not in (int, float) or not 0 <= p <= 1):
        return f"priority {p!r} is outside 0..1"
    aud = ann.get("audience", MISSING)
    if aud is not MISSING and (type(aud) is not list or any(a not in ("user", "assistant") for a in aud)):
        return f'audience {aud!r} may only contain "user" and "assistant"'
    return None


_ANNOTATED_LISTS = {"resources/list": "resources", "resources/templates/list": "resourceTemplates"}


@rule(
    "MCP618",
    "annotations-out-of-range",
    Severity.ERROR,
    kinds=RESULT,
    methods=("tools/call", "prompts/get", "resources/list", "resources/templates/list"),
    spec="schema Annotations, schema/2026-07-28/schema.ts:L2270-2300",
)
def annotations_out_of_range(m: Analysed, s):
    """Annotations are out of range: `priority` outside [0, 1], or `audience` entries other than
    `"user"` / `"assistant"`.

    Example: `"annotations": {"priority": 5, "audience": ["admin"]}`.
    """
    out = None
    for i, block in content_blocks(m):
        if type(block) is dict and "annotations" in block:
            why = annotation_problem(block["annotations"])
            if why:
                out = out or []
                out.append(Hit(why, path=f"{block_path(m, i)}.annotations"))
    key = _ANNOTATED_LISTS.get(m.answers_method)
    if key is not None:
        r = complete(m)
        items = r.get(key) if r is not None else None
        for i, item in enumerate(items if type(items) is list else ()):
            if type(item) is dict and "annotations" in item:
                why = annotation_problem(item["annotations"])
                if why:
                    out = out or []
                    out.append(Hit(why, path=f"$.result.{key}[{i}].annotations"))
    return out


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


@functools.lru_cache(maxsize=1024)
def _template_re(template: str) -> re.Pattern:
    """An RFC 6570 URI template as a pattern any expansion of it matches: the literal parts as
    written, each `{...}` expression as anything (generous on purpose: a URI that may be an
    expansion counts as a resource)."""
    parts = re.split(r"\{[^{}]*\}", template)
    return re.compile(".*".join(re.escape(p) for p in parts), re.S)


def _listed(uri: str, resources: frozenset[str], templates: tuple[str, ...]) -> bool:
    return uri in resources or any(_template_re(tpl).fullmatch(uri) for tpl in templates)


@rule(
    "MCP631",
    "missing-resource-empty-contents",
    Severity.ERROR,
    kinds=RESULT,
    methods=("resources/read",),
    versions=frozenset({M}),
    scope="pairing",
    spec="spec/2026-07-28/server/resources.mdx:L404-410",
)
def missing_resource_empty_contents(m: Analysed, s):
    """A `resources/read` of a URI that is not a resource (the capture's complete `resources/list`
    does not list it and no template of its complete `resources/templates/list` can expand to it)
    is answered with an empty `contents` array instead of an error. Reads are only judged once both
    lists were captured.

    "If the requested resource does not exist, servers MUST return a JSON-RPC error with code
    -32602 (Invalid Params)." "Servers MUST NOT return an empty contents array for a non-existent
    resource." Example: `resources/read` of `file:///nope.txt`, answered `{"contents": []}`.
    """
    r = complete(m)
    if r is None or r.get("contents") != []:
        return None
    t = s.track
    resources, templates = t.resources, t.templates
    req = m.request
    uri = (req.params or {}).get("uri") if req is not None else None
    if resources is None or templates is None or type(uri) is not str or _listed(uri, resources, templates):
        return None
    return Hit(
        f"{uri!r} is not a listed resource and matches no template, yet the read answered an empty "
        "contents array; a missing resource is a -32602 error (with the uri in data)",
        path="$.result.contents",
    )


@rule(
    "MCP621",
    "prompt-malformed",
    Severity.ERROR,
    kinds=(Kind.REQUEST, Kind.RESULT),
    methods=("prompts/get",),
    spec="schema GetPromptRequestParams.arguments {[key]: string}, PromptMessage",
)
def prompt_malformed(m: Analysed, s):
    """`prompts/get` `arguments` values are not strings; or a `GetPromptResult` lacks `messages`, or
    a message `role` is not `user` / `assistant`.

    Example: `{"method": "prompts/get", "params": {"name": "review", "arguments": {"lines": 40}}}`.
    """
    if m.kind is Kind.REQUEST:
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


def _cursor(m_or_req) -> object:
    params = m_or_req.params
    return params.get("cursor", MISSING) if params is not None else MISSING


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
    if cursor is MISSING or cursor is None or m.rec.dir is not Direction.C2S:
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
