"""Host logs: a server's start ("Initializing server...", or its first line in the log) starts its
stream, so the start-of-session rules judge it; each restart is a new connection; a "Message from"
line whose payload is not JSON is host text, never a message."""

from __future__ import annotations

from tracer.analyser import analyse_all
from tracer.inputs import open_input
from tracer.model import Record, RecordType

INIT = (
    '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"claude-ai","version":"0.1.0"}}}'
)
INIT_RESULT = (
    '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":'
    '{"tools":{}},"serverInfo":{"name":"fs","version":"1.0"}}}'
)
PING = '{"jsonrpc":"2.0","id":1,"method":"ping"}'  # legacy-only: the era is known without initialize
PONG = '{"jsonrpc":"2.0","id":1,"result":{}}'


def _lint(tmp_path, text):
    log = tmp_path / "mcp.log"
    log.write_text(text)
    inp = open_input(str(log))
    assert inp.format.name == "hostlog"
    recs = [r for r in inp.records if isinstance(r, Record)]
    msgs, ends = analyse_all(recs)
    return recs, msgs, [f for m in msgs for f in m.findings] + ends


def test_a_server_started_in_the_log_whose_first_client_message_is_not_initialize_is_flagged(tmp_path):
    _recs, _msgs, found = _lint(
        tmp_path,
        (
            "2025-06-13T14:44:29.900Z [fs] [info] Initializing server...\n"
            f"2025-06-13T14:44:29.945Z [info] [fs] Message from client: {PING} {{ metadata: undefined }}\n"
            f"2025-06-13T14:44:30.001Z [info] [fs] Message from server: {PONG}\n"
        ),
    )
    assert [f.seq for f in found if f.rule == "MCP401"] == [2]


def test_a_clean_start_in_the_log_passes_the_start_of_session_rules(tmp_path):
    _recs, _msgs, found = _lint(
        tmp_path,
        (
            "2025-06-13T14:44:29.900Z [fs] [info] Initializing server...\n"
            f"2025-06-13T14:44:29.945Z [info] [fs] Message from client: {INIT}\n"
            f"2025-06-13T14:44:30.001Z [info] [fs] Message from server: {INIT_RESULT}\n"
        ),
    )
    assert not [f for f in found if f.rule.startswith("MCP4")]


def test_each_restart_is_a_new_connection_judged_from_its_own_start(tmp_path):
    recs, msgs, found = _lint(
        tmp_path,
        (
            f"2025-06-13T14:44:29.945Z [info] [fs] Message from client: {INIT}\n"
            f"2025-06-13T14:44:30.001Z [info] [fs] Message from server: {INIT_RESULT}\n"
            "2025-06-13T14:45:00.000Z [fs] [info] Initializing server...\n"
            f"2025-06-13T14:45:00.100Z [info] [fs] Message from client: {PING}\n"
            "2025-06-13T14:46:00.000Z [fs] [info] Initializing server...\n"
            f"2025-06-13T14:46:00.100Z [info] [fs] Message from client: {INIT}\n"
        ),
    )
    assert [m.rec.conn for m in msgs] == ["fs", "fs", "fs#2", "fs#3"]
    closes = [r for r in recs if r.type is RecordType.EVENT and (r.data or {}).get("event") == "closed"]
    assert [r.conn for r in closes] == ["fs", "fs#2"]
    assert [f.seq for f in found if f.rule == "MCP401"] == [msgs[2].seq]
    assert not [f for f in found if f.rule == "MCP402"], "a restarted server's initialize is its first"


def test_interleaved_servers_each_start_their_own_stream(tmp_path):
    _recs, msgs, found = _lint(
        tmp_path,
        (
            f"2025-06-13T14:44:29.945Z [info] [fs] Message from client: {INIT}\n"
            f"2025-06-13T14:44:29.946Z [info] [git] Message from client: {PING}\n"
            f"2025-06-13T14:44:30.001Z [info] [fs] Message from server: {INIT_RESULT}\n"
        ),
    )
    assert [(m.rec.conn, m.rec.offset) for m in msgs] == [("fs", 0), ("git", 0), ("fs", 0)]
    assert [f.rule for f in found if f.rule == "MCP401"] == ["MCP401"]


def test_a_message_line_whose_payload_is_not_json_is_host_text_not_a_message(tmp_path):
    recs, msgs, found = _lint(
        tmp_path,
        (
            f"2025-06-13T14:44:29.945Z [info] [fs] Message from client: {INIT}\n"
            "2025-06-13T14:44:29.950Z [info] [fs] Message from server: Starting filesystem server...\n"
            f"2025-06-13T14:44:30.001Z [info] [fs] Message from server: {INIT_RESULT}\n"
        ),
    )
    assert len(msgs) == 2
    texts = [r.data["text"] for r in recs if r.type is RecordType.EVENT]
    assert texts == ["Message from server: Starting filesystem server..."]
    assert not [f for f in found if f.rule.startswith("MCP1")]


def test_a_message_payload_nested_past_the_decoders_limit_is_host_text_and_the_lines_after_are_read(tmp_path):
    # 100,000 levels: past orjson's limit and the stdlib decoder's recursion limit. Before, the
    # decoder's RecursionError ended the read: the whole log "cannot be read" (lint exit 2).
    deep = "[" * 100_000 + "]" * 100_000
    recs, msgs, _ = _lint(
        tmp_path,
        (
            f"2025-06-13T14:44:29.945Z [info] [fs] Message from client: {INIT}\n"
            f"2025-06-13T14:44:29.950Z [info] [fs] Message from server: {deep}\n"
            f"2025-06-13T14:44:30.001Z [info] [fs] Message from server: {INIT_RESULT}\n"
        ),
    )
    assert [m.rec.dir.value for m in msgs] == ["c2s", "s2c"]
    assert [r.data["text"][:24] for r in recs if r.type is RecordType.EVENT] == ["Message from server: [[["]
