"""The viewer's keys, written once: every screen and widget takes its BINDINGS from this table, the
footer its short labels, and the help screen (`?`) and `mcptrace help keys` render it. A test checks
that every binding of every class in ui/ is a row here.

Plain data, no textual import: `mcptrace help keys` reads it without starting the UI.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Bind:
    """One textual Binding: keys (comma-separated textual key names), action, footer label."""

    keys: str
    action: str
    label: str
    show: bool = True  # in the footer
    display: str | None = None  # how the footer shows the key, when not its name
    short: str | None = None  # the footer's label when the full ones do not fit (80 columns)


@dataclass(frozen=True, slots=True)
class Row:
    does: str
    binds: tuple[Bind, ...]


@dataclass(frozen=True, slots=True)
class Section:
    name: str  # the widget or screen that binds these keys (bindings(name))
    title: str
    rows: tuple[Row, ...]


SECTIONS: tuple[Section, ...] = (
    Section(
        "list",
        "The message list",
        (
            Row(
                "move the selection",
                (
                    Bind("up,k", "cursor_up", "Up", show=False),
                    Bind("down,j", "cursor_down", "Down", show=False),
                ),
            ),
            Row(
                "a page up / down",
                (
                    Bind("pageup,ctrl+b", "page_up", "Page up", show=False),
                    Bind("pagedown,ctrl+f,space", "page_down", "Page down", show=False),
                ),
            ),
            Row("first row", (Bind("home,g", "first", "First", show=False),)),
        ),
    ),
    Section(
        "viewer",
        "The capture screen",
        (
            Row(
                "last row (the end read ahead while reading)",
                (Bind("end,G", "last_when_ready", "Last", show=False),),
            ),
            Row("move into the detail pane", (Bind("enter", "focus_detail", "Detail", show=False),)),
            Row("back to the message list", (Bind("escape", "focus_list", "List", show=False),)),
            Row(
                "filter by an expression (enter applies it; an empty one shows every row)",
                (Bind("slash", "filter", "Filter", display="/"),),
            ),
            Row(
                "next / previous message with findings",
                (
                    Bind("n", "next_finding", "Next finding", short="Next"),
                    Bind("N", "prev_finding", "Prev finding", display="N", short="Prev"),
                ),
            ),
            Row(
                "jump to the partner: a request's response, a response's request",
                (Bind("p", "partner", "Partner", short="Pair"),),
            ),
            Row(
                "follow: load what is appended to the capture; stay at the bottom if you are there",
                (Bind("f", "toggle_follow", "Follow", short="Follow"),),
            ),
            Row(
                "session summary: eras, versions, capabilities, counts, latency",
                (Bind("s", "summary", "Summary", short="Summary"),),
            ),
            Row(
                "the whole body of the selected message (bodies are capped in the pane)",
                (Bind("e", "expand", "Expand body", short="Expand"),),
            ),
            Row(
                "the help screen: these keys and the filter language",
                (Bind("question_mark", "help", "Help", display="?"),),
            ),
        ),
    ),
    Section(
        "app",
        "Anywhere else",
        (Row("quit", (Bind("q", "quit", "Quit"), Bind("ctrl+c", "quit", "Quit", show=False))),),
    ),
    Section(
        "detail",
        "The detail pane (enter)",
        (
            Row(
                "scroll down / up",
                (Bind("j", "scroll_down", "Down"), Bind("k", "scroll_up", "Up")),
            ),
        ),
    ),
    Section(
        "filter",
        "The filter bar (/)",
        (Row("close the filter bar", (Bind("escape", "cancel", "Close filter"),)),),
    ),
    Section(
        "body",
        "The whole body (e)",
        (
            Row("back to the capture", (Bind("escape,q,e", "app.pop_screen", "Back"),)),
            Row(
                "next / previous page (a capture line over 8 MB is shown raw, 256 KB a page)",
                (
                    Bind("n,pagedown", "page(1)", "Next page", show=False),
                    Bind("p,pageup", "page(-1)", "Previous page", show=False),
                ),
            ),
            Row(
                "first / last page",
                (
                    Bind("g", "first", "First page", show=False),
                    Bind("G", "last", "Last page", show=False),
                ),
            ),
        ),
    ),
    Section(
        "summary",
        "The session summary (s)",
        (Row("back to the capture", (Bind("escape,s,q", "app.pop_screen", "Back"),)),),
    ),
    Section(
        "help",
        "This help (?)",
        (Row("close it", (Bind("escape,question_mark,q", "app.pop_screen", "Close"),)),),
    ),
    Section(
        "picker",
        "The capture picker (mcptrace view without a file)",
        (Row("quit", (Bind("q,escape", "app.quit", "Quit"),)),),
    ),
)

# The marks of the message list, written once too: the help screen's legend and `mcptrace help keys`
# render them (a test checks each one is drawn by the list).
MARKS: tuple[tuple[str, str], ...] = (
    ("→", "host to server"),
    ("←", "server to host"),
    ("M", "era modern"),
    ("L", "era legacy"),
    ("?", "era unknown"),
    ("·", "not analysed yet"),
    ("↳", "the method a response answers"),
    ("●", "findings (coloured by the worst)"),
    ("↔", "the selection's partner"),
    ("⟲", "the other rounds of the selection's MRTR operation"),
    ("!", "a stderr line"),
    ("⇄", "an HTTP-only exchange"),
    ("•", "an event"),
    ("▣", "a capture header"),
)
DIMMED = ("!", "⇄", "•", "▣")  # the rows that are not messages are dimmed

_NAMES = {
    "up": "↑",
    "down": "↓",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "home": "Home",
    "end": "End",
    "question_mark": "?",
    "slash": "/",
}


def section(name: str) -> Section:
    return next(s for s in SECTIONS if s.name == name)


def key_names(row: Row) -> str:
    """The row's keys as a person reads them: `↑ k  ↓ j`."""
    return "  ".join(" ".join(_NAMES.get(k, k) for k in b.keys.split(",")) for b in row.binds)


def short_labels(*names: str) -> dict[str, str]:
    """action -> the footer's short label, for the sections named."""
    return {b.action: b.short for n in names for r in section(n).rows for b in r.binds if b.short}


def bindings(name: str) -> list:
    """The textual Bindings of one section (textual imported here only, for the UI)."""
    from textual.binding import Binding

    return [
        Binding(b.keys, b.action, b.label, show=b.show, key_display=b.display)
        for r in section(name).rows
        for b in r.binds
    ]


def marks_text() -> str:
    """The list's marks as `mcptrace help keys` prints them."""
    return "".join(
        f"  {glyph}  {what}{' (dimmed row)' if glyph in DIMMED else ''}\n" for glyph, what in MARKS
    )


def text(width: int = 100) -> str:
    """The table as `mcptrace help keys` prints it, wrapped to `width` columns."""
    columns = width
    width = max(len(key_names(r)) for s in SECTIONS for r in s.rows) + 2
    out: list[str] = []
    for s in SECTIONS:
        out.append(s.title)
        for r in s.rows:
            wrapped = textwrap.wrap(r.does, max(20, columns - width - 2))
            out.append(f"  {key_names(r):<{width}}{wrapped[0]}")
            out.extend(f"  {'':<{width}}{more}" for more in wrapped[1:])
        out.append("")
    return "\n".join(out)
