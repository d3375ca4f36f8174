"""The message list: one line per capture row, drawn on demand (Textual's Line API).

Only the lines on screen are ever rendered: a 2,000,000-row capture costs the same to draw as a
20-row one. Rows come from a `CaptureView` (all rows) or, when a filter is on, from the filter's
array of matching rows. The selection is a capture row, so it survives filtering and does not
move when rows are appended (follow mode), unless it sat on the last row.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left

from rich.segment import Segment
from rich.style import Style
from textual.events import Click
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tracer.view.viewdata import GAP_ROW, CaptureView, RowInfo
from ui.format import (
    DIM,
    DIR_ARROW,
    ERA_BADGE,
    ERA_STYLE,
    KIND_SHORT,
    KIND_STYLE,
    SEVERITY_STYLE,
    VISIBLE,
    clock,
    duration,
    id_repr,
)
from ui.keys import bindings
from ui.messages import RowSelected

# column widths; the method column takes up to W_METHOD, the preview what is left
W_GUTTER, W_SEQ, W_TIME, W_DIR, W_KIND, W_ERA, W_ID, W_LAT, W_FIND = 1, 7, 12, 1, 7, 3, 8, 8, 5
W_METHOD, MIN_METHOD = 30, 12
FIXED = W_GUTTER + W_SEQ + W_TIME + W_DIR + W_KIND + W_ERA + W_ID + W_LAT + W_FIND + 10  # + separators


def _fit(text: str, width: int, right: bool = False) -> str:
    if width <= 0:
        return ""
    if len(text) > width:
        return text[: max(0, width - 1)] + "…" if width > 1 else text[:width]
    return text.rjust(width) if right else text.ljust(width)


def widths(width: int) -> tuple[int, int]:
    """(method, preview) column widths for a list this wide."""
    method = max(MIN_METHOD, min(W_METHOD, width - FIXED))
    return method, max(0, width - FIXED - method)


def column_header(width: int) -> str:
    wm, wp = widths(width)
    parts = [
        " ",
        _fit("#", W_SEQ, True),
        _fit("time", W_TIME),
        "⇄",
        _fit("kind", W_KIND),
        "era",
        _fit("method / ↳ answers", wm),
        _fit("id", W_ID),
        _fit("latency", W_LAT, True),
        _fit("find", W_FIND),
        _fit("summary", wp),
    ]
    return " ".join(parts)


class MessageList(ScrollView, can_focus=True):
    BINDINGS = bindings("list")  # the one keys table, ui/keys.py
    COMPONENT_CLASSES = {
        "message-list--cursor",
        "message-list--partner",
        "message-list--op",
    }
    DEFAULT_CSS = """
    MessageList { scrollbar-size-vertical: 1; overflow-x: hidden; }
    MessageList > .message-list--cursor { background: $accent 40%; text-style: bold; }
    MessageList:focus > .message-list--cursor { background: $accent 70%; }
    MessageList > .message-list--partner { background: $secondary 35%; }
    MessageList > .message-list--op { background: $warning 15%; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.view: CaptureView | None = None
        self.rows: array | None = None  # filtered rows, or None for every row
        self._count = 0
        self._base = 0  # indexed rows shown (the rest of the count: read-ahead rows, view.tail)
        self._sel_partner: int | None = None
        self._sel_op: int | None = None
        self._sel_row: int | None = None

    # -- data --------------------------------------------------------------------------------

    def set_view(self, view: CaptureView | None) -> None:
        self.view = view
        self.rows = None
        self.update_count()
        self.cursor = 0

    @property
    def count(self) -> int:
        return self._count

    def update_count(self) -> None:
        """Re-read how many rows there are (indexing or follow mode added some)."""
        old, old_base = self._count, self._base
        if self.rows is not None:
            self._count = self._base = len(self.rows)
        else:
            view = self.view
            self._base = len(view) if view is not None else 0
            ahead = view.provisional if view is not None else 0
            # read-ahead rows follow the indexed ones, after one row that stands for the rest
            self._count = self._base + (1 + ahead if ahead else 0)
            if old_base <= self.cursor < old and self._count > self._base and self._base != old_base:
                # (on a read-ahead row: it stays selected, and in view, while more rows are indexed)
                self.set_reactive(MessageList.cursor, self.cursor + self._base - old_base)
                self.virtual_size = Size(self.size.width, self._count)
                self._scroll_to_cursor()
        self.virtual_size = Size(self.size.width, self._count)
        if self._count != old:
            self.refresh()

    def rows_appended(self, follow: bool) -> None:
        """New rows at the end: keep the selection, unless it sat on the last row in follow mode."""
        at_bottom = self._count > 0 and self.cursor >= self._count - 1
        old = self._count
        self.update_count()
        if follow and at_bottom and self._count > old:
            self.cursor = self._count - 1
        elif old == 0 and self._count:
            self.cursor = 0

    def set_rows(self, rows: array | None, keep: int | None) -> None:
        """Show only `rows` (None: all). Keep the selected capture row when it is among them,
        else select the nearest following one."""
        self.rows = rows
        self.update_count()
        if keep is None or not self._count:
            self.cursor = 0
            return
        pos = self.position_of(keep, nearest=True)
        self.cursor = min(pos if pos is not None else 0, self._count - 1)

    def row_at(self, pos: int) -> int:
        """The capture row at a position; past the indexed rows, GAP_ROW then the read-ahead rows
        (-2, -3, ...: see tracer.view.viewdata)."""
        if self.rows is not None:
            return self.rows[pos]
        return pos if pos < self._base else GAP_ROW - (pos - self._base)

    def position_of(self, row: int, nearest: bool = False) -> int | None:
        if self.rows is None:
            if row < 0:
                pos = self._base - row + GAP_ROW
                return pos if self._base <= pos < self._count else None
            return row if 0 <= row < self._base else None
        i = bisect_left(self.rows, row, 0, self._count)
        if i < self._count and self.rows[i] == row:
            return i
        return min(i, self._count - 1) if nearest and self._count else None

    @property
    def selected_row(self) -> int | None:
        if not self._count:
            return None
        return self.row_at(min(self.cursor, self._count - 1))

    def select_row(self, row: int) -> bool:
        """Move the selection to a capture row; False when the filter hides it."""
        pos = self.position_of(row)
        if pos is None:
            return False
        self.cursor = pos
        return True

    # -- cursor ------------------------------------------------------------------------------

    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, self._count - 1)) if self._count else 0

    def watch_cursor(self, value: int) -> None:
        self._scroll_to_cursor()
        row = self.selected_row
        info = self.view.info(row) if (self.view is not None and row is not None) else None
        self._sel_row = row
        self._sel_partner = info.partner if info else None
        self._sel_op = info.op_row if info else None
        self.refresh()
        self.post_message(RowSelected(row))

    def refresh_selection(self) -> None:
        """The analysis reached the selected row (partner, operation): redraw the marks."""
        row = self.selected_row
        if row is None or self.view is None:
            return
        info = self.view.info(row)
        if (info.partner, info.op_row) != (self._sel_partner, self._sel_op):
            self._sel_partner, self._sel_op = info.partner, info.op_row
        self.refresh()

    def _scroll_to_cursor(self) -> None:
        height = max(1, self.scrollable_content_region.height)
        top = int(self.scroll_y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def action_cursor_up(self) -> None:
        self.cursor -= 1

    def action_cursor_down(self) -> None:
        self.cursor += 1

    def action_page_up(self) -> None:
        self.cursor -= max(1, self.scrollable_content_region.height - 1)

    def action_page_down(self) -> None:
        self.cursor += max(1, self.scrollable_content_region.height - 1)

    def action_first(self) -> None:
        self.cursor = 0

    def action_last(self) -> None:
        self.cursor = max(0, self._count - 1)

    def on_click(self, event: Click) -> None:
        pos = int(self.scroll_y) + event.y
        if 0 <= pos < self._count:
            self.cursor = pos

    def on_resize(self) -> None:
        self.virtual_size = Size(self.size.width, self._count)
        self._scroll_to_cursor()

    # -- drawing -----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        pos = int(self.scroll_y) + y
        base = self.rich_style
        if pos >= self._count or self.view is None:
            return Strip.blank(width, base)
        row = self.row_at(pos)
        info = self.view.info(row)
        if pos == self.cursor:
            line_style = base + self.get_component_rich_style("message-list--cursor")
        elif row == self._sel_partner and row != self._sel_row:
            line_style = base + self.get_component_rich_style("message-list--partner")
        elif self._sel_op is not None and (row == self._sel_op or info.op_row == self._sel_op):
            line_style = base + self.get_component_rich_style("message-list--op")
        else:
            line_style = base
        segments = self._segments(info, width, row) if row >= 0 else self._ahead(info, width, row)
        segments = [Segment(s.text.translate(VISIBLE), s.style) for s in segments]
        strip = Strip(segments).apply_style(line_style) if segments else Strip.blank(width, line_style)
        return strip.crop_extend(0, width, line_style)

    def _ahead(self, info: RowInfo, width: int, row: int) -> list[Segment]:
        """A read-ahead row: no number (pending) and no analysis, drawn apart from exact rows."""
        if row == GAP_ROW:
            view = self.view
            done = f"{view.index.progress:.0%}" if view is not None else ""
            text = f"  ⋯ rows still being read ({done} so far); below: the end of the file, read ahead"
            return [Segment(_fit(text, width), Style(italic=True, bold=True))]
        segs = self._segments(info, width, row)
        if segs and info.basics.rtype == "message":
            segs[0] = Segment(" " + _fit("~", W_SEQ, True) + " ", DIM)
        return [Segment(s.text, (s.style or Style()) + Style(italic=True)) for s in segs]

    def _segments(self, info: RowInfo, width: int, row: int) -> list[Segment]:
        b = info.basics
        wm, wp = widths(width)
        gutter = " "
        if row == self._sel_partner and row != self._sel_row:
            gutter = "↔"
        elif self._sel_op is not None and (row == self._sel_op or info.op_row == self._sel_op):
            gutter = "⟲"
        seq = _fit(str(b.seq) if b.seq else "", W_SEQ, True)
        t = _fit(clock(b.t_ns), W_TIME)
        if b.rtype != "message":
            kind = b.rtype
            arrow = {"stderr": "!", "http": "⇄", "event": "•", "header": "▣"}.get(kind, " ")
            label = b.label.replace("\n", " ").replace("\r", " ")
            n = info.nfind  # (a finding raised on the record itself: an HTTP exchange, a stream's end)
            text = " ".join(
                [
                    gutter,
                    seq,
                    t,
                    arrow,
                    _fit(KIND_SHORT.get(kind, kind), W_KIND),
                    "   ",
                    _fit(label, wm + W_ID + W_LAT + 2 if n else wm + W_ID + W_LAT + W_FIND + wp + 4),
                ]
            )
            if not n:
                return [Segment(text, DIM)]
            found = [
                Segment(text + " ", DIM),
                Segment(_fit(f"● {n}", W_FIND), SEVERITY_STYLE.get(info.worst)),
            ]
            return [*found, Segment(" " + " " * wp, DIM)] if wp else found
        segs: list[Segment] = [Segment(f"{gutter} {seq} ", None), Segment(t + " ", DIM)]
        arrow = DIR_ARROW.get(b.dir or "", "?")
        segs.append(Segment(arrow, Style(dim=True) if b.dir_inferred else Style(bold=True)))
        segs.append(Segment(" "))
        kind = info.kind or "invalid"
        segs.append(Segment(_fit(KIND_SHORT.get(kind, kind), W_KIND), KIND_STYLE.get(kind)))
        segs.append(Segment(" "))
        era = info.era
        if era is None:
            segs.append(Segment(" · ", DIM))
        else:
            segs.append(Segment(ERA_BADGE[era], ERA_STYLE[era]))
        segs.append(Segment(" "))
        label = info.label
        if info.answers:
            segs.append(Segment(_fit("↳ " + label, wm), DIM if kind == "result" else None))
        else:
            segs.append(Segment(_fit(label, wm), Style(bold=True) if kind == "request" else None))
        segs.append(Segment(" " + _fit(id_repr(b.id) if b.has_id else "", W_ID) + " "))
        segs.append(
            Segment(_fit(duration(info.latency_ns), W_LAT, True) + " ", DIM if kind == "request" else None)
        )
        n = info.nfind
        if n:
            segs.append(Segment(_fit(f"● {n}", W_FIND), SEVERITY_STYLE.get(info.worst)))
        else:
            segs.append(Segment(_fit("" if info.analysed else "…", W_FIND), DIM))
        if wp:
            segs.append(Segment(" " + _fit(b.preview, wp), DIM))
        return segs
