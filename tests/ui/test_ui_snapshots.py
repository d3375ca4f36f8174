"""Snapshots of the viewer's key screens on the bundled demo capture (fixtures/captures/demo.jsonl).

Regenerate after an intended change with: pytest tests/ui/test_ui_snapshots.py --snapshot-update
"""

from __future__ import annotations

import time

import pytest

from tests.ui_support import DEMO, SIZE, opened_and_analysed, until
from ui.app import McpTraceApp


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    """Times are shown in local time: pin it so the pictures do not depend on the machine."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _row(app, pred) -> int:
    view = app.screen.view
    return next(r for r in range(len(view)) if pred(view.info(r)))


async def _ready(pilot) -> None:
    await opened_and_analysed(pilot)


def test_the_message_list_shows_kinds_eras_latency_and_findings(snap_compare):
    assert snap_compare(McpTraceApp(str(DEMO)), terminal_size=SIZE, run_before=_ready)


def test_the_detail_pane_shows_an_mrtr_round_with_its_operation(snap_compare):
    async def before(pilot):
        await _ready(pilot)
        scr = pilot.app.screen
        row = _row(pilot.app, lambda i: i.basics.preview.startswith("input required"))
        scr.list.select_row(row)
        await until(pilot, lambda: scr.detail.shown is not None and scr.detail.shown.row == row, "the detail")

    assert snap_compare(McpTraceApp(str(DEMO)), terminal_size=SIZE, run_before=before)


def test_a_finding_is_shown_with_rule_message_and_source(snap_compare):
    async def before(pilot):
        await _ready(pilot)
        scr = pilot.app.screen
        await pilot.press("n", "n")
        row = scr.list.selected_row
        await until(pilot, lambda: scr.detail.shown is not None and scr.detail.shown.row == row, "the detail")

    assert snap_compare(McpTraceApp(str(DEMO)), terminal_size=SIZE, run_before=before)


def test_the_filter_bar_takes_an_expression_and_the_list_shows_the_matches(snap_compare):
    async def before(pilot):
        await _ready(pilot)
        scr = pilot.app.screen
        await pilot.press("slash", *"method:tools/call | kind:error", "enter")
        await until(pilot, lambda: scr.filter_job is None and scr.list.rows is not None, "the filter")
        await pilot.press("slash", *" latency>")
        from textual.widgets import Input

        scr.query_one(Input).cursor_blink = False
        await pilot.pause()

    assert snap_compare(McpTraceApp(str(DEMO)), terminal_size=SIZE, run_before=before)


def test_the_summary_shows_cells_versions_capabilities_counts_and_latency(snap_compare):
    async def before(pilot):
        await _ready(pilot)
        await pilot.press("s")
        await pilot.pause()

    assert snap_compare(McpTraceApp(str(DEMO)), terminal_size=SIZE, run_before=before)


def test_the_help_screen_lists_keys_and_the_filter_language(snap_compare):
    async def before(pilot):
        await _ready(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(McpTraceApp(str(DEMO)), terminal_size=SIZE, run_before=before)
