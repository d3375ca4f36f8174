"""mitmproxy flow files (`mitmdump -w`) read as MCP records through mitmproxy's own io: detected from
content, replayed in wire order, SSE bodies split into events, a cut file reported not fatal."""

from __future__ import annotations

from mitmproxy import io

from tests.addon_helpers import INIT, INIT_RESULT, body, flow, post, sse_body
from tracer.capture import ReadProblem
from tracer.cli.inputs import register_optional_inputs
from tracer.inputs import open_input
from tracer.model import Direction, Record, RecordType

SSE = [(b"content-type", b"text/event-stream")]
LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
LIST_RESULT = {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}


def _write(path, flows):
    with open(path, "wb") as fh:
        w = io.FlowWriter(fh)
        for f in flows:
            w.add(f)


def _timed(f, t):
    f.request.timestamp_start, f.request.timestamp_end = t, t + 0.001
    f.response.timestamp_start, f.response.timestamp_end = t + 0.002, t + 0.003
    return f


def _read(path):
    register_optional_inputs()
    inp = open_input(str(path))
    items = list(inp.records)
    return (
        inp.format.name,
        [i for i in items if isinstance(i, Record)],
        [i for i in items if isinstance(i, ReadProblem)],
    )


def test_a_flow_file_becomes_paired_envelopes_in_wire_order(tmp_path):
    first = _timed(post(INIT, resp=INIT_RESULT), 1000.0)
    second = _timed(
        post(LIST, resp=sse_body(("message", body(LIST_RESULT).decode(), "e1")), resp_headers=SSE), 1001.0
    )
    other = _timed(flow(path=b"/graphql", content=b'{"query": "{ x }"}', resp_content=b'{"data": 1}'), 1000.5)
    path = tmp_path / "session.flows"  # the extension is not what decides
    _write(path, [second, other, first])  # flow files list flows as they completed, not as they began
    fmt, recs, problems = _read(path)
    assert fmt == "mitm" and not problems
    msgs = [r for r in recs if r.type is RecordType.MESSAGE]
    assert [(r.dir, r.raw) for r in msgs] == [
        (Direction.C2S, body(INIT)),
        (Direction.S2C, body(INIT_RESULT)),
        (Direction.C2S, body(LIST)),
        (Direction.S2C, body(LIST_RESULT)),
    ]
    assert msgs[3].sse == {"stream": second.id, "event": "message", "id": "e1"}
    assert msgs[0].t_ns == int(1000.001 * 1e9)
    assert [r.line for r in msgs] == [3, 3, 1, 1], "findings point at the flow's place in the file"


def test_a_cut_flow_file_reports_the_problem_and_keeps_what_it_read(tmp_path):
    path = tmp_path / "cut.mitm"
    _write(path, [_timed(post(INIT, resp=INIT_RESULT), 1000.0), _timed(post(LIST, resp=LIST_RESULT), 1001.0)])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    fmt, recs, problems = _read(path)
    assert fmt == "mitm" and len(problems) == 1 and "flow 2" in problems[0].message
    assert [r.raw for r in recs if r.type is RecordType.MESSAGE] == [body(INIT), body(INIT_RESULT)]
