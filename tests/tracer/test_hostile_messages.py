"""JSON-RPC values of the wrong type, deep nesting and lone surrogates (issue 12, families 2-4)
through lint and every report format: findings where the spec has them, never a crash, and every
report stays a valid document in UTF-8."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "c", "version": "1"},
}
DEEP = "[" * 600 + "]" * 600


def _modern(i, method, params=None):
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": {**(params or {}), "_meta": META}}


# Families of the issue, each a (client message, server answer) of a modern session.
CONFUSED = [
    (
        "notifications/message level a list",
        None,
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": ["info"], "data": "x"}},
    ),
    (
        "cursor a list",
        _modern(2, "tools/list", {"cursor": ["page2"]}),
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "bad cursor"}},
    ),
    (
        "content[0].type a list",
        _modern(3, "tools/call", {"name": "echo", "arguments": {}}),
        {"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": ["text"], "text": "x"}]}},
    ),
    (
        "error.code a list",
        _modern(4, "tools/list"),
        {"jsonrpc": "2.0", "id": 4, "error": {"code": [-32602], "message": "x"}},
    ),
    (
        "tools/call name an object",
        _modern(5, "tools/call", {"name": {"n": "echo"}, "arguments": {}}),
        {"jsonrpc": "2.0", "id": 5, "result": {"content": []}},
    ),
    (
        "inputRequest method a list",
        _modern(6, "tools/call", {"name": "echo", "arguments": {}}),
        {
            "jsonrpc": "2.0",
            "id": 6,
            "result": {
                "resultType": "input_required",
                "inputRequests": {"a": {"method": ["elicitation/create"], "params": {}}},
            },
        },
    ),
]


def _lines() -> list[str]:
    out = [
        json.dumps(_modern(1, "tools/list")),
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {
                    "tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
                    "nextCursor": "page2",
                },
            }
        ),
    ]
    for _, req, resp in CONFUSED:
        out += [json.dumps(x) for x in (req, resp) if x is not None]
    # family 3: nested 600 deep inside a schema-invalid message, and in a result
    out.append(
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":5,"arguments":{"v":' + DEEP + "},"
        '"_meta":' + json.dumps(META) + "}}"
    )
    out.append('{"jsonrpc":"2.0","id":7,"result":{"content":[],"v":' + DEEP + "}}")
    # family 4: lone surrogates (legal JSON escapes) in a name, an error message and a method
    out.append(
        '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"\\ud800","arguments":{},'
        '"_meta":' + json.dumps(META) + "}}"
    )
    out.append('{"jsonrpc":"2.0","id":8,"error":{"code":"\\udfff","message":"\\ud83d broken"}}')
    out.append('{"jsonrpc":"2.0","method":"\\udc80/x"}')
    return out


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    path = tmp_path_factory.mktemp("hostile") / "hostile.ndjson"
    path.write_text("\n".join(_lines()) + "\n", encoding="ascii")  # (json.dumps escapes: still ASCII)
    return path


def _lint(path, fmt: str) -> tuple[int, bytes, str]:
    p = subprocess.run(
        [sys.executable, "-m", "tracer", "lint", "--format", fmt, str(path)],
        capture_output=True,
        env={"PYTHONIOENCODING": "utf-8", "PATH": "/usr/bin:/bin"},
    )
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "junit", "github"])
def test_every_report_format_takes_hostile_values_whole_and_in_utf8(hostile, fmt):
    code, out, err = _lint(hostile, fmt)
    assert code == 1 and "Traceback" not in err and "internal error" not in err, err
    text = out.decode("utf-8")  # strict: no lone surrogate reaches the output
    if fmt in ("json", "sarif"):
        json.loads(text)  # one complete, valid document
    elif fmt == "junit":
        ET.fromstring(out)
    assert "\\udc80/x" in text  # the method with a lone surrogate is shown, as its escape


def test_wrong_types_get_their_findings_and_the_rest_of_the_session_is_still_judged(hostile):
    _, out, _ = _lint(hostile, "json")
    findings = json.loads(out)["findings"]
    by_line: dict[int, set[str]] = {}
    for f in findings:
        by_line.setdefault(f["line"], set()).add(f["rule"])
    lines = _lines()
    level = lines.index(json.dumps(CONFUSED[0][2])) + 1
    assert by_line.get(level), "the log level that is a list is reported"
    deep_req = next(i for i, x in enumerate(lines, 1) if x.startswith('{"jsonrpc":"2.0","id":7,"method"'))
    assert {"MCP617", "MCP150"} & by_line.get(deep_req, set()), "the deep request's bad tool name is reported"
    assert "MCP151" in by_line.get(deep_req + 1, set()), (
        "the deep, schema-invalid result gets its schema finding"
    )
    surrogate_req = next(
        i for i, x in enumerate(lines, 1) if x.startswith('{"jsonrpc":"2.0","id":8,"method"')
    )
    assert surrogate_req  # read and analysed (its findings depend on the tool list, not on the escape)
    assert json.loads(out)["summary"]["messages"] == len(lines)


def _analyse(*raws: tuple[str, str]):
    from tracer.analyser import analyse_all
    from tracer.model import Direction, Record, RecordType

    recs = [
        Record(RecordType.MESSAGE, seq=i, t_ns=i, dir=Direction(d), raw=raw.encode(), conn="c")
        for i, (d, raw) in enumerate(raws, 1)
    ]
    return analyse_all(recs)


@pytest.mark.parametrize(
    ("code", "fallback_flagged"), [("-32022", True), ("[-32022]", False), ('{"c":1}', False)]
)
def test_a_discover_error_whose_code_is_no_integer_is_no_modern_error_and_no_crash(code, fallback_flagged):
    msgs, _ = _analyse(
        (
            "c2s",
            '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":' + json.dumps(META) + "}}",
        ),
        ("s2c", '{"jsonrpc":"2.0","id":1,"error":{"code":' + code + ',"message":"x"}}'),
        (
            "c2s",
            '{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
            '"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}',
        ),
    )
    assert ("MCP807" in {f.rule for f in msgs[2].findings}) is fallback_flagged


def test_a_baggage_value_with_a_lone_surrogate_is_judged_not_crashed_on():
    meta = {**META, "baggage": "k=\ud800"}
    text = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}})
    msgs, _ = _analyse(("c2s", text))
    assert any(f.path and "baggage" in f.path for f in msgs[0].findings)


def test_an_unsubscribe_whose_uri_is_an_array_is_reported_not_crashed_on():
    msgs, _ = _analyse(
        (
            "c2s",
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "resources/unsubscribe",
                    "params": {"uri": ["file:///a"]},
                }
            ),
        )
    )
    assert msgs[0].findings  # the schema rule names the bad uri


def test_sampling_tool_use_ids_that_are_arrays_and_a_1000_deep_tool_schema_are_judged_not_crashed_on():
    sampling = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "sampling/createMessage",
        "params": {
            "maxTokens": 5,
            "messages": [
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": ["u1"], "name": "t", "input": {}}],
                },
                {"role": "user", "content": [{"type": "tool_result", "toolUseId": ["u1"], "content": []}]},
            ],
        },
    }
    deep = json.loads("[" * 1000 + "]" * 1000)  # (with the message around it: under orjson's 1,024 levels)
    tools = {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {
            "tools": [
                {
                    "name": "t",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"q": {"type": "string", "x-mcp-header": "Q"}},
                        "allOf": deep,
                    },
                }
            ]
        },
    }
    msgs, _ = _analyse(
        ("s2c", json.dumps(sampling)),
        ("c2s", json.dumps(_modern(2, "tools/list"))),
        ("s2c", json.dumps(tools)),
    )
    assert len(msgs) == 3
