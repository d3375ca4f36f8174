"""`mcptrace view` without a file: pick one of the recent captures, newest first."""

from __future__ import annotations

import os
import shutil

from tests.ui_support import DEMO, SIZE, until
from tracer.paths import captures_dir, recent_captures
from ui.app import McpTraceApp


async def test_without_a_file_the_newest_capture_is_first_and_enter_opens_it(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    d = captures_dir()
    old, new = d / "20261101-100000-old-1.jsonl", d / "20261102-100000-demo-2.jsonl"
    shutil.copy(DEMO, old)
    shutil.copy(DEMO, new)
    os.utime(old, (1_700_000_000, 1_700_000_000))
    app = McpTraceApp(captures=recent_captures(), directory=str(d))
    async with app.run_test(size=SIZE) as pilot:
        from textual.widgets import OptionList

        from ui.screens.viewer import ViewerScreen

        options = app.screen.query_one(OptionList)
        assert options.option_count == 2
        assert new.name in str(options.get_option_at_index(0).prompt)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ViewerScreen), "the viewer")
        assert app.screen.path == str(new)


async def test_an_empty_captures_directory_says_how_to_record_one(tmp_path):
    app = McpTraceApp(captures=[], directory=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        from tests.ui_support import plain

        assert "mcptrace demo" in plain(app.screen.query_one("#picker-title"))
