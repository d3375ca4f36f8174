"""The whole body of one message (`e`): loaded and formatted in a worker, shown in a read-only text
area that draws only the visible lines.

Up to `PRETTY_MAX` bytes the body is pretty JSON (or text, or a hex dump). Above it, formatting
would hold several copies of the body and hand the text area hundreds of megabytes at once (a
100 MB message froze the UI for 23 s at 2.7 GB), so the screen shows the capture line raw, one page
of `PAGE` bytes at a time, read with one positional read per page: n / p (or PageDown / PageUp) turn
pages, g / G go to the first and last.
"""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static, TextArea

from tracer.view.viewdata import CaptureView
from ui.format import VISIBLE_TEXT
from ui.keys import bindings
from ui.widgets.detail_render import hexdump, pretty_body

PRETTY_MAX = 8 << 20  # bytes of a capture line formatted whole; longer ones are paged raw
PAGE = 256 << 10  # bytes of a raw page


class BodyLoaded(Message):
    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title = title
        self.text = text


def full_text(view: CaptureView, row: int) -> tuple[str, str]:
    d = view.detail(row, cap=PRETTY_MAX)
    rec = d.record
    if rec is None:
        return f"row {row:,}: capture line", d.line.decode("utf-8", "replace")
    raw = rec.raw
    if rec.type.value == "message":
        text = pretty_body(raw)
        if text is not None:
            return f"#{rec.seq}: JSON ({len(raw):,} bytes)", text
    try:
        return f"#{rec.seq}: text ({len(raw):,} bytes)", raw.decode("utf-8")
    except UnicodeDecodeError:
        return f"#{rec.seq}: hex dump ({len(raw):,} bytes, not UTF-8)", hexdump(raw, limit=len(raw))


def raw_page(view: CaptureView, row: int, page: int) -> tuple[str, str, int]:
    """(title, text, pages) of one raw page of a row's capture line (one positional read)."""
    size = view.index.length(row)
    pages = max(1, -(-size // PAGE))
    page = min(max(page, 0), pages - 1)
    data = view.index.read_part(row, page * PAGE, PAGE)  # (a capture's line, or a lazy row's)
    title = (
        f"row {row:,}: the capture line raw ({size:,} bytes, too large to format), page {page + 1:,} of "
        f"{pages:,} — n/p turn pages, g/G first/last"
    )
    return title, data.decode("utf-8", "replace"), pages


class BodyScreen(Screen):
    BINDINGS = bindings("body")  # the one keys table, ui/keys.py

    def __init__(self, view: CaptureView, row: int) -> None:
        super().__init__()
        self.view = view
        self.row = row
        self.paged = view.index.length(row) > PRETTY_MAX
        self.page = 0
        self.pages = 1

    def compose(self) -> ComposeResult:
        yield Static("loading…", id="body-title")
        yield TextArea("", read_only=True, id="body-text", soft_wrap=False, show_line_numbers=True)
        yield Footer()

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True)
    def load(self) -> None:
        if self.paged:
            title, text, self.pages = raw_page(self.view, self.row, self.page)
        else:
            title, text = full_text(self.view, self.row)
        self.post_message(BodyLoaded(title, text))

    def on_body_loaded(self, msg: BodyLoaded) -> None:
        self.query_one("#body-title", Static).update(msg.title)
        area = self.query_one(TextArea)
        area.load_text(msg.text.translate(VISIBLE_TEXT))  # (no raw ESC reaches the terminal)
        area.focus()

    def _go(self, page: int) -> None:
        page = min(max(page, 0), self.pages - 1)
        if self.paged and page != self.page:
            self.page = page
            self.load()

    def action_page(self, step: int) -> None:
        self._go(self.page + step)

    def action_first(self) -> None:
        self._go(0)

    def action_last(self) -> None:
        self._go(self.pages - 1)
