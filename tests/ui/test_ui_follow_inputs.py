"""`mcptrace view --follow` on a host log still being written (the common case: a live Claude
Desktop log): lines appended while the viewer follows it appear as rows, analysed, and a log
rotated away is said on the status line while its rows stay."""

from __future__ import annotations

import os

from tests.tracer.view.test_view_lazy_rows import _converted_lines
from tests.ui_support import SIZE, until, viewer
from ui.app import McpTraceApp

CLIENT, SERVER = "Message from client: ", "Message from server: "


def _line(ms: int, who: str, msg: str) -> bytes:
    return f"2025-06-13T14:44:{ms // 1000:02d}.{ms % 1000:03d}Z [info] [alpha] {who}{msg}\n".encode()


def _exchange(ms: int, n: int) -> bytes:
    return _line(ms, CLIENT, f'{{"jsonrpc":"2.0","id":{n},"method":"tools/list"}}') + _line(
        ms + 1, SERVER, f'{{"jsonrpc":"2.0","id":{n},"result":{{"tools":[]}}}}'
    )


# (the host's "Initializing server..." line is an event row)
START = _line(0, "", "Initializing server...") + _line(
    1, CLIENT, '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}'
)


async def test_lines_appended_to_a_followed_host_log_appear_as_analysed_rows(tmp_path):
    path = tmp_path / "mcp-server-alpha.log"
    path.write_bytes(START)
    app = McpTraceApp(str(path), follow=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the log to open")
        scr = viewer(app)
        await until(pilot, lambda: scr.index_done and scr.list.count == 3, "the rows written so far")
        assert scr.follow and scr.view.follow and scr.status.state.follow
        with open(path, "ab") as fh:
            fh.write(_line(2, SERVER, '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}'))
            fh.write(_exchange(10, 1) + _exchange(20, 2)[:30])  # the last line still being written
        await until(pilot, lambda: scr.list.count == 6, "the appended rows")
        with open(path, "ab") as fh:
            fh.write(_exchange(20, 2)[30:])
        await until(pilot, lambda: scr.list.count == 8, "the line once whole, and its answer")
        assert scr.list.selected_row == 7, "at the bottom, the selection follows"
        await until(pilot, lambda: scr.view.info(7).analysed, "the analysis of the new rows")
        assert scr.view.info(7).partner == 6 and scr.view.info(7).label == "tools/list"
        assert [scr.view.index.line(r) for r in range(8)] == _converted_lines(str(path))


async def test_a_followed_host_log_rotated_away_is_said_and_its_rows_stay(tmp_path, monkeypatch):
    path = tmp_path / "mcp-server-alpha.log"
    path.write_bytes(START + _exchange(10, 1))
    said: list[str] = []
    monkeypatch.setattr(McpTraceApp, "notify", lambda self, message, **kw: said.append(str(message)))
    app = McpTraceApp(str(path), follow=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the log to open")
        scr = viewer(app)
        await until(pilot, lambda: scr.index_done and scr.list.count == 5, "the rows")
        os.rename(path, tmp_path / "mcp-server-alpha1.log")  # (as Claude Desktop rotates its logs)
        path.write_bytes(START)
        await until(pilot, lambda: not scr.follow, "following to stop")
        assert any("rotated" in m for m in said) and "rotated" in (scr.status.state.note or "")
        assert scr.list.count == 5 and not scr.status.state.follow


async def test_f_on_a_host_log_opened_without_follow_starts_following_it(tmp_path):
    path = tmp_path / "mcp-server-alpha.log"
    path.write_bytes(START)
    app = McpTraceApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the log to open")
        scr = viewer(app)
        await until(pilot, lambda: scr.index_done and scr.list.count == 3, "the log read once")
        assert not scr.view.follow
        await pilot.press("f")
        await until(pilot, lambda: scr.view is not None and scr.view.follow and scr.index_done, "following")
        with open(path, "ab") as fh:
            fh.write(_exchange(10, 1))
        await until(pilot, lambda: scr.list.count == 5, "the appended rows")
        assert scr.follow and scr.status.state.follow


async def test_a_followed_host_log_empty_when_opened_waits_to_tell_its_format_then_reads_it_as_one(tmp_path):
    path = tmp_path / "mcp-server-alpha.log"
    path.write_bytes(b"")  # (the host has created its log, and written nothing yet)
    app = McpTraceApp(str(path), follow=True)
    async with app.run_test(size=SIZE) as pilot:
        scr = viewer(app)
        await until(
            pilot, lambda: "0 bytes, not enough yet to tell its format" in scr.status.state.note, "the wait"
        )
        with open(path, "ab") as fh:
            fh.write(START[:40])  # a first line still being written
        await until(pilot, lambda: "40 bytes, not enough yet" in scr.status.state.note, "the wait, on")
        assert scr.view is None
        with open(path, "ab") as fh:
            fh.write(START[40:])
        await until(pilot, lambda: scr.index_done and scr.list.count == 3, "the host log's rows")
        assert scr.follow and scr.view.follow and scr.view.index.fmt.name == "hostlog"
        assert [scr.view.index.line(r) for r in range(3)] == _converted_lines(str(path))


async def test_f_on_a_har_opened_with_follow_reads_it_again_as_rewritten(tmp_path, monkeypatch):
    import json

    from tests.tracer.inputs.test_har_import import _session, har

    entries = _session()
    path = tmp_path / "session.har"
    path.write_text(json.dumps(har(entries[:2])))
    said: list[str] = []
    monkeypatch.setattr(McpTraceApp, "notify", lambda self, message, **kw: said.append(str(message)))
    app = McpTraceApp(str(path), follow=True)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the HAR to open")
        scr = viewer(app)
        await until(pilot, lambda: scr.index_done, "the HAR read")
        assert any("a HAR is read to its end once" in m and "f reads it again" in m for m in said), said
        first = scr.list.count
        path.write_text(json.dumps(har(entries)))  # (rewritten whole by its recorder, with more entries)
        expected = len(_converted_lines(str(path)))
        await pilot.press("f")
        await until(pilot, lambda: scr.index_done and scr.list.count == expected, "the HAR read again")
        assert expected > first and not scr.follow
