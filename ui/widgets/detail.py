"""The detail pane: everything about the selected row (see detail_render for the content)."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widgets import Static

from tracer.view.viewdata import RowDetail
from ui.keys import bindings
from ui.widgets.detail_render import render_detail


class DetailPane(VerticalScroll, can_focus=True):
    DEFAULT_CSS = """
    DetailPane { padding: 0 1; }
    DetailPane > Static { width: 1fr; }
    """
    BINDINGS = bindings("detail")  # the one keys table, ui/keys.py

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.body = Static("", id="detail-body")
        self.shown: RowDetail | None = None

    def compose(self):
        yield self.body

    def show(
        self,
        detail: RowDetail | None,
        *,
        analysed_upto: int | None = None,
        ended: bool = False,
        keep_scroll: bool = False,
    ) -> None:
        self.shown = detail
        if detail is None:
            self.body.update("")
        else:
            self.body.update(render_detail(detail, analysed_upto=analysed_upto, ended=ended))
        if not keep_scroll:
            self.scroll_home(animate=False)
