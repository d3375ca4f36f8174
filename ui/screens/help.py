"""The help screen (`?`): keys and the filter language."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    ("↑ ↓  j k", "move the selection"),
    ("PgUp PgDn  space", "a page up / down"),
    ("g  Home", "first row"),
    ("G  End", "last row (waits for the index on a huge file)"),
    ("enter", "move into the detail pane (escape: back to the list)"),
    ("/", "filter (enter applies, an empty filter shows everything, escape closes)"),
    ("n  N", "next / previous message with findings"),
    ("p", "jump to the partner: a request's response, a response's request"),
    ("f", "follow: load what is appended to the capture; stay at the bottom if you are there"),
    ("s", "session summary: eras, versions, capabilities, counts, latency"),
    ("e", "the whole body of the selected message (bodies are capped in the pane)"),
    ("?", "this help"),
    ("q", "quit"),
]
FILTER = [
    ("method:tools/call", "the method, or the method a response answers (globs: tools/*)"),
    ("kind:error", "request notification result error invalid batch response stderr http event"),
    ("dir:s2c", "c2s host → server, s2c server → host"),
    ("era:legacy", "modern legacy unknown"),
    ("rule:MCP310", "has a finding of that rule (or prefix: rule:MCP3)"),
    ("sev:warning", "has a finding at least that severe"),
    ("has:findings", "findings, partner or latency"),
    ("id:5", 'JSON-RPC id (5 and "5")'),
    ("latency>500ms", "> >= < <= =; units ns us ms s m"),
    ('"free text"', "case-insensitive text in the raw message"),
    ("a b", "both (terms are ANDed)"),
    ("a | b", "either"),
    ("!a  !(a | b)", "not"),
]


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,question_mark,q", "app.pop_screen", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 100; max-width: 95%; height: 90%; border: round $accent;
                                  background: $surface; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        keys = Table(title="Keys", title_justify="left", box=None, show_header=False, padding=(0, 2))
        keys.add_column(style="bold cyan", no_wrap=True)
        keys.add_column()
        for k, what in KEYS:
            keys.add_row(k, what)
        flt = Table(
            title="Filter language", title_justify="left", box=None, show_header=False, padding=(0, 2)
        )
        flt.add_column(style="bold magenta", no_wrap=True)
        flt.add_column()
        for k, what in FILTER:
            flt.add_row(k, what)
        legend = Text.assemble(
            ("\nList: ", "bold"),
            "→ host to server, ← server to host; ",
            (" M ", "black on green"),
            " modern, ",
            (" L ", "black on yellow"),
            " legacy, ",
            (" ? ", "white on grey37"),
            " era unknown, · not analysed yet; ",
            "↳ the method a response answers; ● findings (colour of the worst); ↔ the selection's partner; ",
            "⟲ rounds of the selection's MRTR operation; dimmed rows: stderr, HTTP-only exchanges, events.",
        )
        with VerticalScroll():
            yield Static(keys)
            yield Static(flt)
            yield Static(legend)
