"""MCP150-MCP152: every message checked against the official schema.json of the version it speaks.

The safety net under the hand-written rules. Which schema: the message's era label (tracer.era).
- modern: 2026-07-28, the version its `_meta` names (or its request's). A modern message naming a
  version we hold no schema for (a future or draft string) is not checked: we cannot know that
  revision's shapes, and MCP357 judges the version itself.
- legacy with a known negotiated (or requested) version: that version.
- legacy whose version is unknown (the capture starts after `initialize`, or a version string no
  release has), and unknown era: every version the message may speak is tried, and the message is
  reported only when *all* of them reject it (the same "no guessing" the rule dispatch applies, see
  tracer.era.possible_versions). The report shows the newest legacy version's view (2025-11-25), or
  2026-07-28 for modern.

Which definition: tracer.schemas.dispatch (method -> request/notification type, answered method ->
result type, `resultType`, error code). One finding per failing message: its most specific problem
(deepest JSON path, unions resolved to the branch the sender meant), with the keyword that failed.

No double reports: these rules run after every other rule on the message (`order=1`) and skip a
problem another rule already explained on the message (that finding's path is the problem's path,
the object holding it, or inside it; see tracer.schemas.errors.explained_by). The precise rule says
it better (MCP617: "tools/call params lack name"; the schema could only say "required"). A message
with several problems still gets the net for the ones no precise rule explained, and deselecting
the precise rule (`--ignore MCP617`) hands its problems back to the net: nothing is silently lost.
"""

from __future__ import annotations

from tracer.catalog.registry import rule
from tracer.model import KIND_REQUEST as _KIND_REQUEST  # (enum members as globals: tracer.model)
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed, Era, Hit, Kind, Severity
from tracer.protocol import ALL_NOTIFICATION_METHODS, ALL_REQUEST_METHODS, LEGACY_VERSIONS, MODERN_VERSION
from tracer.safejson import tame
from tracer.schemas.dispatch import CODES_WITH_DEFINITIONS, COMPLETE, INPUT_REQUIRED, Catalog, Target, catalog
from tracer.schemas.errors import SchemaProblem, explained_by, loose_path, problems
from tracer.session import Session

SCHEMA_RULES = frozenset({"MCP150", "MCP151", "MCP152"})

_MODERN = (MODERN_VERSION,)

_LEGACY_NEWEST_FIRST = tuple(reversed(LEGACY_VERSIONS))

_UNKNOWN_ORDER = (*_LEGACY_NEWEST_FIRST, MODERN_VERSION)  # report the newest legacy view first

_NONE: tuple[str, ...] = ()

_ONE = {v: (v,) for v in LEGACY_VERSIONS}

_ERA_MODERN, _ERA_LEGACY = Era.MODERN, Era.LEGACY

_SOURCE = (
    "the official schema/<version>/schema.json (vendored in tracer/schemas/, commit b0f60ba); "
    "JSON-RPC 2.0 §4-§5"
)


def candidate_versions(m: Analysed) -> tuple[str, ...]:
    """The schema versions a message is checked against, in the order their findings are shown."""
    era = m.era
    v = m.version
    if era is _ERA_MODERN:
        return _MODERN if v is None or v == MODERN_VERSION else _NONE
    if era is _ERA_LEGACY:
        return _ONE.get(v, _LEGACY_NEWEST_FIRST)
    return _UNKNOWN_ORDER


# (version, target key) -> Target. The key says everything the dispatch depends on, so the common
# case is two dict lookups and one `is_valid` per message, with no Python-level work per member.
# Keys are bounded: methods no version defines and codes no version gives a definition of are
# folded into None, so odd traffic cannot grow this table (or compile a validator per method).
_TARGETS: dict[tuple, Target] = {}


def _make(c: Catalog, key: tuple, m: Analysed) -> Target:
    what = key[0]
    if what == "request":
        return c.request(key[1])
    if what == "notification":
        return c.notification(key[1])
    if what == "result":
        req = m.request
        return c.result(key[1], m.obj.get("result"), req.params if req is not None else None)
    return c.error(key[1])


def _request_key(m: Analysed) -> tuple:
    method = m.method
    if m.kind is _KIND_REQUEST:
        return ("request", method if method in ALL_REQUEST_METHODS else None)
    return ("notification", method if method in ALL_NOTIFICATION_METHODS else None)


def _result_key(m: Analysed) -> tuple:
    result = m.result  # obj["result"] when it is an object
    variant = None
    if result is not None:
        rt = result.get("resultType")
        if type(rt) is str and rt != COMPLETE:
            variant = INPUT_REQUIRED if rt == INPUT_REQUIRED else "other"
    req = m.request
    params = req.params if req is not None else None  # the request's params object, or None
    method = m.answers_method
    return (
        "result",
        method if method in ALL_REQUEST_METHODS else None,
        variant,
        params is not None and "task" in params,
    )


def _error_key(m: Analysed) -> tuple:
    err = m.obj.get("error")
    code = err.get("code") if type(err) is dict else None
    return ("error", code if type(code) is int and code in CODES_WITH_DEFINITIONS else None)


_KEYS = {
    Kind.REQUEST: _request_key,
    Kind.NOTIFICATION: _request_key,
    Kind.RESULT: _result_key,
    Kind.ERROR: _error_key,
}


def schema_target(m: Analysed) -> Target | None:
    """The definition the schema rules check `m` against first (None: not checked). For tools and
    benchmarks that want to run the same check elsewhere."""
    keyfn = _KEYS.get(m.kind)
    versions = candidate_versions(m)
    if keyfn is None or not versions:
        return None
    return _target(versions[0], keyfn(m), m)


def _target(version: str, key: tuple, m: Analysed) -> Target:
    """The compiled target of `key` in `version`, made on first use."""
    target = _TARGETS.get((version, key))
    if target is None:
        target = _TARGETS[(version, key)] = _make(catalog(version), key, m)
    return target


def _check(m: Analysed, key: tuple, cede_id: bool = False) -> list[Hit] | None:
    obj = m.obj
    versions = candidate_versions(m)
    shown: Target | None = None
    for v in versions:
        target = _target(v, key, m)
        try:
            if target.validator.is_valid(obj):
                return None
        except (ValueError, RecursionError, OverflowError):
            # jsonschema-rs takes no lone surrogate (not UTF-8): check the same value with each one
            # written as its escape, which no schema type tells apart; too deep a value stays unjudged
            if obj is not m.obj:
                return None
            try:
                obj = tame(obj, 10_000)
            except RecursionError:
                return None
            try:
                if target.validator.is_valid(obj):
                    return None
            except (ValueError, RecursionError, OverflowError):
                return None  # the envelope rules judge such messages
        if shown is None:
            shown = target
    if shown is None:
        return None
    return _report(m, _as_shown(shown, key, m), versions, cede_id, obj)


def _as_shown(target: Target, key: tuple, m: Analysed) -> Target:
    """The target as this message's finding shows it: one cached target serves every unknown
    `resultType`, but its note must name this message's own value (Catalog.result)."""
    if key[0] == "result" and key[2] == "other":
        return _make(catalog(target.version), key, m)
    return target


# The common case, remembered by the message's shape: the definition of a request or notification
# depends only on its kind and method, and that of a result on the method it answers (when its
# `resultType` is absent or "complete" and its request has no `task`); the version only on the era
# label (era, version). A shape checked against one version maps straight to that validator's
# `is_valid`: one lookup, no key building. Bounded, so made-up methods cannot grow it.
_FAST: dict[tuple, object] = {}

_FAST_CAP = 1024


def _fast_valid(shape: tuple, m: Analysed) -> bool:
    """True when the message's shape is remembered and the message is valid (else do `_check`)."""
    is_valid = _FAST.get(shape)
    if is_valid is None:
        return False
    try:
        return is_valid(m.obj)
    except (ValueError, RecursionError, OverflowError):
        return False  # _check decides (it says nothing about such values)


def _check_by_shape(shape: tuple, m: Analysed, keyfn) -> list[Hit] | None:
    """`_check` behind the shape's remembered validator (the common, valid case: one lookup)."""
    if _fast_valid(shape, m):
        return None
    key = keyfn(m)
    out = _check(m, key)
    _remember(shape, m, key)
    return out


def _remember(shape: tuple, m: Analysed, key: tuple) -> None:
    versions = candidate_versions(m)
    if len(versions) == 1 and len(_FAST) < _FAST_CAP:
        target = _TARGETS.get((versions[0], key))
        if target is not None:
            _FAST[shape] = target.validator.is_valid


def _report(
    m: Analysed, shown: Target, versions: tuple[str, ...], cede_id: bool, obj=None
) -> list[Hit] | None:
    """The slow path, for invalid messages only: what exactly is wrong, minus what is explained."""
    value = m.obj if obj is None else obj
    try:
        found = problems(shown.validator.iter_errors(value))
    except (ValueError, RecursionError, OverflowError):
        # jsonschema-rs renders the value into each error, and a lone surrogate is no UTF-8: describe
        # the copy with each one written as its escape; past its recursion limit nothing helps, say so
        try:
            found = problems(shown.validator.iter_errors(tame(value, 10_000)))
        except (ValueError, RecursionError, OverflowError):
            found = None
    if found is None:
        return [
            Hit(
                f"does not validate against schema {shown.version} {shown.definition}; the validator "
                "cannot say where (a value nested past its recursion limit)",
                path="$",
            )
        ]
    if cede_id:  # see MCP152's docstring: the catalog's MCP117/MCP118 own the id of such errors
        found = [p for p in found if p.segments[:1] != ("id",)]
    covered = [loose_path(f.path) for f in m.findings if f.path and f.rule not in SCHEMA_RULES]
    if covered:
        found = [p for p in found if not any(explained_by(p, c) for c in covered)]
    if not found:
        return None
    return [Hit(_describe(found, shown, versions), path=found[0].path)]


def _describe(found: list[SchemaProblem], target: Target, versions: tuple[str, ...]) -> str:
    p = found[0]
    where = target.definition
    if p.definition and p.definition != where:
        where = f"{where} > {p.definition}"
    # the path itself travels in the finding's `path`, which every report shows
    text = f"{p.detail} (schema {target.version} {where}, keyword `{p.keyword}`)"
    if target.note:
        text += f"; {target.note}"
    if len(versions) > 1:
        text += f"; every version it may speak rejects it ({', '.join(sorted(versions))})"
    if len(found) > 1:
        more = len(found) - 1
        text += f"; {more} more schema problem{'s' if more > 1 else ''}, next at {found[1].path}"
    return text


@rule(
    "MCP150",
    "schema-invalid-request",
    Severity.ERROR,
    kinds=(Kind.REQUEST, Kind.NOTIFICATION),
    spec=_SOURCE,
    order=1,
)
def schema_invalid_request(m: Analysed, s: Session):
    """A request or notification does not validate against its official schema definition.

    The definition is the one whose `method` const is the message's method in the version the message
    speaks (`tools/call` -> CallToolRequest, `notifications/progress` -> ProgressNotification); a
    method the version does not define is checked against the JSON-RPC envelope only. Reports the
    most specific failing JSON path and keyword, unless a precise rule already reported that path.
    Example (2025-11-25): `{"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {}}`
    -> at `$.params.uri`: "`uri` is required but missing (schema 2025-11-25 ReadResourceRequest)".
    """
    return _check_by_shape((m.kind, m.method, m.era, m.version), m, _request_key)


@rule("MCP151", "schema-invalid-result", Severity.ERROR, kinds=(Kind.RESULT,), spec=_SOURCE, order=1)
def schema_invalid_result(m: Analysed, s: Session):
    """A result does not validate against the result definition of the request it answers.

    The answered method picks the definition (`tools/call` -> CallToolResult, `initialize` ->
    InitializeResult). In 2026-07-28 `resultType: "input_required"` picks InputRequiredResult first; a
    2025-11-25 task-augmented request (params carry `task`) is answered by CreateTaskResult. An answer
    whose request was not seen is checked against the JSON-RPC response envelope only.
    Example (2024-11-05): a `tools/call` answered with `{"result": {"content": [{"type": "text"}]}}` ->
    at `$.result.content[0].text`: "`text` is required but missing (CallToolResult > TextContent)".
    """
    result = m.result
    rt = result.get("resultType") if result is not None else None
    req = m.request
    params = req.params if req is not None else None
    if (type(rt) is str and rt != COMPLETE) or (params is not None and "task" in params):
        return _check(m, _result_key(m))  # another definition than the method's: not remembered
    return _check_by_shape((_KIND_RESULT, m.answers_method, m.era, m.version), m, _result_key)


@rule("MCP152", "schema-invalid-error", Severity.ERROR, kinds=(Kind.ERROR,), spec=_SOURCE, order=1)
def schema_invalid_error(m: Analysed, s: Session):
    """An error response does not validate against the JSON-RPC error definition of its version.

    Where the version defines the code, its own definition applies (2026-07-28: -32022
    UnsupportedProtocolVersionError needs `data.supported` and `data.requested`; 2025-11-25: -32042
    URLElicitationRequiredError). One deliberate gap: for -32700/-32600 (the request's id could not be
    read) the `id` member is left to MCP117/MCP118, because the 2024-11-05 to 2025-06-18 schemas
    require an id such an answer cannot have.
    Example (2026-07-28): `{"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "x"}}` ->
    at `$.error.data`: "`data` is required but missing (UnsupportedProtocolVersionError)".
    """
    key = _error_key(m)
    code = key[1]
    return _check(m, key, cede_id=(code == -32700 or code == -32600) and m.obj.get("id") is None)
