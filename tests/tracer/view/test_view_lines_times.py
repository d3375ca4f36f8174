"""The viewer points where lint points and shows the input's own times: NDJSON and host-log rows
carry their original line, bare NDJSON has no time and no latency (in the viewer, its summary and
lint alike), host-log times keep the log's millisecond."""

from __future__ import annotations

import json

from tracer.cli import main
from tracer.view.viewdata import open_view
from ui.format import clock

REQ = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
RES = {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
STRAY = {"jsonrpc": "2.0", "id": 99, "result": {}}  # MCP203: a line lint names
LOST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}  # MCP211: never answered


def _lint_lines(capsys, path) -> dict[str, int]:
    main(["lint", "--format", "json", "--no-progress", str(path)])
    return {f["rule"]: f["line"] for f in json.loads(capsys.readouterr().out)["findings"]}


def _analysed(path):
    view = open_view(str(path))
    view.grow()
    view.start()
    assert view.ann.wait(lambda: view.ann.done, timeout=60), view.ann.error
    return view


def _message_rows(view):
    return [r for r in range(len(view)) if view.basics(r).rtype == "message"]


def test_ndjson_rows_name_the_line_lint_names_and_have_no_time_or_latency(tmp_path, capsys):
    path = tmp_path / "traffic.ndjson"
    path.write_text(
        "\n".join(json.dumps(m) for m in (REQ, RES))
        + "\n\n"
        + json.dumps(STRAY)
        + "\n"
        + json.dumps(LOST)
        + "\n"
    )
    lines = _lint_lines(capsys, path)
    assert lines == {"MCP203": 4, "MCP211": 5}
    view = _analysed(path)
    try:
        rows = _message_rows(view)
        details = [view.detail(r) for r in rows]
        assert [d.where for d in details] == [f"line {n} of traffic.ndjson" for n in (1, 2, 4, 5)]
        assert [d.record.line for d in details] == [1, 2, 4, 5]
        assert all(view.basics(r).t_ns == 0 for r in range(len(view))), "no time where the input has none"
        assert all(d.record.t_ns == 0 for d in details)
        assert view.info(rows[1]).latency_ns is None, "no latency measured between untimed lines"
        assert view.ann.summary["latency"] == {} and view.ann.summary["first_t_ns"] == 0
    finally:
        view.close()


def test_lint_gives_an_untimed_never_answered_request_no_made_up_age(tmp_path, capsys):
    path = tmp_path / "traffic.ndjson"
    path.write_text(json.dumps(LOST) + "\n")
    main(["lint", "--format", "json", str(path)])
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert finding["rule"] == "MCP211"
    assert finding["message"] == "tools/list id 2 was never answered; pending when the capture ended"


def test_host_log_rows_name_their_log_line_and_keep_its_milliseconds(tmp_path, capsys):
    path = tmp_path / "mcp-server-fs.log"
    path.write_text(
        "2025-06-13T14:44:29.900Z [fs] [info] Initializing server...\n"
        "\n"
        f"2025-06-13T14:44:29.945Z [info] [fs] Message from client: {json.dumps(REQ)}\n"
        "    at a continuation line of a stack trace\n"
        f"2025-06-13T14:44:30.001Z [fs] [info] Message from server: {json.dumps(RES)}\n"
        f"2025-06-13T14:44:30.999Z [fs] [info] Message from server: {json.dumps(STRAY)}\n"
    )
    assert _lint_lines(capsys, path) == {"MCP203": 6}
    view = _analysed(path)
    try:
        rows = _message_rows(view)
        details = [view.detail(r) for r in rows]
        assert [d.where for d in details] == [f"line {n} of mcp-server-fs.log" for n in (3, 5, 6)]
        assert [d.record.t_ns % 1_000_000_000 for d in details] == [945_000_000, 1_000_000, 999_000_000]
        assert clock(view.basics(rows[2]).t_ns).endswith(".999"), "the log's millisecond, not one less"
        assert view.info(rows[1]).latency_ns == 56_000_000
    finally:
        view.close()


def test_a_capture_keeps_naming_its_own_lines(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(
        '{"type":"header","format":"mcptrace","version":1,"t_ns":1}\n'
        '{"type":"message","seq":1,"t_ns":5,"dir":"c2s","transport":"stdio","conn":"0",'
        f'"text":{json.dumps(json.dumps(REQ))}}}\n'
    )
    view = open_view(str(path))
    view.grow()
    try:
        assert view.detail(1).where == "capture line 2"
    finally:
        view.close()
