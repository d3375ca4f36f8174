"""One spelling of a JSON path everywhere (README: `$["io.modelcontextprotocol/serverInfo"]`): rule
findings, schema findings and replay differences print the same path the same way."""

from __future__ import annotations

import json

from tests.cases import build_records
from tracer.analyser import analyse_all
from tracer.jsonpath import json_path, member
from tracer.replay.diff import Ignores, diff
from tracer.rules import select_rules
from tracer.schemas.errors import SchemaProblem

KEY = "io.modelcontextprotocol/clientInfo"


def test_plain_names_are_dotted_and_other_members_are_json_strings_in_brackets():
    assert json_path(("params", "_meta", KEY, "version")) == f'$.params._meta["{KEY}"].version'
    assert json_path(("result", "content", 0, "text")) == "$.result.content[0].text"
    assert json_path(("a b", 0, "c'd", 'q"t')) == '$["a b"][0]["c\'d"]["q\\"t"]'
    assert member("$.x", "x-mcp-header") == "$.x.x-mcp-header"
    assert json.loads(json_path(("café",))[2:-1]) == "café"  # the bracketed key reads back as JSON


def test_a_rule_finding_and_a_schema_finding_spell_the_same_member_alike():
    records = build_records(
        [
            {
                "c2s": {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {
                        "name": "t",
                        "_meta": {
                            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                            KEY: {"name": "h"},
                        },
                    },
                }
            }
        ],
        "stdio",
    )
    msgs, _ = analyse_all(records, select_rules(["MCP313"]))
    rule_paths = {f.path for m in msgs for f in m.findings}
    schema_path = SchemaProblem(("params", "_meta", KEY), "type", "", None).path
    assert schema_path in rule_paths
    assert schema_path == f'$.params._meta["{KEY}"]'  # the spelling README documents


def test_a_replay_difference_path_can_be_pasted_into_an_ignore_pattern():
    a = {"result": {"_meta": {"café/x": 1, "io.x/y": 2}, "n": 1}}
    b = {"result": {"_meta": {"café/x": 3, "io.x/y": 4}, "n": 2}}
    found = diff(a, b)
    assert [d.path for d in found] == [
        '$.result._meta["caf\\u00e9/x"]',
        '$.result._meta["io.x/y"]',
        "$.result.n",
    ]
    for d in found:
        assert [x.path for x in diff(a, b, Ignores([d.path]))] == [x.path for x in found if x is not d]
