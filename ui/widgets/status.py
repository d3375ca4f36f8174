"""The status line above the list: the file, row counts, analysis and filter progress, follow."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static


@dataclass
class StatusState:
    name: str = ""
    rows: int = 0
    indexing: float | None = None  # fraction while indexing
    analysed: int = 0
    analysis_done: bool = False
    analysis_error: str | None = None
    unreadable: int = 0  # rows the analysis could not read (each says why in its detail)
    findings_rows: int = 0
    filter: str = ""
    matches: int | None = None
    filter_scanned: float | None = None  # fraction while the filter scans
    follow: bool = False
    note: str = ""
    hint: str = ""  # kept while the screen lives (e.g. the proxy URL to give the host)


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.state = StatusState()

    def set(self, **changes) -> None:
        for k, v in changes.items():
            setattr(self.state, k, v)
        self.update(self.render_state())

    def render_state(self) -> Text:
        s = self.state
        t = Text()
        t.append("mcptrace ", style="bold")
        t.append(s.name, style="bold cyan")
        t.append(f"  {s.rows:,} rows")
        if s.indexing is not None:
            t.append(f" (indexing {s.indexing * 100:.0f}%)", style="yellow")
        if s.analysis_error:
            t.append(f"  {s.analysis_error}", style="red")
        elif s.analysis_done:
            t.append("  analysed", style="green")
        elif s.rows:
            pct = min(100.0, 100.0 * s.analysed / max(1, s.rows))
            t.append(f"  analysing {pct:.0f}%", style="yellow")
        if s.unreadable:
            t.append(
                f"  {s.unreadable:,} row{'s' if s.unreadable > 1 else ''} not analysable (see the detail)",
                style="red",
            )
        if s.findings_rows:
            t.append(f"  {s.findings_rows:,} with findings", style="red")
        if s.filter:
            t.append(f"  filter: {s.filter}", style="magenta")
            if s.matches is not None:
                t.append(f" → {s.matches:,} match{'es' if s.matches != 1 else ''}")
            if s.filter_scanned is not None and s.filter_scanned < 1:
                t.append(f" (scanned {s.filter_scanned * 100:.0f}%)", style="yellow")
        if s.follow:
            t.append("  FOLLOW", style="bold reverse green")
        if s.note:
            t.append(f"  {s.note}", style="italic")
        if s.hint:
            t.append(f"  {s.hint}", style="bold yellow")
        return t
