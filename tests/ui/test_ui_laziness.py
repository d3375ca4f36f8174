"""A 200,000-message capture: the viewer parses about as many rows as it shows, not the file."""

from __future__ import annotations

from tests.gencapture import generate
from tests.ui_support import SIZE, until, viewer
from ui.app import McpTraceApp


async def test_a_200000_message_capture_parses_only_the_rows_on_screen(tmp_path):
    path = tmp_path / "big.jsonl"
    lines = generate(path, 200_000)
    app = McpTraceApp(str(path))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the capture to open")
        scr = viewer(app)
        await until(pilot, lambda: scr.index_done, "the index")
        await pilot.pause()
        shown = scr.list.scrollable_content_region.height
        assert scr.list.count == lines  # every row is there to scroll to...
        first = scr.view.parsed
        assert 0 < first <= shown + 2  # ...but only the first screen was parsed
        await pilot.press("G")
        await until(pilot, lambda: scr.list.selected_row == lines - 1, "the last row")
        await pilot.pause()
        await pilot.press("pageup", "pageup", "k", "k", "g")
        await pilot.pause()
        # four screens were shown (top, bottom, two pages up) and the top again
        assert scr.view.parsed <= first + 4 * shown + 4
        assert scr.view.parsed < lines / 1000
