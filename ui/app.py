"""The mcptrace viewer app: a capture screen for a file, or a picker of recent captures.

Live views read the capture file that the tee or the proxy is writing (`--follow`) instead of
sharing an event loop with mitmproxy: the recorder never waits for the screen, a slow terminal
never back-pressures traffic, and live and offline viewing are one code path.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import App

from ui.keys import bindings
from ui.screens.picker import PickerScreen
from ui.screens.viewer import ViewerScreen


class McpTraceApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "mcptrace"
    BINDINGS = bindings("app")  # the one keys table, ui/keys.py
    ENABLE_COMMAND_PALETTE = False

    def __init__(
        self,
        path: str | None = None,
        *,
        follow: bool = False,
        fmt: str | None = None,
        captures: list[Path] | None = None,
        directory: str = "",
        hint: str = "",
    ) -> None:
        super().__init__()
        self.path = path
        self.follow = follow
        self.fmt = fmt
        self.captures = captures or []
        self.directory = directory
        self.hint = hint  # a line kept on the status bar (the proxy's URL for the host)
        self.exit_notes: list[str] = []  # lines said on stderr once the screen is closed
        self.torn_end: tuple[int, int] | None = None  # (flow, bytes of it) a followed flow file ended in
        self.stream_ended = None  # a threading.Event set when the stream viewed (`view -`) has ended

    def on_mount(self) -> None:
        if self.path is not None:
            self.push_screen(ViewerScreen(self.path, follow=self.follow, fmt=self.fmt, hint=self.hint))
        else:
            self.push_screen(PickerScreen(self.captures, self.directory))
