"""Inputs are detected from content: our capture, bare NDJSON, MCP host logs."""

from __future__ import annotations

import pytest

from tracer.analyser import analyse_all
from tracer.capture import ReadProblem
from tracer.inputs import InputError, open_input
from tracer.model import Direction, Era, Kind, Record, RecordType

INIT = (
    '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"claude-ai","version":"0.1.0"}}}'
)
INIT_RESULT = (
    '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":'
    '{"tools":{}},"serverInfo":{"name":"fs","version":"1.0"}}}'
)


def _records(path):
    inp = open_input(str(path))
    items = list(inp.records)
    return (
        inp.format.name,
        [i for i in items if isinstance(i, Record)],
        [i for i in items if isinstance(i, ReadProblem)],
    )


def test_claude_desktop_log_lines_become_messages_and_host_events(tmp_path):
    log = tmp_path / "mcp-server-fs.log"  # the name is not what decides
    log.write_text(
        "2025-06-13T14:44:29.900Z [fs] [info] Initializing server...\n"
        f"2025-06-13T14:44:29.945Z [info] [fs] Message from client: {INIT} {{ metadata: undefined }}\n"
        f"2025-06-13T14:44:30.001Z [fs] [info] Message from server: {INIT_RESULT}\n"
        "2025-06-13T14:44:31.000Z [error] [fs] Unexpected token 'S', \"Starting...\" is not valid JSON\n"
    )
    fmt, recs, problems = _records(log)
    assert fmt == "hostlog" and not problems
    msgs = [r for r in recs if r.type is RecordType.MESSAGE]
    assert [r.dir for r in msgs] == [Direction.C2S, Direction.S2C]
    assert msgs[0].raw == INIT.encode(), "the host's trailing metadata is not part of the message"
    assert msgs[1].t_ns - msgs[0].t_ns == 56_000_000
    events = [r.data for r in recs if r.type is RecordType.EVENT]
    assert any("not valid JSON" in e["text"] and e["level"] == "error" for e in events)
    analysed, _ends = analyse_all(recs)
    assert [a.era for a in analysed] == [Era.LEGACY, Era.LEGACY]
    assert analysed[1].version == "2025-06-18" and analysed[1].latency_ns == 56_000_000


def test_ndjson_without_directions_gets_inferred_ones_marked_as_such(tmp_path):
    f = tmp_path / "traffic.txt"
    f.write_text(
        INIT + "\n" + INIT_RESULT + "\n" + '{"jsonrpc":"2.0","method":"notifications/message",'
        '"params":{"level":"info","data":"hi"}}\n'
    )
    fmt, recs, _ = _records(f)
    assert fmt == "ndjson"
    assert [r.dir for r in recs] == [Direction.C2S, Direction.S2C, Direction.S2C]
    assert all(r.dir_inferred for r in recs)
    assert [r.line for r in recs] == [1, 2, 3]


def test_random_bytes_are_a_clear_input_error(tmp_path):
    f = tmp_path / "noise.bin"
    f.write_bytes(bytes(range(256)) * 50)
    with pytest.raises(InputError, match="not a recognised MCP capture"):
        open_input(str(f))


def test_missing_and_empty_files_are_clear_input_errors(tmp_path):
    with pytest.raises(InputError, match="No such file"):
        open_input(str(tmp_path / "nope.jsonl"))
    (tmp_path / "empty").write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        open_input(str(tmp_path / "empty"))


def test_a_50_mb_single_line_is_read_as_one_message(tmp_path):
    f = tmp_path / "big.ndjson"
    blob = "x" * (50 * 1024 * 1024)
    f.write_text(
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"b":"'
        + blob
        + '"}}}\n'
    )
    fmt, recs, _ = _records(f)
    assert fmt == "ndjson" and len(recs) == 1
    analysed, _ = analyse_all(recs)
    assert analysed[0].kind is Kind.REQUEST


def test_ndjson_progress_and_cancels_take_the_side_their_request_names(tmp_path):
    """A server's progress on the host's tools/call is the server's (no MCP512 "no request supplied
    that token"), and a cancel of a server's sampling request is the server's; a ping names nothing
    and stays the host's."""
    call = (
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{},'
        '"_meta":{"progressToken":"tok-2"}}}'
    )
    progress = (
        '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-2","progress":1}}'
    )
    sample = (
        '{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}'
    )
    cancel = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":0}}'
    ping = '{"jsonrpc":"2.0","id":9,"method":"ping"}'
    result = '{"jsonrpc":"2.0","id":2,"result":{"content":[]}}'
    f = tmp_path / "traffic.ndjson"
    f.write_text(
        "\n".join([INIT, INIT_RESULT, call, progress, progress, sample, cancel, result, ping]) + "\n"
    )
    _fmt, recs, _ = _records(f)
    c, s = Direction.C2S, Direction.S2C
    assert [r.dir for r in recs] == [c, s, c, s, s, s, s, s, c]
    analysed, ends = analyse_all(recs)
    found = [x.rule for a in analysed for x in a.findings] + [x.rule for x in ends]
    assert "MCP512" not in found and "MCP502" not in found


def test_ndjson_progress_on_a_request_before_the_log_began_is_the_servers(tmp_path):
    """A log that begins mid-session: progress whose token no request in it supplied is taken as
    the server's (servers report progress), so MCP512 says no *client* request supplied it."""
    f = tmp_path / "tail.ndjson"
    progress = '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}'
    f.write_text(progress + "\n" + '{"jsonrpc":"2.0","id":7,"result":{"content":[]}}\n')
    _fmt, recs, _ = _records(f)
    assert [r.dir for r in recs] == [Direction.S2C, Direction.S2C]
