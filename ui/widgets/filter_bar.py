"""The filter bar (`/`): type an expression of tracer.filter's language, Enter applies it."""

from __future__ import annotations

from rich.text import Text
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Static

from tracer.filter import FilterError, compile_filter
from tracer.filter_terms import placeholder
from ui.keys import bindings
from ui.widgets.detail_render import rule_names

# The hint is the filter language's own table (tracer/filter_terms.py), never a copy of it.
PLACEHOLDER = placeholder()


class FilterBar(Horizontal):
    DEFAULT_CSS = """
    FilterBar { height: 1; display: none; }
    FilterBar.-shown { display: block; }
    FilterBar > #filter-prompt { width: 2; }
    FilterBar > Input, FilterBar > Input:focus { border: none; height: 1; padding: 0; width: 1fr; }
    FilterBar > #filter-error { width: auto; max-width: 60; color: $error; }
    """
    BINDINGS = bindings("filter")  # the one keys table, ui/keys.py

    class Applied(Message):
        def __init__(self, source: str) -> None:
            super().__init__()
            self.source = source

    class Closed(Message):
        pass

    def compose(self):
        yield Static("/", id="filter-prompt")
        yield Input(placeholder=PLACEHOLDER, id="filter-input")
        yield Static("", id="filter-error")

    @property
    def input(self) -> Input:
        return self.query_one(Input)

    def open(self, current: str) -> None:
        self.add_class("-shown")
        self.input.value = current
        self.input.cursor_position = len(current)
        self.query_one("#filter-error", Static).update("")
        self.input.focus()

    def close(self) -> None:
        self.remove_class("-shown")
        self.post_message(self.Closed())

    def on_input_changed(self, event: Input.Changed) -> None:
        err = self.query_one("#filter-error", Static)
        try:
            compile_filter(event.value, rule_names=rule_names())
        except FilterError as exc:
            # Text, not a markup string: the message quotes what was typed ("rule:[/]").
            err.update(Text(f" {exc} (col {exc.pos + 1})"))
        else:
            err.update("")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        try:
            compile_filter(event.value, rule_names=rule_names())
        except FilterError:
            return  # the error is on screen; keep editing
        self.post_message(self.Applied(event.value.strip()))
        self.close()

    def action_cancel(self) -> None:
        self.close()
