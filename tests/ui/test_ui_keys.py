"""The viewer's keys are written once (ui/keys.py): every binding of every screen and widget in ui/
is a row of that table, the footer's short labels come from it, and the help screen shows every row."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import ui
from tests.ui_support import DEMO, SIZE, opened_and_analysed, plain
from ui.app import McpTraceApp
from ui.keys import SECTIONS, key_names, short_labels, text


def _bound_classes():
    """Every class defined in ui/ with its own BINDINGS."""
    for info in pkgutil.walk_packages(ui.__path__, "ui."):
        mod = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(mod, inspect.isclass):
            if cls.__module__ == mod.__name__ and "BINDINGS" in cls.__dict__:
                yield cls


def _as_tuple(b) -> tuple[str, str, str, bool]:
    if isinstance(b, tuple):  # textual also takes (key, action, description)
        return (b[0], b[1], b[2] if len(b) > 2 else "", True)
    return (b.key, b.action, b.description, b.show)


def test_every_binding_in_ui_is_a_row_of_the_keys_table():
    table = {(b.keys, b.action, b.label, b.show) for s in SECTIONS for r in s.rows for b in r.binds}
    classes = list(_bound_classes())
    assert {c.__name__ for c in classes} >= {"McpTraceApp", "ViewerScreen", "MessageList", "HelpScreen"}
    for cls in classes:
        for b in cls.__dict__["BINDINGS"]:
            assert _as_tuple(b) in table, f"{cls.__name__} binds {b!r}, which ui/keys.py does not document"


def test_the_footer_orders_and_shortens_only_keys_of_the_table():
    from ui.screens.viewer import ViewerScreen

    actions = {b.action for s in SECTIONS for r in s.rows for b in r.binds}
    assert set(ViewerScreen.FOOTER_FIRST) <= actions
    assert short_labels("viewer", "app", "filter") == ViewerScreen.FOOTER_SHORT
    assert ViewerScreen.FOOTER_SHORT["next_finding"] == "Next"


async def test_the_help_screen_shows_every_row_of_the_table():
    app = McpTraceApp(str(DEMO))
    async with app.run_test(size=SIZE) as pilot:
        await opened_and_analysed(pilot)
        await pilot.press("question_mark")
        from ui.screens.help import HelpScreen

        assert isinstance(app.screen, HelpScreen)
        shown = " ".join(plain(s) for s in app.screen.query("Static"))
        for s in SECTIONS:
            for r in s.rows:
                assert key_names(r) in shown and r.does in " ".join(shown.split()), r


def test_the_keys_page_lists_every_row_with_its_keys():
    page = text()
    flat = " ".join(page.split())  # descriptions wrap at 100 columns
    for s in SECTIONS:
        assert s.title in page
        for r in s.rows:
            assert key_names(r) in page and r.does in flat


def test_every_mark_the_legend_explains_is_drawn_by_the_list():
    from pathlib import Path

    from ui.keys import MARKS

    root = Path(__file__).resolve().parents[2] / "ui"
    drawn = (root / "format.py").read_text(encoding="utf-8") + (
        root / "widgets" / "message_list.py"
    ).read_text(encoding="utf-8")
    for glyph, _ in MARKS:
        assert glyph in drawn, f"the legend explains {glyph!r}, which the list never draws"
