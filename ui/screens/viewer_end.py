"""The viewer's two ways to the end of an input: following a file that grows (`f`), and `G` while
the file is still being read (its end read ahead of the index, tracer.inputs.tail). A part of
ViewerScreen (ui/screens/viewer.py), whose state (view, index_done, pending_last...) it uses."""

from __future__ import annotations

import os
import threading
import time

from textual import work

from tracer.index import IndexReset
from tracer.inputs.lazy import InputBroken
from tracer.view.viewdata import CaptureView
from ui.messages import TailRead, Waiting

FOLLOW_POLL = 0.25  # seconds between looks at a followed file
READ_PROBLEMS_SHOWN = 5  # read problems listed in the notification (the status line: the first)


def not_followed(view: CaptureView) -> str:
    """Why --follow read VIEW's input once (the line the viewer says)."""
    fmt = getattr(view.index, "fmt", None)
    if fmt is not None and fmt.name == "har":
        # (a HAR is one JSON document that its writers, browsers and mitmdump's hardump, write
        # whole when the recording ends; one rewritten meanwhile is read again with f, which
        # reopens a view that is not followed, by the user's choice rather than on a guess that
        # the writer has finished rewriting it)
        return "a HAR is read to its end once, not followed: it is written whole when its recording ends (f reads it again)"
    return "--follow follows mcptrace captures, host logs, NDJSON and flow files: this file is read to its end once"


FORMAT_POLL = 0.25  # seconds between looks at a followed file too short yet to tell its format


class FollowAndEnd:
    def wait_for_format(self) -> bool:
        """(the opening worker) A followed file too short yet for detection to tell its format (an
        empty host log, a first line still being written; tracer.inputs.decidable): wait until it
        can, saying so on the status line, so it is read by its own reader, not as a capture. False
        when the screen closed meanwhile."""
        from tracer.inputs import decidable_file

        said = None
        while not decidable_file(self.path):
            try:
                size = os.path.getsize(self.path)
            except OSError:
                size = 0
            note = (
                f"waiting for {os.path.basename(self.path)} to be written: {size:,} bytes, "
                f"not enough yet to tell its format"
            )
            if note != said:
                self.post_message(Waiting(note))
                said = note
            if self.closing.wait(FORMAT_POLL):
                return False
        return True

    def note_torn_end(self) -> None:
        """A followed flow file that ends inside a flow as the viewer quits: said after the screen
        closes (McpTraceApp.exit_notes), as it was never shown."""
        view = self.view
        index = view.index if view is not None else None
        torn = index.torn_flow() if hasattr(index, "torn_flow") else None
        note = index.torn_at_end() if torn is not None else None
        if note is not None:
            self.app.torn_end = torn
            self.app.exit_notes.append(note)

    def action_toggle_follow(self) -> None:
        if self.follow:
            self.follow = False
            if self.follow_timer is not None:
                self.follow_timer.stop()
                self.follow_timer = None
            self.status.set(follow=False)
            return
        self.follow = True
        self.status.set(follow=True)
        if self.view is not None and not self.view.follow:
            # reopen: the analysis must keep its sessions open for what will be appended
            self.close_view()
            self.index_done = False
            self.first_drawn = threading.Event()
            self.open_capture()
        elif self.index_done:
            self.start_follow()
            self.list.action_last()

    def start_follow(self) -> None:
        if self.follow_timer is None:
            self.follow_timer = self.set_interval(FOLLOW_POLL, self._poll_growth)

    def _poll_growth(self) -> None:
        view = self.view
        if view is None or not self.index_done:
            return
        before = len(view)
        try:
            after = view.grow()
        except InputBroken as exc:  # a followed host log or NDJSON file truncated or rotated away
            self.follow = False
            if self.follow_timer is not None:
                self.follow_timer.stop()
                self.follow_timer = None
            self.status.set(follow=False, note=str(exc))
            self.notify(str(exc), title="follow", severity="warning", timeout=10, markup=False)
            self._rows_grew()
            return
        except (OSError, IndexReset) as exc:
            self.status.set(note=f"capture changed: {exc}")
            return
        if after != before:
            self._rows_grew()
        self._say_torn(view)

    def _say_torn(self, view: CaptureView) -> None:
        """A followed flow file that ends inside a flow being written: said on the status line as
        what it is (a flow not whole yet, shown once it is), never as a broken one."""
        torn_flow = getattr(view.index, "torn_flow", None)
        torn = torn_flow() if torn_flow is not None else None
        note = f"flow {torn[0]:,} is being written ({torn[1]:,} bytes so far)" if torn is not None else None
        ended = self.app.stream_ended
        if note is not None and ended is not None and ended.is_set():  # (its writer stopped there)
            note = f"flow {torn[0]:,} cut short ({torn[1]:,} bytes): the stream ended in it"
        if note == self.torn_said:
            return
        if note is not None:
            self.status.set(note=note)
        elif self.status.state.note == self.torn_said:
            self.status.set(note="")
        self.torn_said = note

    def say_read_problems(self) -> None:
        """A converted input's read problems (a HAR cut short, a flow that cannot be read), said as
        lint says them, once its conversion is whole: the rows read stay."""
        view = self.view
        if view is None:
            return
        problems, count = view.read_problems
        if not problems:
            return
        name = os.path.basename(view.source)
        said = [f"line {n:,} of {name}: {why}" for n, why in problems[:READ_PROBLEMS_SHOWN]]
        more = count - len(said)
        head = "1 read problem" if count == 1 else f"{count:,} read problems"
        self.status.set(note=f"{head}: {said[0]}" + (f" (+{count - 1:,} more)" if count > 1 else ""))
        self.notify(
            "\n".join(said + ([f"and {more:,} more (mcptrace lint {name})"] if more > 0 else [])),
            title=head,
            severity="warning",
            timeout=15,
            markup=False,  # the problems quote capture lines: shown, not read as markup
        )

    def action_last_when_ready(self) -> None:
        if self.index_done:
            self.list.action_last()
            self.call_after_refresh(self._last_row_drawn)
            return
        self.pending_last = True
        view = self.view
        if view is None:
            return
        if view.tail is not None:  # read ahead already: to its last row
            self.list.action_last()
        elif view.can_read_ahead():
            self._read_ahead(view)

    @work(thread=True, exclusive=True, group="ahead")
    def _read_ahead(self, view: CaptureView) -> None:
        """The end of the input at once, read ahead of the index (tracer.inputs.tail)."""
        self.not_reading_ahead.clear()
        try:
            if view.read_ahead():
                self.post_message(TailRead())
        finally:
            self.not_reading_ahead.set()

    def on_tail_read(self, _msg: TailRead) -> None:
        view = self.view
        if view is None or view.tail is None:
            return
        if self.index_done:  # (the index got there first: its rows are the exact ones)
            view.drop_tail()
            return
        self.list.update_count()
        if self.pending_last and self.list.rows is None:
            self.list.action_last()
            self.call_after_refresh(self._tail_drawn)

    def _tail_drawn(self) -> None:
        self.tail_drawn_at = time.monotonic()  # read by tests/bench/bench_view.py
