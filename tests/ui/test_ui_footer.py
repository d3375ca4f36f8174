"""The viewer's footer at a classic 80x24 terminal: `? Help` and `q Quit` first and every key in view,
labels shortened to fit; full labels where there is room; it refits when the terminal is resized."""

from __future__ import annotations

from textual.widgets._footer import FooterKey

from tests.ui_support import DEMO, SIZE, opened_and_analysed, until
from ui.app import McpTraceApp


def _keys(app) -> list[tuple[str, str, int]]:
    """(key, label, last column + 1) of each key the footer shows, left to right."""
    keys = sorted(app.screen.query(FooterKey), key=lambda k: k.region.x)
    return [(k.key_display, k.description, k.region.right) for k in keys]


async def test_at_80x24_help_and_quit_come_first_and_every_key_fits():
    app = McpTraceApp(str(DEMO))
    async with app.run_test(size=(80, 24)) as pilot:
        await opened_and_analysed(pilot)
        keys = _keys(app)
        assert [(k, label) for k, label, _ in keys[:2]] == [("?", "Help"), ("q", "Quit")]
        assert {k for k, _, _ in keys} >= {"?", "q", "/", "n", "N", "p", "f", "s", "e"}
        assert max(right for _, _, right in keys) <= 80, keys
        assert ("n", "Next") in [(k, label) for k, label, _ in keys], "a long label is shortened"


async def test_a_wide_terminal_shows_full_labels_and_a_resize_refits_the_footer():
    app = McpTraceApp(str(DEMO))
    async with app.run_test(size=SIZE) as pilot:
        await opened_and_analysed(pilot)
        assert ("n", "Next finding") in [(k, label) for k, label, _ in _keys(app)]
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: max(r for _, _, r in _keys(app)) <= 80, "the footer to refit 80 columns")
        assert [k for k, _, _ in _keys(app)][:2] == ["?", "q"]
