"""The viewer opens what lint reads: NDJSON and host logs read lazily as the rows of their conversion."""

from __future__ import annotations

import orjson

from tests.ui_support import SIZE, opened_and_analysed, plain, until
from ui.app import McpTraceApp


async def test_an_ndjson_log_opens_with_directions_guessed_and_pairs_found(tmp_path):
    path = tmp_path / "log.ndjson"
    msgs = [
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}},
        {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"},
    ]
    path.write_bytes(b"\n".join(orjson.dumps(m) for m in msgs) + b"\n")
    app = McpTraceApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        scr = await opened_and_analysed(pilot)
        infos = [scr.view.info(r) for r in range(len(scr.view))]
        messages = [i for i in infos if i.basics.rtype == "message"]
        assert [i.kind for i in messages] == ["request", "result", "notification"]
        assert [i.basics.dir for i in messages] == ["c2s", "s2c", "s2c"]
        assert messages[1].partner == messages[0].row
        scr.list.select_row(messages[0].row)
        await until(
            pilot, lambda: scr.detail.shown is not None and scr.detail.shown.row == messages[0].row, "detail"
        )
        assert "guessed from content" in plain(scr.detail.body)
        # read lazily from the log itself, no converted copy (tracer.inputs.lazy)
        assert scr.view.lazy and scr.view.path == str(path)


async def test_an_unreadable_input_says_why_on_screen(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("just some prose, not MCP\n")
    app = McpTraceApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "cannot open" in app.screen.status.state.note, "the error")
        assert "not a recognised MCP capture" in app.screen.status.state.note
