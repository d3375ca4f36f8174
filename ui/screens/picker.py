"""`mcptrace view` without a file: the recent captures of the default directory, newest first."""

from __future__ import annotations

import os
import time
from pathlib import Path

import orjson
from rich.text import Text
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from ui.format import size
from ui.keys import bindings

HEADER_MAX = 4 << 20  # bytes of a capture's first line read for its description (argv: at most 2 MiB)


def describe(path: Path) -> str:
    try:
        st = path.stat()
        with open(path, "rb") as fh:
            # (at most a header's worth: a file whose first line never ends is not read whole)
            head = orjson.loads(fh.readline(HEADER_MAX) or b"{}")
    except (OSError, orjson.JSONDecodeError):
        head, st = {}, None
    if type(head) is not dict:  # (a file in the captures' directory that is no capture)
        head = {}
    what = head.get("command") or head.get("upstream") or ""
    if isinstance(what, list):
        what = " ".join(map(str, what))
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(st.st_mtime)) if st else "?"
    return f"{stamp}  {size(st.st_size) if st else '?':>9}  {path.name}  {head.get('transport', '')} {what}"


class PickerScreen(Screen):
    BINDINGS = bindings("picker")  # the one keys table, ui/keys.py

    def __init__(self, captures: list[Path], directory: str) -> None:
        super().__init__()
        self.captures = captures
        self.directory = directory

    def compose(self) -> ComposeResult:
        n = len(self.captures)
        title = (
            f"{n} recent capture{'s' if n != 1 else ''} in {self.directory} — enter opens one"
            if n
            else f"No captures yet in {self.directory}. Record one with `mcptrace stdio -- CMD` "
            f"or try `mcptrace demo`."
        )
        # Text, not markup: the directory, and each capture's label and command, are shown as they are.
        yield Static(Text(title), id="picker-title")
        yield OptionList(
            *[Option(Text(describe(p)), id=str(i)) for i, p in enumerate(self.captures)], id="picker"
        )
        yield Footer()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        from ui.screens.viewer import ViewerScreen

        path = self.captures[int(event.option.id or 0)]
        self.app.push_screen(ViewerScreen(os.fspath(path)))
