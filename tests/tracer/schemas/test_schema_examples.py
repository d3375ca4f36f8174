"""The 129 official 2026-07-28 example messages (fixtures/examples/) against the vendored schema.

Each example validates against the definition its directory names; a copy with one required member
removed (the deepest one the schema requires, so the path is a real test of path reporting) is
rejected at exactly that member; and the full JSON-RPC messages among them pass MCP150-MCP152 as
`mcptrace lint` runs them, while their mutated copies are reported at the removed member's path.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tests.cases import build_records
from tracer.analyser import analyse_all
from tracer.rules import select_rules
from tracer.schemas import definitions
from tracer.schemas.dispatch import catalog
from tracer.schemas.errors import json_path, problems

M = "2026-07-28"
EXAMPLES = Path(__file__).resolve().parents[3] / "fixtures" / "examples" / M
FILES = sorted(EXAMPLES.glob("*/*.json"))
DEFS = definitions(M)
SCHEMA_RULES = select_rules(["MCP150", "MCP151", "MCP152"])


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


# -- finding a member to remove, from the schema (not from the validator's own verdict) ------------


def _shapes(node: Any, depth: int = 0) -> list[dict]:
    """The object shapes a schema node stands for: `$ref` followed, `allOf` flattened. Unions are
    not entered (which branch applies is the validator's business, not this helper's)."""
    if not isinstance(node, dict) or depth > 30:
        return []
    if "$ref" in node:
        return _shapes(DEFS[node["$ref"].rsplit("/", 1)[1]], depth + 1)
    out = [node] if "properties" in node or "required" in node or "type" in node else []
    for sub in node.get("allOf", ()):
        out += _shapes(sub, depth + 1)
    return out


def _resolve(node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        node = DEFS[node["$ref"].rsplit("/", 1)[1]]
    return node


def _required_members(value: Any, node: Any, path: tuple = ()) -> list[tuple]:
    if not isinstance(value, dict):
        return []
    found: list[tuple] = []
    for shape in _shapes(node):
        found += [(*path, r) for r in shape.get("required", ()) if r in value]
        for key, sub in shape.get("properties", {}).items():
            v = value.get(key)
            if isinstance(v, dict):
                found += _required_members(v, sub, (*path, key))
            elif isinstance(v, list) and v and isinstance(v[0], dict):
                for s in _shapes(sub):
                    if "items" in s:
                        found += _required_members(v[0], s["items"], (*path, key, 0))
    return found


def _types(node: Any) -> set[str]:
    """The JSON types a schema node allows (a union: those of its branches)."""
    node = _resolve(node)
    if isinstance(node, dict) and "anyOf" in node:
        return set().union(*(_types(b) for b in node["anyOf"]))
    types: set[str] = set()
    for s in _shapes(node):
        t = s.get("type")
        types |= {t} if isinstance(t, str) else set(t or ())
    return types


def _typed_members(value: Any, node: Any, path: tuple = ()) -> list[tuple[tuple, set[str]]]:
    """Members whose schema restricts the JSON type, with the types it allows."""
    if not isinstance(value, dict):
        return []
    found: list[tuple[tuple, set[str]]] = []
    for shape in _shapes(node):
        props = dict(shape.get("properties", {}))
        extra = shape.get("additionalProperties")
        for key, v in value.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if sub is None:
                continue
            types = _types(sub)
            if types and _wrong_value(types) is not None:
                found.append(((*path, key), types))
            if isinstance(v, dict):
                found += _typed_members(v, sub, (*path, key))
    return found


_WRONG = [("array", []), ("object", {}), ("string", "x"), ("boolean", True), ("number", 1.5)]


def _wrong_value(types: set[str]) -> Any:
    for t, v in _WRONG:
        if t not in types:
            return v
    return None


ENVELOPE = frozenset({("jsonrpc",), ("id",), ("method",)})  # classification's business (MCP102...)


def mutate(
    example: Any, definition: str, keep: frozenset[tuple] = frozenset()
) -> tuple[Any, tuple, set[str]]:
    """(copy with one problem, path of the problem, keywords that may name it); `keep`: paths
    never touched."""
    bad = copy.deepcopy(example)
    root = {"$ref": f"#/$defs/{definition}"}
    required = [p for p in _required_members(example, root) if p not in keep]
    if required:
        path = max(required, key=len)  # the deepest; ties: the first the schema lists
        holder = bad
        for seg in path[:-1]:
            holder = holder[seg]
        del holder[path[-1]]
        return bad, path, {"required"}
    # Capabilities and maps have no required member: give the deepest typed member a wrong type.
    path, types = max(
        ((p, t) for p, t in _typed_members(example, root) if p not in keep), key=lambda pt: len(pt[0])
    )
    holder = bad
    for seg in path[:-1]:
        holder = holder[seg]
    holder[path[-1]] = _wrong_value(types)
    return bad, path, {"type", "anyOf"}


# -- every example against its definition --------------------------------------------------------


def test_all_129_official_examples_are_vendored():
    assert len(FILES) == 129
    assert {p.parent.name for p in FILES} <= set(DEFS), "every directory names a definition"


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_official_example_validates_against_the_definition_its_directory_names(path):
    target = catalog(M).definition(path.parent.name)
    example = _load(path)
    assert target.validator.is_valid(example), [
        p.path for p in problems(target.validator.iter_errors(example))
    ]


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_example_missing_a_required_member_is_rejected_at_that_members_path(path):
    target = catalog(M).definition(path.parent.name)
    bad, where, keywords = mutate(_load(path), path.parent.name)
    found = problems(target.validator.iter_errors(bad))
    assert found, f"removing/retyping {json_path(where)} went unnoticed"
    assert found[0].path == json_path(where)
    assert found[0].keyword in keywords


def test_mutations_mostly_remove_required_members():
    removed = sum(1 for p in FILES if mutate(_load(p), p.parent.name)[2] == {"required"})
    assert removed == len(FILES) - 21  # only the capability objects and the two input maps lack one


# -- the full JSON-RPC messages among them, through the schema rules as lint runs them -------------


def _examples(suffix: str) -> list[Path]:
    return [p for p in FILES if p.parent.name.endswith(suffix)]


def _request_for(response_def: str) -> dict:
    """The official request example of the method a `<X>ResultResponse` answers."""
    [path] = sorted((EXAMPLES / (response_def.removesuffix("ResultResponse") + "Request")).glob("*.json"))
    return _load(path)


def _schema_findings(entries: list[dict]) -> list:
    msgs, _ = analyse_all(build_records(entries), SCHEMA_RULES)
    return [f for m in msgs for f in m.findings]


RESPONSES = _examples("ResultResponse")
OPENER = _load(EXAMPLES / "ListToolsRequest" / "list-tools-request.json")  # makes the session modern


def test_every_result_response_example_has_its_request_example():
    assert len(RESPONSES) == 11
    for p in RESPONSES:
        assert _request_for(p.parent.name)["method"]


# Upstream inconsistency, reported rather than hidden: this official example has no `ttlMs` and
# `cacheScope`, which ReadResourceResult requires (and spec/2026-07-28/server/utilities/caching.mdx
# makes a MUST for a complete resources/read result, MCP340). It validates against
# ReadResourceResultResponse only because that definition's `result` is a union with the open
# InputRequiredResult, which accepts any object with a `resultType`: the reason the dispatch picks
# the concrete definition by `resultType` instead of using the *ResultResponse unions.
UPSTREAM_DEFECTS = {"ReadResourceResultResponse/read-resource-result-response.json": "$.result.cacheScope"}


@pytest.mark.parametrize("path", RESPONSES, ids=_id)
def test_official_request_and_its_answer_pass_the_schema_rules(path):
    response = _load(path)
    request = dict(_request_for(path.parent.name), id=response["id"])
    found = [(f.rule, f.path) for f in _schema_findings([{"c2s": request}, {"s2c": response}])]
    expected = UPSTREAM_DEFECTS.get(_id(path))
    assert found == ([("MCP151", expected)] if expected else [])


def test_the_defective_example_passes_the_loose_union_but_not_its_concrete_definition():
    path = EXAMPLES / "ReadResourceResultResponse" / "read-resource-result-response.json"
    response = _load(path)
    assert catalog(M).definition("ReadResourceResultResponse").validator.is_valid(response)
    missing = problems(catalog(M).definition("ReadResourceResult").validator.iter_errors(response["result"]))
    assert [(p.path, p.keyword) for p in missing] == [("$.cacheScope", "required"), ("$.ttlMs", "required")]


@pytest.mark.parametrize("path", [p for p in RESPONSES if _id(p) not in UPSTREAM_DEFECTS], ids=_id)
def test_official_answer_missing_a_required_member_is_reported_by_mcp151_at_its_path(path):
    response = _load(path)
    request = dict(_request_for(path.parent.name), id=response["id"])
    result_def = catalog(M).result(request["method"], response["result"], request["params"]).definition
    bad_result, where, _ = mutate(response["result"], result_def)
    found = _schema_findings([{"c2s": request}, {"s2c": dict(response, result=bad_result)}])
    assert [(f.rule, f.seq, f.path) for f in found] == [("MCP151", 2, json_path(("result", *where)))]


NOTIFICATIONS = _examples("Notification")
REQUESTS = [p for p in _examples("Request") if "jsonrpc" in _load(p)]


@pytest.mark.parametrize("path", REQUESTS + NOTIFICATIONS, ids=_id)
def test_official_requests_and_notifications_pass_and_their_mutations_are_reported(path):
    message = _load(path)
    session = [] if "id" in message else [{"c2s": OPENER}]
    direction = "c2s" if "id" in message or path.parent.name == "CancelledNotification" else "s2c"
    assert _schema_findings([*session, {direction: message}]) == []
    bad, where, _ = mutate(message, path.parent.name, keep=ENVELOPE)
    found = _schema_findings([*session, {direction: bad}])
    assert [(f.rule, f.path) for f in found] == [("MCP150", json_path(where))]


def _error_messages() -> list[tuple[str, dict]]:
    """Each error example as a response: the whole-envelope ones as they are, the bare `error`
    objects (ParseError, InvalidParamsError...) inside a JSON-RPC error response."""
    out = []
    for p in FILES:
        name = p.parent.name
        if not name.endswith("Error"):
            continue
        example = _load(p)
        message = example if "error" in example else {"jsonrpc": "2.0", "id": "err-1", "error": example}
        out.append((f"{name}/{p.name}", message))
    return out


ERRORS = _error_messages()


@pytest.mark.parametrize(("name", "message"), ERRORS, ids=[n for n, _ in ERRORS])
def test_official_error_examples_pass_mcp152_and_their_mutations_are_reported(name, message):
    request = dict(OPENER, id=message.get("id", "err-1"))
    assert _schema_findings([{"c2s": request}, {"s2c": message}]) == []
    error_def = catalog(M).error(message["error"]["code"]).definition
    assert error_def == name.split("/")[0]  # dispatch by code finds the definition the example names
    if "error" in _load(EXAMPLES / name):  # a whole envelope: mutate it as a message
        bad, where, _ = mutate(message, error_def, keep=ENVELOPE)
    else:
        bad_error, inner, _ = mutate(message["error"], error_def)
        bad, where = dict(message, error=bad_error), ("error", *inner)
    found = _schema_findings([{"c2s": request}, {"s2c": bad}])
    assert [(f.rule, f.path) for f in found] == [("MCP152", json_path(where))]
