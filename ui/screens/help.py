"""The help screen (`?`): keys and the filter language, rendered from their one table each (ui/keys.py,
tracer/filter_terms.py), which `mcptrace help keys` / `mcptrace help filter` print too."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from tracer.filter_terms import rows as filter_rows
from ui.format import ERA_BADGE, ERA_STYLE
from ui.keys import DIMMED, MARKS, SECTIONS, bindings, key_names

MAIN = ("list", "viewer", "app")  # the sections shown before the filter language


class HelpScreen(ModalScreen):
    BINDINGS = bindings("help")
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 100; max-width: 95%; height: 90%; border: round $accent;
                                  background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        width = max(len(key_names(r)) for section in SECTIONS for r in section.rows)
        keys = []
        for i, section in enumerate(SECTIONS):
            title = "Keys: " + section.title.lower() if i == 0 else section.title
            table = Table(title=title, title_justify="left", box=None, show_header=False, padding=(0, 2))
            table.add_column(style="bold cyan", no_wrap=True, min_width=width)
            table.add_column()
            for row in section.rows:
                table.add_row(key_names(row), row.does)
            keys.append(table)
        flt = Table(
            title="Filter language", title_justify="left", box=None, show_header=False, padding=(0, 2)
        )
        flt.add_column(style="bold magenta", no_wrap=True)
        flt.add_column()
        for term, what in filter_rows():
            flt.add_row(term, what)
        legend = Text("\nList: ", style="bold")
        badges = {ERA_BADGE[era].strip(): (ERA_BADGE[era], ERA_STYLE[era]) for era in ERA_BADGE}
        for i, (glyph, what) in enumerate(MARKS):
            legend.append("; " if i else "")
            legend.append(*badges.get(glyph, (glyph, "")))
            legend.append(f" {what}")
        legend.append(f" ({' '.join(DIMMED)}: dimmed rows)\n")
        main = [t for t, section in zip(keys, SECTIONS, strict=True) if section.name in MAIN]
        others = [t for t, section in zip(keys, SECTIONS, strict=True) if section.name not in MAIN]
        with VerticalScroll():  # the capture screen's keys and the filter first; other screens after
            for table in main:
                yield Static(table)
            yield Static(flt)
            yield Static(legend)
            for table in others:
                yield Static(table)
