"""The viewer's analysis: the lint engine (tracer.analyser, every rule) run over a capture in a
process of its own, writing per row what the viewer shows.

The viewer cannot analyse a 2,000,000-message capture before showing it, and must not keep two
million `Analysed` objects in memory. So the analysis runs once, sequentially (pairing and era
need every message in order), in a separate process (the machine's other core; the UI keeps the
GIL to itself), and writes into a work directory (tracer.view.rowstore):

- `rows.bin`: 52 bytes per row (tracer.view.rowformat; row = line of the capture, as tracer.index
  counts them): record type, kind, direction, era, worst severity, pair status, finding count,
  method (an index into a table sent on stdout), partner row, latency, MRTR first-round row, the
  row's note or the offset of its stored details, its seq and exact latency. A request learns its
  partner later: its row is patched in place when the answer comes (tracer.view.rowfill).
- `details.jsonl`: a compact record (tracer.view.details: the parts of its era and pairing
  reasons, its findings) for each message whose details cannot be derived when shown: those with
  findings, SSE timing, an unusual pairing, batches, invalid messages. A plain message has a note
  instead (tracer.view.notes): most rows cost no details at all.

Progress goes to stdout as JSON lines: {"rows": N, "fr": [rows that gained findings], "m": {new
method: index}, "w": [first, new notes], "eof": bool, "done": bool, "summary": {...}}. Rows below
`rows` are final except for patches (the reader re-reads what it shows).

Run: python -m tracer.view.annotate CAPTURE WORKDIR [--follow] [--one-process]. With --follow it
tails the capture until its stdin closes; without, it stops at the end of the file, after the
end-of-session rules. The analyser runs in a process forked from this one, which writes the rows
from its results (tracer.view.pipeline, tracer.view.replay: the same files and reports, findings
sooner on two cores); --one-process does both here, with the Annotator below.
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import stat
import sys
import threading
import time
from typing import Any

from tracer.analyser import RuleSet
from tracer.index import IndexReset
from tracer.safejson import dumps as safe_dumps
from tracer.view.hotrows import block, fill
from tracer.view.rowfill import MAX_STASH, RowFiller

FLUSH_ROWS = 2048
CHECK_ROWS = 256
FLUSH_SECONDS = 0.1
POLL_SECONDS = 0.2


def next_block(index, first: int, upto: int, flushed: int) -> list[bytes]:
    """The lines analysed next, from row FIRST (below UPTO; rows below FLUSHED are written): a run
    (tracer.view.hotrows) up to the next flush check, FLUSH_ROWS unwritten rows, then every
    CHECK_ROWS. One decision for both ways of analysing (tracer.view.pipeline too): their blocks,
    and so their reports, are the same."""
    waiting = first - flushed
    return block(
        index, first, min(upto, first + (FLUSH_ROWS - waiting if waiting < FLUSH_ROWS else CHECK_ROWS))
    )


def flush_due(unwritten: int, last_flush: float) -> bool:
    """At a flush check: FLUSH_SECONDS have passed since the last flush, or too many rows wait."""
    return time.monotonic() - last_flush >= FLUSH_SECONDS or unwritten >= 16 * FLUSH_ROWS


class Annotator(RowFiller):
    """The analysis process's loop: rows as the capture grows, progress on its way out."""

    def __init__(
        self,
        capture: str,
        workdir: str,
        *,
        follow: bool = False,
        rules: RuleSet | None = None,
        emit=None,
        analyser=None,
    ):
        super().__init__(capture, workdir, follow=follow, rules=rules, analyser=analyser)
        self.emit = emit or (lambda msg: None)
        self.stop = threading.Event()
        self._last_flush = time.monotonic()
        self._last_summary = 0.0
        self._summary_every = 0.5
        self._summary_rows = -1
        self._eof_reported = False

    # -- main loop ---------------------------------------------------------------------------

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                try:
                    self.index.update()
                except IndexReset as exc:
                    self.flush(eof=True)
                    self.emit({"error": str(exc)})
                    return
                n = len(self.index)
                if self.row < n:
                    self.process(n)
                    continue
                if not self.follow and self.index.complete:
                    self.finish()
                    return
                self.flush(eof=True)
                self.stop.wait(POLL_SECONDS)
        finally:
            self.close()

    def process(self, upto: int) -> None:
        store = self.store
        stop = self.stop
        while self.row < upto:
            first = self.row
            lines = next_block(self.index, first, upto, store.flushed)
            if not lines:
                return
            fill(self, first, lines)
            unwritten = self.row - store.flushed
            if unwritten >= FLUSH_ROWS:
                if flush_due(unwritten, self._last_flush):
                    self.flush()
                if stop.is_set():
                    return

    def finish(self) -> None:
        self.end_sessions()
        self.flush(eof=True, done=True, summary=True)

    def end_sessions(self) -> None:
        """The end of the input: the end-of-session rules' findings on their rows."""
        for ev in self.analyser.finish():
            for f in ev.findings:
                self.attach_end_finding(f)
            self.summary.session_closed(ev.session, ev.name, ev.cell)
        self.stash.clear()

    # -- progress ----------------------------------------------------------------------------

    def flush(self, *, eof: bool = False, done: bool = False, summary: bool = False) -> None:
        self.settle_rows()
        store = self.store
        changed = bool(store.buf or self.new_frows or self.new_methods or self.notes.new or store.patched)
        if eof and not changed and not done and self._eof_reported:
            return
        self._eof_reported = eof
        stale = self._summary_rows != self.row
        take = summary or (stale and (eof or time.monotonic() - self._last_summary >= self._summary_every))
        self.report(eof=eof, done=done, summary=take)

    def settle_rows(self) -> None:
        """Before a flush: the waiting requests' rows packed, the stash and SSE timings bounded."""
        if self.deferred:
            self.write_deferred()
        while len(self.stash) > MAX_STASH:  # requests never answered, oldest first: memory stays bounded
            del self.stash[next(iter(self.stash))]
        if self.flow_waiting:
            self.flow_waiting.prune(self.stash)
        if self.timings:  # keep the SSE timing only of rows whose details may be written again
            waiting = {v[1] for v in self.stash.values()}
            self.timings = {r: t for r, t in self.timings.items() if r in waiting}

    def report(self, *, eof: bool, done: bool, summary: bool) -> None:
        """The rows written and the progress report sent (with the summary when SUMMARY)."""
        store = self.store
        store.patched = False
        store.flush()
        now = time.monotonic()
        self._last_flush = now
        msg: dict[str, Any] = {"rows": store.flushed, "eof": eof, "done": done}
        if self.new_methods:
            msg["m"] = self.new_methods
            self.new_methods = {}
        notes = self.notes.take_new()
        if notes is not None:
            msg["w"] = notes
        if self.new_frows:
            msg["fr"] = self.new_frows
            self.new_frows = []
        if summary:
            msg["summary"] = self.summary_snapshot()
            self._summary_rows = self.row
            self._last_summary = time.monotonic()
            # sorting latencies costs more as the capture grows: space the snapshots out
            self._summary_every = min(10.0, max(0.5, (self._last_summary - now) * 20))
        self.emit(msg)

    def summary_snapshot(self) -> dict[str, Any]:
        snap = self.summary.snapshot(self.analyser)
        snap["capture_findings"] = self.capture_findings[:1000]
        snap["analysed_rows"] = self.store.flushed
        snap["unreadable_rows"] = self.analysis_errors
        return snap

    def close(self) -> None:
        try:
            self.store.close()
        finally:
            self.index.close()


def _stdout_emitter():
    out = sys.stdout.buffer

    def emit(msg: dict[str, Any]) -> None:
        out.write(safe_dumps(msg) + b"\n")  # (method names are what peers sent)
        out.flush()

    return emit


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tracer.view.annotate", description=__doc__.split("\n\n")[0])
    p.add_argument("capture")
    p.add_argument("workdir")
    p.add_argument("--follow", action="store_true")
    p.add_argument("--one-process", action="store_true", help="analyse and write the rows in this process")
    args = p.parse_args(argv)
    faulthandler.enable()  # a fatal signal (native code) still says why on stderr, which the viewer shows
    if not args.one_process and hasattr(os, "fork"):
        from tracer.view.replay import run_pipeline

        return run_pipeline(args.capture, args.workdir, follow=args.follow, emit=_stdout_emitter())
    ann = Annotator(args.capture, args.workdir, follow=args.follow, emit=_stdout_emitter())

    def watch_stdin() -> None:  # the viewer closes our stdin (or dies): stop
        try:
            # the descriptor, not sys.stdin: a daemon thread blocked in a buffered read holds its
            # lock, and the interpreter aborted at exit on it (SIGABRT, "Fatal Python error:
            # _enter_buffered_busy") whenever the analysis ended before the viewer closed our stdin
            while os.read(0, 4096):
                pass
        except (OSError, ValueError):
            pass
        ann.stop.set()

    if stat.S_ISFIFO(os.fstat(0).st_mode):
        threading.Thread(target=watch_stdin, daemon=True).start()
    try:
        ann.run()
    except BrokenPipeError:
        return 0
    except Exception as exc:  # say why on the progress channel the viewer reads, then stop
        try:
            ann.emit({"error": f"analysis stopped: {type(exc).__name__}: {str(exc)[:300]}"})
        except OSError:
            pass
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
