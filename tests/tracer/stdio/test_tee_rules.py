"""The stdio framing rules beyond their per-rule cases: multi-line detection holds for any JSON, and
a stray line is reported once on stdio (MCP801), not also as MCP101/MCP103."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.cases import build_records
from tracer.analyser import analyse_all
from tracer.model import Direction, Record, RecordType
from tracer.rules import select_rules

JSON_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**53), max_value=2**53) | JSON_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(JSON_TEXT, inner, max_size=4),
    max_leaves=15,
)


def frames(lines: list[bytes], direction: Direction = Direction.S2C) -> list[Record]:
    out, offset = [], 0
    for i, raw in enumerate(lines, 1):
        out.append(Record(RecordType.MESSAGE, seq=i, t_ns=i, dir=direction, raw=raw, conn="c", offset=offset))
        offset += len(raw) + 1
    return out


def findings(records: list[Record], select: list[str]):
    msgs, ends = analyse_all(records, select_rules(select))
    return [f for m in msgs for f in m.findings] + ends


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES, st.sampled_from([1, 2, 4, "\t"]))
def test_any_pretty_printed_message_is_one_multiline_finding_and_no_stray_line(value, indent):
    text = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "result": {"value": value}}, indent=indent, ensure_ascii=False
    )
    lines = [line.encode() for line in text.split("\n")]
    found = findings(frames(lines), ["MCP801", "MCP802"])
    assert [(f.rule, f.seq, f.offset) for f in found] == [("MCP802", len(lines), 0)]
    assert "pretty-printed JSON" in found[0].message and "response (id 1)" in found[0].message


@settings(max_examples=200, deadline=None)
@given(st.lists(JSON_TEXT, min_size=1, max_size=4))
def test_raw_newlines_inside_strings_are_one_multiline_finding(parts):
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "\u2028".join(parts) + "\u2029end"},
        },
        ensure_ascii=False,
    )
    raw = body.replace("\u2028", "\n").replace("\u2029", "\n").encode()  # raw newlines inside the string
    lines = raw.split(b"\n")
    found = findings(frames(lines), ["MCP801", "MCP802"])
    assert [(f.rule, f.seq) for f in found] == [("MCP802", len(lines))]
    assert "raw newline inside a string" in found[0].message


def test_a_banner_line_on_stdio_is_one_finding_not_also_a_parse_error():
    records = build_records([{"s2c_raw": "Server listening", "offset": 0}, {"s2c_raw": "42"}])
    found = findings(records, ["MCP1", "MCP8"])
    assert [f.rule for f in found] == ["MCP801", "MCP801"]


def test_the_same_lines_elsewhere_are_parse_errors():
    records = build_records([{"s2c_raw": "Server listening"}, {"s2c_raw": "42"}], default_transport="ndjson")
    assert [f.rule for f in findings(records, ["MCP1", "MCP8"])] == ["MCP101", "MCP103"]


def test_a_modern_server_request_on_stdio_is_reported_once_as_mcp805():
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    entries = [
        {"c2s": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}},
        {"s2c": {"jsonrpc": "2.0", "id": 9, "method": "roots/list", "params": {"_meta": meta}}},
    ]
    on_stdio = [f.rule for f in findings(build_records(entries), ["MCP2", "MCP8"])]
    elsewhere = [f.rule for f in findings(build_records(entries, default_transport="http"), ["MCP2", "MCP8"])]
    assert "MCP805" in on_stdio and "MCP207" not in on_stdio
    assert "MCP207" in elsewhere and "MCP805" not in elsewhere
