"""The capture screen: status line, message list, detail pane, filter bar, footer.

Threads: one worker opens and indexes the file (posting ViewReady, then IndexProgress), the
analysis process reports through tracer.view.annotations' reader thread (posting AnalysisProgress),
and each filter runs in its own worker (posting FilterProgress). None of them touches a widget.
"""

from __future__ import annotations

import os
import threading
import time
from array import array

from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from tracer.filter import FilterError, compile_filter
from tracer.index import IndexReset
from tracer.inputs.spooled import InputRestart
from tracer.view.viewdata import CaptureView, open_view
from tracer.view.viewfilter import FilterJob
from ui.keys import bindings, short_labels
from ui.messages import (
    AnalysisProgress,
    FilterProgress,
    IndexProgress,
    OpenFailed,
    ReopenWhole,
    RowSelected,
    ViewReady,
    Waiting,
)
from ui.screens.viewer_end import FollowAndEnd, not_followed
from ui.widgets.detail import DetailPane
from ui.widgets.detail_render import rule_names
from ui.widgets.filter_bar import FilterBar
from ui.widgets.keys_footer import KeysFooter
from ui.widgets.message_list import MessageList, column_header
from ui.widgets.status import StatusBar

# seconds between two reports of the indexer (the row count, the list's scrollbar): each redraws the
# screen, which took the viewer's process a third as much CPU as the conversion it waits for
INDEX_REPORT_S = 1.0
DETAIL_DELAY = 0.03  # debounce of the detail pane while a key repeats
FIRST_SCREEN_WAIT = 2.0  # the indexer waits at most this long for the first screen to be drawn
AHEAD_WAIT = 5.0  # the indexer steps aside at most this long while the end is read ahead (G)


class ViewerScreen(FollowAndEnd, Screen):
    # The keys and their footer labels come from the one table (ui/keys.py) the help screen renders.
    BINDINGS = bindings("viewer")
    # What the footer keeps in view first (the filter bar's Close, then Help and Quit)
    FOOTER_FIRST = ("cancel", "help", "quit", "filter", "next_finding", "prev_finding", "partner", "summary")
    FOOTER_SHORT = short_labels("viewer", "app", "filter")

    def __init__(self, path: str, *, follow: bool = False, fmt: str | None = None, hint: str = "") -> None:
        super().__init__()
        self.hint = hint
        self.path = path
        self.follow = follow
        self.fmt = fmt
        self.whole = False  # a HAR converted as one document (its entries were out of order)
        self.view: CaptureView | None = None
        self.filter_source = ""
        self.filter_gen = 0
        self.filter_job: FilterJob | None = None
        self.filter_matches: array | None = None
        self.filter_scanned = 0
        self.filter_keep: int | None = None
        self.index_done = False
        self.pending_last = False  # G / follow asked for the end before indexing finished
        self.follow_timer: Timer | None = None
        self.detail_timer: Timer | None = None
        self.shown_detail: tuple[int, int] | None = None  # (row, details offset) on screen
        self.opened_at = time.monotonic()
        self.first_drawn = threading.Event()
        self.not_reading_ahead = threading.Event()  # cleared while G reads the end ahead
        self.not_reading_ahead.set()
        self.closing = threading.Event()  # the screen is closing (a wait for the file's format ends)
        self.torn_said: str | None = None  # the status note of a followed flow file's torn end
        self.first_drawn_at: float | None = None
        self.last_row_drawn_at: float | None = None
        self.tail_drawn_at: float | None = None  # G showed the end read ahead (provisional rows)

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with Vertical(id="list-box"):
            yield Static("", id="columns")
            yield MessageList(id="list")
        yield DetailPane(id="detail")
        yield FilterBar(id="filter")
        yield KeysFooter(first=self.FOOTER_FIRST, short=self.FOOTER_SHORT)

    @property
    def list(self) -> MessageList:
        return self.query_one(MessageList)

    @property
    def status(self) -> StatusBar:
        return self.query_one(StatusBar)

    @property
    def detail(self) -> DetailPane:
        return self.query_one(DetailPane)

    def on_mount(self) -> None:
        self.status.set(name=os.path.basename(self.path), follow=self.follow, note="opening…", hint=self.hint)
        self.list.focus()
        self.open_capture()

    def on_resize(self) -> None:
        self.query_one("#columns", Static).update(column_header(self.list.size.width or self.size.width))

    def on_unmount(self) -> None:
        self.closing.set()
        self.note_torn_end()
        self.close_view()

    def close_view(self) -> None:
        if self.filter_job is not None:
            self.filter_job.cancel()
        if self.view is not None:
            # The list lets go first: drawn after this (f reopening a file that waits to tell its
            # format), it would read the closed view's removed files and end the viewer.
            for shown in self.query(MessageList):  # (none when the screen is being unmounted)
                shown.set_view(None)
            self.view.close()
            self.view = None

    # -- opening and indexing (worker thread) ------------------------------------------------

    @work(thread=True, exclusive=True, group="open")
    def open_capture(self) -> None:
        if self.follow and self.fmt is None and not self.wait_for_format():
            return
        try:
            view = open_view(
                self.path,
                follow=self.follow,
                fmt=self.fmt,
                on_analysis=lambda ann: self.post_message(AnalysisProgress()),
                whole=self.whole,
            )
        except Exception as exc:  # InputError, OSError: one line on screen
            self.post_message(OpenFailed(str(exc)))
            return
        try:
            view.index.update(max_bytes=view.index.FIRST_STEP)
            self.post_message(ViewReady(view))
            # Let the first screen be drawn before indexing the rest: this loop holds the GIL,
            # and the UI would otherwise wait for it at every step of its first frame.
            self.first_drawn.wait(FIRST_SCREEN_WAIT)
            # The analysis starts with the screen, not after the whole index: the rows shown first
            # are the first it analyses (it reads the file on its own, in another process).
            self._start_analysis(view)
            last = 0.0
            while not view.index.complete:
                # (the end read ahead is what the user waits for then: its thread gets the GIL)
                self.not_reading_ahead.wait(AHEAD_WAIT)
                view.index.update(max_bytes=view.index.STEP)
                time.sleep(0)  # a chance for the UI thread between chunks (keys stay responsive)
                now = time.monotonic()
                if now - last > INDEX_REPORT_S:
                    last = now
                    self.post_message(IndexProgress(len(view.index), view.index.progress, False))
        except InputRestart:
            self.post_message(ReopenWhole())
            return
        except (OSError, IndexReset) as exc:
            self.post_message(OpenFailed(str(exc)))
            return
        self.post_message(IndexProgress(len(view.index), 1.0, True))

    def on_reopen_whole(self, _msg: ReopenWhole) -> None:
        self.close_view()
        self.index_done = False
        self.first_drawn = threading.Event()
        self.whole = True
        self.open_capture()

    def on_waiting(self, msg: Waiting) -> None:
        self.status.set(note=msg.note)

    def _start_analysis(self, view: CaptureView) -> None:
        try:
            view.start()
        except OSError as exc:
            self.post_message(OpenFailed(f"the background analysis did not start: {exc}"))

    def on_view_ready(self, msg: ViewReady) -> None:
        self.view = msg.view
        self.list.set_view(msg.view)
        self.on_resize()
        self.status.set(rows=len(msg.view), indexing=msg.view.index.progress, note="")
        self.call_after_refresh(self._first_screen_drawn)
        if self.follow and not msg.view.follow:  # (other inputs' readers stop at their end)
            self.follow = False
            self.status.set(follow=False)
            self.notify(not_followed(msg.view), timeout=8, markup=False)
        if self.follow:
            self.pending_last = True

    def _first_screen_drawn(self) -> None:
        self.first_drawn_at = time.monotonic()  # read by tests/bench/bench_view.py
        self.first_drawn.set()

    def _last_row_drawn(self) -> None:
        self.last_row_drawn_at = time.monotonic()

    def on_open_failed(self, msg: OpenFailed) -> None:
        self.status.set(note=f"cannot open: {msg.error}")
        self.notify(msg.error, title="cannot open", severity="error", timeout=10, markup=False)

    def on_index_progress(self, msg: IndexProgress) -> None:
        if self.view is None:
            return
        if msg.done and self.view.tail is not None:
            self.view.drop_tail()  # the exact rows are all there: the read-ahead ones go
        self._rows_grew()
        if msg.done:
            self.index_done = True
            self.status.set(indexing=None)
            self.say_read_problems()
            if self.follow:
                self.start_follow()
        else:
            self.status.set(indexing=msg.fraction)
        if self.pending_last and msg.done:
            self.pending_last = False
            self.list.action_last()
            self.call_after_refresh(self._last_row_drawn)

    def _rows_grew(self) -> None:
        view = self.view
        if view is None:
            return
        self.status.set(rows=len(view))
        if self.filter_matches is not None:
            self._extend_filter()
        else:
            self.list.rows_appended(self.follow)

    # -- analysis progress -------------------------------------------------------------------

    def on_analysis_progress(self, _msg: AnalysisProgress) -> None:
        view = self.view
        if view is None or view.ann is None:
            return
        ann = view.ann
        caught_up = ann.eof and ann.rows_done >= len(view)  # follow mode: analysed up to the end so far
        self.status.set(
            analysed=ann.rows_done,
            analysis_done=ann.done or caught_up,
            analysis_error=ann.error,
            findings_rows=len(ann.finding_rows),
            unreadable=ann.unreadable_rows,
        )
        self.list.refresh_selection()
        row = self.list.selected_row
        if row is not None:
            s = ann.row(row) if row >= 0 else None  # (a row read ahead is analysed once it is indexed)
            key = (row, s.detail_key if s is not None else -2)
            if key != self.shown_detail:
                self._show_detail(row, keep_scroll=True)

    # -- selection and detail ----------------------------------------------------------------

    def on_row_selected(self, msg: RowSelected) -> None:
        if self.detail_timer is not None:
            self.detail_timer.stop()
        row = msg.row
        self.detail_timer = self.set_timer(DETAIL_DELAY, lambda: self._show_detail(row))

    def _show_detail(self, row: int | None, keep_scroll: bool = False) -> None:
        view = self.view
        if view is None or row is None or row >= len(view) or (row < 0 and view.tail is None):
            self.detail.show(None)
            self.shown_detail = None
            return
        d = view.detail(row)
        self.shown_detail = (row, d.summary.detail_key if d.summary is not None else -2)
        upto = view.ann.rows_done if view.ann is not None else None
        ended = view.ann is not None and view.ann.done
        self.detail.show(d, analysed_upto=upto, ended=ended, keep_scroll=keep_scroll)

    # -- filter ------------------------------------------------------------------------------

    def action_filter(self) -> None:
        self.query_one(FilterBar).open(self.filter_source)

    def on_filter_bar_closed(self, _msg: FilterBar.Closed) -> None:
        self.list.focus()

    def on_filter_bar_applied(self, msg: FilterBar.Applied) -> None:
        self.apply_filter(msg.source)

    def apply_filter(self, source: str) -> None:
        if self.filter_job is not None:
            self.filter_job.cancel()
            self.filter_job = None
        self.filter_gen += 1
        keep = self.list.selected_row
        self.filter_source = source
        if not source or self.view is None:
            self.filter_matches = None
            self.list.set_rows(None, keep)
            self.status.set(filter="", matches=None, filter_scanned=None)
            return
        try:
            flt = compile_filter(source, rule_names=rule_names())
        except FilterError as exc:
            self.notify(str(exc), title="filter", severity="error", markup=False)
            return
        self.filter_matches = array("i")
        self.filter_scanned = 0
        self.filter_keep = keep
        self.list.set_rows(self.filter_matches, keep)
        self.status.set(filter=source, matches=0, filter_scanned=0.0)
        self._run_filter(flt, 0)

    def _extend_filter(self) -> None:
        """Rows were appended: filter them too (when the running scan has finished)."""
        if self.filter_job is None and self.view is not None and self.filter_scanned < len(self.view):
            self._run_filter(compile_filter(self.filter_source, rule_names=rule_names()), self.filter_scanned)

    def _run_filter(self, flt, start: int) -> None:
        view = self.view
        gen = self.filter_gen
        matches = self.filter_matches
        last_post = [0.0]

        def progress(found: array, scanned: int) -> None:
            now = time.monotonic()
            if now - last_post[0] > 0.05:
                last_post[0] = now
                self.post_message(FilterProgress(gen, found, scanned, False))

        job = FilterJob(view, flt, start=start, stop=len(view), on_progress=progress, into=matches)
        self.filter_job = job
        self._filter_worker(job, gen)

    @work(thread=True, group="filter")
    def _filter_worker(self, job: FilterJob, gen: int) -> None:
        job.run()
        self.post_message(FilterProgress(gen, job.matches, job.scanned, not job.cancelled.is_set()))

    def on_filter_progress(self, msg: FilterProgress) -> None:
        if msg.generation != self.filter_gen or self.view is None:
            return
        self.filter_scanned = msg.scanned
        was_empty = self.list.count == 0
        self.list.update_count()
        if was_empty and self.list.count:
            self.list.set_rows(self.filter_matches, self.filter_keep)
        elif self.follow:
            self.list.rows_appended(True)
        total = max(1, len(self.view))
        self.status.set(matches=len(msg.matches), filter_scanned=None if msg.done else msg.scanned / total)
        if msg.done:
            self.filter_job = None
            if self.filter_scanned < len(self.view):
                self._extend_filter()

    # -- navigation --------------------------------------------------------------------------

    def action_partner(self) -> None:
        view, lst = self.view, self.list
        row = lst.selected_row
        if view is None or row is None:
            return
        info = view.info(row)
        if not info.analysed:
            self.notify("this row is not analysed yet", timeout=3)
            return
        partner = info.partner
        if partner is None:
            self.notify("no partner: nothing answered it, or it answers nothing", timeout=3)
            return
        if not lst.select_row(partner):
            self.notify(f"its partner (row {partner:,}) is hidden by the filter", timeout=4)

    def _finding(self, step: int) -> None:
        view, lst = self.view, self.list
        row = lst.selected_row
        if view is None or row is None:
            return
        cur = row
        while True:
            nxt = view.next_finding(cur, step)
            if nxt is None:
                done = view.ann is None or view.ann.done
                self.notify("no more findings" + ("" if done else " so far (still analysing)"), timeout=3)
                return
            if lst.select_row(nxt):
                return
            cur = nxt

    def action_next_finding(self) -> None:
        self._finding(1)

    def action_prev_finding(self) -> None:
        self._finding(-1)

    def action_focus_detail(self) -> None:
        self.detail.focus()

    def action_focus_list(self) -> None:
        self.list.focus()

    # -- other screens -----------------------------------------------------------------------

    def action_summary(self) -> None:
        from ui.screens.summary import SummaryScreen

        ann = self.view.ann if self.view is not None else None
        self.app.push_screen(
            SummaryScreen(
                ann.summary if ann is not None else None,
                done=bool(ann and ann.done),
                name=os.path.basename(self.path),
            )
        )

    def action_expand(self) -> None:
        from ui.screens.body import BodyScreen

        row = self.list.selected_row
        if self.view is not None and row is not None:
            self.app.push_screen(BodyScreen(self.view, row))

    def action_help(self) -> None:
        from ui.screens.help import HelpScreen

        self.app.push_screen(HelpScreen())
