"""The whole body of one message (`e`): loaded in a worker, shown in a read-only text area that
draws only the visible lines, so a 10 MB message scrolls without freezing the terminal."""

from __future__ import annotations

import orjson
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static, TextArea

from tracer.view.viewdata import CaptureView
from ui.widgets.detail_render import hexdump

FULL_CAP = 256 << 20  # even "everything" stops somewhere: 256 MB


class BodyLoaded(Message):
    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title = title
        self.text = text


def full_text(view: CaptureView, row: int) -> tuple[str, str]:
    d = view.detail(row, cap=FULL_CAP)
    rec = d.record
    if rec is None:
        return f"row {row:,}: capture line", d.line.decode("utf-8", "replace")
    raw = rec.raw
    if rec.type.value == "message":
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            return (f"#{rec.seq}: JSON ({len(raw):,} bytes)",
                    orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())
    try:
        return f"#{rec.seq}: text ({len(raw):,} bytes)", raw.decode("utf-8")
    except UnicodeDecodeError:
        return f"#{rec.seq}: hex dump ({len(raw):,} bytes, not UTF-8)", hexdump(raw, limit=len(raw))


class BodyScreen(Screen):
    BINDINGS = [Binding("escape,q,e", "app.pop_screen", "Back")]

    def __init__(self, view: CaptureView, row: int) -> None:
        super().__init__()
        self.view = view
        self.row = row

    def compose(self) -> ComposeResult:
        yield Static("loading…", id="body-title")
        yield TextArea("", read_only=True, id="body-text", soft_wrap=False, show_line_numbers=True)
        yield Footer()

    def on_mount(self) -> None:
        self.load()

    @work(thread=True)
    def load(self) -> None:
        title, text = full_text(self.view, self.row)
        self.post_message(BodyLoaded(title, text))

    def on_body_loaded(self, msg: BodyLoaded) -> None:
        self.query_one("#body-title", Static).update(msg.title)
        area = self.query_one(TextArea)
        area.load_text(msg.text)
        area.focus()
