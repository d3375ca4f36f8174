"""Hostile captures in the viewer: what a peer or a damaged file puts in a capture is shown as it
is, never read as markup or as terminal control sequences, and nothing it holds ends the viewer."""

from __future__ import annotations

import json

from tests.ui_support import SIZE, opened_and_analysed, plain, until
from ui.app import McpTraceApp

HEADER = {
    "type": "header",
    "format": "mcptrace",
    "version": 1,
    "tool": "mcptrace/0.1.0",
    "started": "2026-11-29T20:35:50.450Z",
    "t_ns": 1,
    "transport": "stdio",
}


def _message(seq: int, direction: str, body: dict, conn: str = "c1") -> dict:
    text = json.dumps(body)
    return {
        "type": "message",
        "seq": seq,
        "t_ns": seq,
        "dir": direction,
        "transport": "stdio",
        "conn": conn,
        "text": text,
    }


def _write(path, records) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


async def test_the_list_draws_escape_sequences_of_a_capture_as_visible_characters(tmp_path):
    path = tmp_path / "esc.jsonl"
    evil = "\x1b]0;owned\x07\x1b[31mred\x00"
    _write(
        path,
        [
            HEADER,
            _message(1, "c2s", {"jsonrpc": "2.0", "id": evil, "method": evil}),
            {"type": "stderr", "seq": 2, "t_ns": 2, "transport": "stdio", "conn": "c1", "text": evil},
        ],
    )
    app = McpTraceApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        drawn = ["".join(s.text for s in scr.list.render_line(y)) for y in range(len(scr.view))]
        assert all(not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in line) for line in drawn), drawn
        assert "␛]0;owned␇␛[31mred␀" in drawn[1] and "␛]0;owned" in drawn[2]
        assert len({len(line) for line in drawn}) == 1  # one cell for each character: columns hold
        scr.list.select_row(1)
        await until(pilot, lambda: scr.detail.shown is not None and scr.detail.shown.row == 1, "detail")
        shown = plain(scr.detail.body)
        assert "\x1b" not in shown and "␛[31mred" in shown


async def test_bidirectional_overrides_of_a_capture_are_drawn_visibly_not_obeyed(tmp_path):
    path = tmp_path / "bidi.jsonl"
    evil = "tool\u202eexe.\u2066x\u2069\u200e\u200f\u061c"
    message = _message(1, "c2s", {"jsonrpc": "2.0", "id": evil, "method": evil})
    message["text"] = json.dumps({"jsonrpc": "2.0", "id": evil, "method": evil}, ensure_ascii=False)
    # as a real peer writes them: the characters themselves in UTF-8, not JSON escapes
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (HEADER, message)), "utf-8")
    app = McpTraceApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        drawn = ["".join(s.text for s in scr.list.render_line(y)) for y in range(len(scr.view))]
        bidi = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
        assert all(not any(ord(c) in bidi for c in line) for line in drawn), drawn
        assert "tool\ufffdexe.\ufffdx\ufffd" in drawn[1]
        assert len({len(line) for line in drawn}) == 1  # one cell for each character: columns hold
        scr.list.select_row(1)
        await until(pilot, lambda: scr.detail.shown is not None and scr.detail.shown.row == 1, "detail")
        shown = plain(scr.detail.body)
        assert "\u202e" not in shown and "\u2066" not in shown and "tool\ufffdexe." in shown
    assert evil in path.read_text("utf-8")  # the capture keeps what crossed the wire


async def test_markup_in_names_methods_and_a_typed_filter_is_shown_not_read(tmp_path):
    path = tmp_path / "markup.jsonl"
    init = {"protocolVersion": "2025-11-25", "capabilities": {"[/]": {}}, "clientInfo": {"name": "[/]"}}
    _write(
        path,
        [
            HEADER,
            _message(
                1, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}, conn="[/]"
            ),
            _message(
                2,
                "s2c",
                {"jsonrpc": "2.0", "id": 1, "result": {"serverInfo": {"name": "[bold]"}}},
                conn="[/]",
            ),
            _message(3, "c2s", {"jsonrpc": "2.0", "id": 2, "method": "[/]"}, conn="[/]"),
            _message(4, "s2c", {"jsonrpc": "2.0", "id": 2, "result": {}}, conn="[/]"),
        ],
    )
    app = McpTraceApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await opened_and_analysed(pilot)
        await pilot.press("s")
        await until(pilot, lambda: app.screen.query("#summary-body"), "the summary")
        await pilot.pause()
        shown = plain(app.screen.query_one("#summary-body"))
        assert "Session [/]" in shown and "[bold]" in shown
        await pilot.press("escape", "slash")
        await pilot.press(*"rule:[/]")
        await pilot.pause()
        assert "rule:[/] is not a rule id" in plain(app.screen.query_one("#filter-error"))
    assert app.return_code in (0, None)  # (an error while drawing ends the app, and run_test re-raises it)


async def test_a_list_redrawn_while_f_reopens_a_capture_draws_no_closed_view(tmp_path):
    path = tmp_path / "torn.jsonl"
    path.write_text(json.dumps(HEADER)[:40])  # a torn header: too short yet to tell its format
    app = McpTraceApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        await pilot.press("f")  # reopens to follow, and waits for the file to say what it is
        await until(pilot, lambda: "not enough yet to tell its format" in scr.status.state.note, "waiting")
        scr.list.refresh()
        await pilot.press("down", "G")
        await pilot.pause()
        assert scr.list.count == 0  # (nothing shown until the reopened view is ready)
