"""The filter language: fields, AND / OR / NOT, groups, errors with a position."""

from __future__ import annotations

import orjson
import pytest

from tracer.analyser import analyse_all
from tracer.filter import AnalysedFields, FilterError, compile_filter, parse_duration
from tracer.model import Direction, Record, RecordType

MS = 1_000_000


def _session():
    msgs = [
        (
            Direction.C2S,
            0,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            },
        ),
        (
            Direction.S2C,
            2,
            {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "s", "version": "1"},
                },
            },
        ),
        (Direction.C2S, 3, {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        (
            Direction.C2S,
            4,
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "Hello World"}},
            },
        ),
        (
            Direction.S2C,
            904,
            {"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "Hello World"}]}},
        ),
        (Direction.C2S, 905, {"jsonrpc": "2.0", "id": "5", "method": "tools/list"}),
        (Direction.S2C, 906, {"jsonrpc": "2.0", "id": "5", "error": {"code": -32601, "message": "nope"}}),
        (Direction.S2C, 907, {"jsonrpc": "2.0", "id": 77, "result": {}}),  # answers nothing: MCP203
    ]
    # (times start at 1 s: a t_ns of 0 means "the input has no time", which has no latency)
    recs = [
        Record(RecordType.MESSAGE, seq=i + 1, t_ns=(1000 + t) * MS, dir=d, raw=orjson.dumps(o), conn="c1")
        for i, (d, t, o) in enumerate(msgs)
    ]
    analysed, _ = analyse_all(recs)
    return analysed


SESSION = _session()


def seqs(expr: str) -> list[int]:
    flt = compile_filter(expr)
    return [m.seq for m in SESSION if flt(AnalysedFields(m))]


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("method:tools/call", [4, 5]),  # the request and the response that answers it
        ("method:tools/*", [4, 5, 6, 7]),
        ("kind:error", [7]),
        ("kind:response", [2, 5, 7, 8]),
        ("dir:s2c", [2, 5, 7, 8]),
        ("dir:→ kind:notification", [3]),
        ("era:legacy method:initialize", [1, 2]),
        ("id:5", [4, 5, 6, 7]),  # 5 and "5" read the same
        ("latency>500ms", [4, 5]),
        ("latency<=2ms", [1, 2, 6, 7]),
        ("rule:MCP203", [8]),
        ("rule:MCP2", [8]),
        ('"hello world"', [4, 5]),
        ("hello world", [4, 5]),
        ("kind:error | kind:notification", [3, 7]),
        ("!dir:s2c !kind:notification", [1, 4, 6]),
        ("!(method:tools/call | method:initialize) kind:request", [6]),
        ("has:partner kind:request", [1, 4, 6]),
        ("sev:error", [8]),
        ("", [1, 2, 3, 4, 5, 6, 7, 8]),
    ],
)
def test_filter_expressions_select_the_messages_a_user_expects(expr, expected):
    assert seqs(expr) == expected


@pytest.mark.parametrize(
    ("expr", "pos"),
    [
        ("kind:bogus", 0),
        ("color:red", 0),
        ("method:tools/call (kind:error", 18),
        ('"unterminated', 0),
        ("latency>fast", 0),
        ("era:", 0),
        ("a | | b", 4),
        ("rule:nonsense", 0),
    ],
)
def test_bad_expressions_say_what_is_wrong_and_where(expr, pos):
    with pytest.raises(FilterError) as info:
        compile_filter(expr)
    assert info.value.pos == pos
    assert str(info.value)


def test_durations_take_units_and_default_to_milliseconds():
    assert parse_duration("500ms") == 500 * MS
    assert parse_duration("2s") == 2000 * MS
    assert parse_duration("150us") == 150_000
    assert parse_duration("1.5") == 1_500_000


def test_a_filter_knows_whether_it_needs_the_analysis():
    assert compile_filter("era:legacy").needs_analysis
    assert compile_filter("method:ping").needs_analysis  # a response's method comes from pairing
    assert not compile_filter('dir:c2s "ping" id:3').needs_analysis


def test_rule_names_resolve_to_ids_when_given():
    flt = compile_filter("rule:response-id-unknown", rule_names={"response-id-unknown": "MCP203"})
    assert [m.seq for m in SESSION if flt(AnalysedFields(m))] == [8]


def test_free_text_finds_messages_stored_as_text_or_base64_in_the_viewer(tmp_path):
    from tracer.capture import CaptureWriter, header_record
    from tracer.view.viewdata import CaptureView
    from tracer.view.viewfilter import FilterJob

    path = tmp_path / "cap.jsonl"
    with CaptureWriter(path, header_record("stdio")) as w:
        for raw in (
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
            b'{"note":"Needle here \\"q\\""}\xff',
            b'{"text":"needle"}',
            b"nothing",
        ):
            w.write(Record(RecordType.MESSAGE, dir=Direction.C2S, raw=raw, conn="c"))
    view = CaptureView(str(path), analyse=False)
    view.index.build()
    try:
        assert list(FilterJob(view, compile_filter("needle")).run()) == [2, 3]
        assert list(FilterJob(view, compile_filter('needle !"here"')).run()) == [3]
        assert list(FilterJob(view, compile_filter("needle | ping")).run()) == [1, 2, 3]
    finally:
        view.close()


@pytest.mark.parametrize(
    "name, text",
    [
        (
            "live.ndjson",
            '{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":1,"result":{"needle":1}}\n'
            '{"jsonrpc":"2.0","method":"notifications/needle"}\n',
        ),
        (
            "mcp.log",
            '2025-06-13T14:44:29.945Z [info] [fs] Message from client: {"jsonrpc":"2.0","id":1,"method":"ping"}\n'
            '2025-06-13T14:44:29.950Z [info] [fs] Message from server: {"jsonrpc":"2.0","id":1,"result":{"needle":1}}\n'
            '2025-06-13T14:44:29.951Z [info] [fs] Message from server: {"jsonrpc":"2.0","method":"notifications/needle"}\n',
        ),
    ],
)
def test_free_text_finds_rows_of_an_ndjson_file_or_host_log_read_lazily_in_the_viewer(tmp_path, name, text):
    # Their rows are made on demand (tracer.inputs.lazy.RecordIndex), not lines of a capture file:
    # the capture's block search raised AttributeError ('span'), and the viewer quit on `/needle`.
    from tracer.view.viewdata import open_view
    from tracer.view.viewfilter import FilterJob

    path = tmp_path / name
    path.write_text(text)
    view = open_view(str(path))
    view.index.build()
    try:
        assert list(FilterJob(view, compile_filter("needle")).run()) == [2, 3]
        assert list(FilterJob(view, compile_filter("needle !notifications")).run()) == [2]
    finally:
        view.close()
