"""The vendored official schemas, the method -> definition dispatch, and MCP150-MCP152 as lint runs
them: the safety net reports what no precise rule explained, once per message, and never crashes."""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path

import jsonschema_rs
import orjson
import pytest

from tests.cases import build_records
from tracer.analyser import RuleSet, analyse_all
from tracer.capture import read_capture
from tracer.protocol import DIRECTIONS, VERSIONS
from tracer.rules import all_rules, select_rules
from tracer.rules import mcp15_schema as schema_rules
from tracer.schemas import SchemaLoadError, correct_artefacts, license_text, load_schema, schema_bytes
from tracer.schemas.dispatch import CODES_WITH_DEFINITIONS, RESULT_BY_METHOD, catalog
from tracer.schemas.errors import problems

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "tracer" / "schemas" / "SOURCE.md"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "host", "version": "1.0"},
}


def _legacy(version: str, *messages: dict) -> list[dict]:
    return [
        {
            "c2s": {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "host", "version": "1"},
                },
            }
        },
        {
            "s2c": {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "s", "version": "1"},
                },
            }
        },
        *messages,
    ]


def _findings(entries: list[dict], rules=None) -> list:
    msgs, _ = analyse_all(build_records(entries), rules)
    return [f for m in msgs for f in m.findings]


# -- the vendored files ---------------------------------------------------------------------------


def _git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


@pytest.mark.parametrize("version", VERSIONS)
def test_vendored_schema_is_byte_identical_to_the_upstream_blob_named_in_source_md(version):
    table = dict(re.findall(r"`(\d{4}-\d\d-\d\d)/schema\.json` \| `([0-9a-f]{40})`", SOURCE.read_text()))
    assert _git_blob(schema_bytes(version)) == table[version]


def test_the_spec_license_ships_beside_the_schemas():
    text = license_text()
    assert "Apache" in text and "MIT" in text
    assert _git_blob(text.encode()) == "4a93985763241755401a10678395303de4e720ba"


def test_each_version_loads_in_its_own_dialect():
    dialects = {v: load_schema(v)["$schema"] for v in VERSIONS}
    assert {v for v, d in dialects.items() if "draft-07" in d} == {"2024-11-05", "2025-03-26", "2025-06-18"}
    assert {v for v, d in dialects.items() if "2020-12" in d} == {"2025-11-25", "2026-07-28"}


def test_capabilities_with_null_and_fractions_pass_only_thanks_to_the_json_value_correction():
    caps = {"logging": {"level": 0.5}, "extensions": {"com.example/x": {"flag": None}}}
    raw = orjson.loads(schema_bytes("2026-07-28"))
    upstream = jsonschema_rs.validator_for(
        {"$schema": raw["$schema"], "$ref": "#/$defs/ServerCapabilities", "$defs": raw["$defs"]}
    )
    assert not upstream.is_valid(caps)  # the generator bug: JSONValue scalars lack null and number
    assert catalog("2026-07-28").definition("ServerCapabilities").validator.is_valid(caps)


def test_the_correction_refuses_a_json_value_of_another_shape():
    doc = copy.deepcopy(orjson.loads(schema_bytes("2026-07-28")))
    doc["$defs"]["JSONValue"]["anyOf"][2]["type"] = ["string", "number", "boolean", "null"]  # fixed upstream
    with pytest.raises(SchemaLoadError):
        correct_artefacts(doc, "2026-07-28")


# -- dispatch ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_methods_derived_from_the_schema_match_the_direction_tables(version):
    c = catalog(version)
    c2s_req, c2s_note, s2c_req, s2c_note = DIRECTIONS[version]
    assert set(c.requests) == c2s_req | s2c_req
    assert set(c.notifications) == c2s_note | s2c_note


@pytest.mark.parametrize("version", VERSIONS)
def test_every_request_method_of_a_version_has_its_result_definition(version):
    c = catalog(version)
    assert set(c.results) == set(c.requests)
    assert all(name in c.defs for name in c.results.values())


def test_result_table_agrees_with_the_2026_result_response_definitions():
    c = catalog("2026-07-28")
    for method, request_def in c.requests.items():
        response = c.defs[request_def.removesuffix("Request") + "ResultResponse"]
        result = response["properties"]["result"]
        named = {r["$ref"].rsplit("/", 1)[1] for r in result.get("anyOf", [result])}
        assert RESULT_BY_METHOD[method] in named, method


def test_the_codes_with_definitions_are_those_the_schemas_define():
    defined = set()
    for v in VERSIONS:
        defined |= set(catalog(v).error_defs) | set(catalog(v).error_envelopes)
    assert defined == CODES_WITH_DEFINITIONS


def test_custom_methods_and_codes_do_not_grow_the_validator_cache():
    entries = _legacy(
        "2025-11-25",
        *({"c2s": {"jsonrpc": "2.0", "id": i, "method": f"acme/op{i}", "params": {}}} for i in range(1, 200)),
    )
    entries += [
        {"s2c": {"jsonrpc": "2.0", "id": i, "error": {"code": -31000 - i, "message": "x"}}}
        for i in range(1, 200)
    ]
    _findings(entries, select_rules(["MCP15"]))
    before = len(schema_rules._TARGETS)
    more = [{"c2s": {"jsonrpc": "2.0", "id": i, "method": f"acme/other{i}"}} for i in range(300, 400)]
    _findings(_legacy("2025-11-25", *more), select_rules(["MCP15"]))
    assert len(schema_rules._TARGETS) == before


def test_validators_are_compiled_once_per_version_and_definition():
    c = catalog("2025-11-25")
    assert c.request("tools/call") is c.request("tools/call")
    assert c.result("tools/call", {}, None) is c.result("tools/call", {"content": []}, {"name": "x"})
    assert c.result("tools/call", {}, {"task": {}}).definition == "CreateTaskResult"
    assert catalog("2025-11-25") is c


def test_2026_results_are_dispatched_by_result_type_first():
    c = catalog("2026-07-28")
    assert c.result("tools/call", {"resultType": "complete"}, None).definition == "CallToolResult"
    assert c.result("tools/call", {"resultType": "input_required"}, None).definition == "InputRequiredResult"
    assert c.result("tools/call", {"resultType": "task"}, None).definition == "JSONRPCResultResponse"
    assert c.error(-32022).definition == "UnsupportedProtocolVersionError"
    assert c.error(-32602).definition == "InvalidParamsError"
    assert c.error(-32099).definition == "JSONRPCErrorResponse"


def test_each_unknown_result_type_is_named_as_sent_not_as_the_first_one_seen():
    c = catalog("2026-07-28")
    first = c.result("tools/call", {"resultType": "task"}, None)
    second = c.result("tools/call", {"resultType": "deferred"}, None)
    assert "'task'" in first.note and "'deferred'" in second.note
    assert second.validator is first.validator  # (still one compiled validator for both)


def test_a_schema_finding_names_each_message_s_own_unknown_result_type():
    def call(i):
        return {
            "c2s": {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "t", "arguments": {}, "_meta": META},
            }
        }

    def answer(i, result_type):  # `title` must be a string: only the schema says so
        return {
            "s2c": {
                "jsonrpc": "2.0",
                "id": i,
                "result": {
                    "resultType": result_type,
                    "_meta": {
                        "io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1", "title": 5}
                    },
                },
            }
        }

    found = [
        f.message
        for f in _findings([call(1), answer(1, "task"), call(2), answer(2, "deferred")])
        if f.rule == "MCP151"
    ]
    assert len(found) == 2
    assert "'task'" in found[0] and "'deferred'" in found[1] and "'task'" not in found[1]


def test_problems_come_most_specific_first_with_readable_paths():
    c = catalog("2026-07-28")
    bad = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"_meta": {**META, "io.modelcontextprotocol/clientInfo": {"name": "h"}}},
    }
    found = problems(c.request("tools/call").validator.iter_errors(bad))
    assert [(p.path, p.keyword) for p in found] == [
        ('$.params._meta["io.modelcontextprotocol/clientInfo"].version', "required"),
        ("$.params.name", "required"),
    ]


# -- the rules as lint runs them -------------------------------------------------------------------


def test_schema_rules_run_after_every_other_rule_on_a_message():
    order = [r.id for r in RuleSet().message_rules]
    assert order[-3:] == ["MCP150", "MCP151", "MCP152"]


def test_a_problem_a_precise_rule_explains_is_not_reported_twice():
    entries = _legacy(
        "2025-11-25",
        {"c2s": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}},
        {"s2c": {"jsonrpc": "2.0", "id": 1, "error": {"code": "oops", "message": "bad"}}},
    )
    assert [(f.rule, f.path) for f in _findings(entries)] == [("MCP115", "$.error.code")]
    without_precise = [r for r in all_rules().values() if r.id != "MCP115"]
    assert [(f.rule, f.path) for f in _findings(entries, without_precise)] == [("MCP152", "$.error.code")]


def test_params_given_as_an_array_are_explained_by_mcp107_not_the_schema():
    entries = _legacy(
        "2025-06-18", {"c2s": {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ["x"]}}
    )
    assert [(f.rule, f.path) for f in _findings(entries, select_rules(["MCP107", "MCP15"]))] == [
        ("MCP107", "$.params")
    ]
    assert [(f.rule, f.path) for f in _findings(entries, select_rules(["MCP15"]))] == [("MCP150", "$.params")]


def test_a_finding_about_something_else_does_not_hide_a_deeper_schema_problem():
    entries = [
        {
            "c2s": {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "chart", "_meta": META},
            }
        },
        {
            "s2c": {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {"resultType": "complete", "content": [{"type": "image", "data": "AAAA"}]},
            }
        },
    ]
    found = {(f.rule, f.path) for f in _findings(entries, select_rules(["MCP314", "MCP15"]))}
    assert ("MCP151", "$.result.content[0].mimeType") in found
    assert any(rule == "MCP314" for rule, _ in found)  # the missing serverInfo, said by its own rule


def test_a_message_with_several_problems_gets_one_finding_naming_the_rest():
    entries = _legacy(
        "2025-11-25",
        {
            "c2s": {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "sampling/createMessage",
                "params": {"messages": [{"role": "robot"}]},
            }
        },
    )
    [f] = _findings(entries, select_rules(["MCP150"]))
    # three problems: messages[0].content missing, messages[0].role not an allowed value (both at
    # depth 3, so they lead), maxTokens missing (depth 2, last)
    assert f.path == "$.params.messages[0].content"
    assert "2 more schema problems, next at $.params.messages[0].role" in f.message


@pytest.mark.parametrize(
    "raw",
    [
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"n":123456789012345678901234567890}}}',
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\ud800","arguments":{}}}',
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":'
        + '{"a":' * 900
        + "1"
        + "}" * 900
        + "}}",
        '{"jsonrpc":"2.0","id":18446744073709551617,"method":"tools/list"}',
    ],
    ids=["huge-int", "lone-surrogate", "deep-nesting", "id-beyond-64-bits"],
)
def test_odd_but_valid_json_never_crashes_the_schema_rules(raw):
    entries = _legacy("2025-11-25", {"c2s_raw": raw})
    assert [f.rule for f in _findings(entries, select_rules(["MCP15"]))] == []


def test_real_sdk_traffic_of_both_eras_passes_the_schema_rules():
    captures = sorted((ROOT / "fixtures" / "captures").glob("sdk-*.jsonl"))  # recorded SDK sessions
    assert captures, "the recorded SDK captures are part of the fixtures"
    eras = set()
    for path in captures:
        with open(path, "rb") as fh:
            records = [r for r in read_capture(fh) if hasattr(r, "raw")]
        msgs, _ = analyse_all(records, select_rules(["MCP15"]))
        eras |= {m.era.value for m in msgs}
        assert [f.message for m in msgs for f in m.findings] == [], path.name
    assert {"legacy", "modern"} <= eras
