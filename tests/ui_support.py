"""Helpers for the viewer's Pilot and snapshot tests: wait on conditions with a bound (no sleeps)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CAPTURES = REPO / "fixtures" / "captures"
DEMO = CAPTURES / "demo.jsonl"
SIZE = (160, 45)
BOUND_S = 120.0  # a bound, not a wait: generous, the CI machine is shared and loaded


async def until(pilot, cond: Callable[[], bool], what: str = "condition", bound: float = BOUND_S) -> None:
    """Let the app run until cond() holds; fail (not hang) after `bound` seconds."""
    deadline = time.monotonic() + bound
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


def viewer(app):
    from ui.screens.viewer import ViewerScreen

    screen = app.screen
    assert isinstance(screen, ViewerScreen), type(screen)
    return screen


async def opened_and_analysed(pilot) -> object:
    """Wait until the capture is indexed, analysed, and the screen shows the analysis."""
    app = pilot.app
    await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the capture to open")
    scr = viewer(app)
    await until(pilot, lambda: scr.index_done and scr.view.ann.done, "the analysis to finish")
    await until(pilot, lambda: scr.status.state.analysis_done, "the status line to say analysed")
    await pilot.pause()
    return scr


def plain(widget_or_renderable, width: int = 160) -> str:
    """The text a Static (or a Rich renderable) shows, without styles."""
    import io

    from rich.console import Console

    content = getattr(widget_or_renderable, "content", widget_or_renderable)
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    console.print(content)
    return console.export_text()
