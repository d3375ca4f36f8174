"""The viewer's analysis: the lint engine (tracer.analyser, every rule) run over a capture in a
process of its own, writing per row what the viewer shows.

The viewer cannot analyse a 2,000,000-message capture before showing it, and must not keep two
million `Analysed` objects in memory. So the analysis runs once, sequentially (pairing and era
need every message in order), in a separate process (the machine's other core; the UI keeps the
GIL to itself), and writes into a work directory (tracer.view.rowstore):

- `rows.bin`: 32 bytes per row (tracer.view.rowformat; row = line of the capture, as tracer.index
  counts them): record type, kind, direction, era, worst severity, pair status, finding count,
  method (an index into a table sent on stdout), partner row, latency, MRTR first-round row, and
  the offset of the row's details. A request learns its partner later: its row is patched in place
  when the answer comes.
- `details.jsonl`: one compact record per analysed message (tracer.view.details: the parts of its
  era and pairing reasons, its findings), expanded by the viewer for the row it shows.

Progress goes to stdout as JSON lines: {"rows": N, "fr": [rows that gained findings], "m": {new
method: index}, "eof": bool, "done": bool, "summary": {...}}. Rows below `rows` are final except
for patches (the reader re-reads what it shows).

Run: python -m tracer.view.annotate CAPTURE WORKDIR [--follow]. With --follow it tails the capture
until its stdin closes; without, it stops at the end of the file, after the end-of-session rules.
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

import orjson

from tracer.analyser import Analyser, RuleSet
from tracer.capture import record_from_dict
from tracer.index import IndexReset
from tracer.inputs.lazy import open_rows
from tracer.model import Analysed, Finding, Kind, RecordType
from tracer.pairing import PairStatus
from tracer.safejson import dumps as safe_dumps
from tracer.summary import SummaryBuilder
from tracer.view.details import SseClock, compact, expand
from tracer.view.rowformat import (
    DIR_OF,
    ERA_OF,
    FLAG_DIR_INFERRED,
    KIND_OF,
    PAIR_CODE,
    RTYPE_CODE,
    RTYPE_OF,
    SeqMap,
    empty_row,
    finding_list,
)
from tracer.view.rowstore import RowStore

MAX_METHODS = 50_000  # method labels beyond this (junk from invalid traffic) are not interned
LAT_MAX_US = 2**31 - 1
_ANSWERED = (PairStatus.PAIRED, PairStatus.AFTER_CANCEL)
_MESSAGE = RecordType.MESSAGE


def _lat_us(latency_ns: int) -> int:
    """A latency as the row table holds it: microseconds, capped; -1 (none) for a negative one (an
    answer timed before its request: clocks of different machines)."""
    us = latency_ns // 1000
    return -1 if us < 0 else min(LAT_MAX_US, us)


FLUSH_ROWS = 2048
FLUSH_SECONDS = 0.1
POLL_SECONDS = 0.2


class Annotator:
    def __init__(
        self, capture: str, workdir: str, *, follow: bool = False, rules: RuleSet | None = None, emit=None
    ):
        self.capture = capture
        self.workdir = workdir
        self.follow = follow
        # a capture's lines, or the rows the viewer reads lazily from another input (the same rows)
        self.index = open_rows(capture, final=not follow)
        self.analyser = Analyser(rules)
        self.summary = SummaryBuilder()
        self.emit = emit or (lambda msg: None)
        self.store = RowStore(workdir)
        self.seqmap = SeqMap()
        self.row = 0  # next row to analyse
        self.methods: dict[str, int] = {}
        self.new_methods: dict[str, int] = {}
        self.new_frows: list[int] = []
        self.stash: dict[int, tuple[Any, int, Analysed]] = {}  # id(PendingRequest) -> (req, row, top)
        self.deferred: dict[int, Analysed] = {}  # rows whose details wait for their answer
        self.sse = SseClock()
        self.timings: dict[int, dict[str, Any]] = {}  # row -> SSE timing, until its details are written
        self.capture_findings: list[list[Any]] = []
        self.stop = threading.Event()
        self._last_flush = time.monotonic()
        self._last_summary = 0.0
        self._summary_every = 0.5
        self._summary_rows = -1
        self._eof_reported = False
        self.analysis_errors = 0  # rows whose analysis raised (see unreadable)

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
        analyse_row = self.analyse_row
        stop = self.stop
        for row, line in self.index.lines(self.row, upto):
            self.row = row + 1
            try:
                analyse_row(row, line)
            except Exception as exc:  # a record this version cannot analyse costs its row, not the rest
                self.unreadable(row, exc)
            if row + 1 - store.flushed >= FLUSH_ROWS:
                now = time.monotonic()
                if now - self._last_flush >= FLUSH_SECONDS or row + 1 - store.flushed >= 16 * FLUSH_ROWS:
                    self.flush()
                if stop.is_set():
                    return

    def finish(self) -> None:
        for ev in self.analyser.finish():
            for f in ev.findings:
                self.attach_end_finding(f)
            self.summary.session_closed(ev.session, ev.name, ev.cell)
        self.stash.clear()
        self.flush(eof=True, done=True, summary=True)

    # -- one row -----------------------------------------------------------------------------

    def analyse_row(self, row: int, line: bytes) -> None:
        fields = empty_row()
        try:
            obj = orjson.loads(line)
            if type(obj) is not dict:
                raise ValueError("record is not a JSON object")
            rec = record_from_dict(obj, line=row + 1, source=self.capture)
        except (orjson.JSONDecodeError, ValueError) as exc:
            if not line.strip():
                fields[0] = RTYPE_CODE["blank"]
                self.store.put(row, fields)
                return
            torn = row >= len(self.index.ends)  # the unterminated last line of a final index
            fields[0] = RTYPE_CODE["broken"]
            why = (
                "torn last line (the writer was stopped mid-record)"
                if torn
                else f"broken capture record: {exc}"
            )
            fields[11] = self.store.write_details({"broken": why})
            self.store.put(row, fields)
            return
        self.summary.add_record(rec)
        rtype = rec.type
        fields[0] = RTYPE_OF[rtype]
        if rec.dir is not None:
            fields[2] = DIR_OF[rec.dir]
        if rec.dir_inferred:
            fields[5] |= FLAG_DIR_INFERRED
        timing = self.sse.timing(rec) if rec.sse or rtype is RecordType.EVENT else None
        if rtype is _MESSAGE:
            self.seqmap.add(rec.seq, row)
            self.message(row, self.analyser.feed(rec), fields, timing)  # (a message record: its Analysed)
            return
        events = self.analyser.feed(rec)
        self.store.put(row, fields)
        # Findings that belong to no message: end-of-session rules on a close event (or a new
        # recording's header), and HTTP rules on `http` records and SSE stream events.
        for ev in events:
            for f in ev.findings:
                self.attach_end_finding(f)
            session = getattr(ev, "session", None)
            if session is not None:  # (a SessionClosed) the summary reads what it established
                self.summary.session_closed(session, ev.name, ev.cell)
            if session is not None and self.stash:  # its requests can no longer be answered
                conn = session.conn
                self.stash = {k: v for k, v in self.stash.items() if v[2].rec.conn != conn}

    def unreadable(self, row: int, exc: Exception) -> None:
        """The row whose analysis raised: shown as broken, with the reason, in its details and counted
        in the summary (the analysis goes on with the next row)."""
        self.analysis_errors += 1
        why = f"the analysis could not read this record ({type(exc).__name__}: {str(exc)[:300]})"
        fields = empty_row()
        fields[0] = RTYPE_CODE["broken"]
        fields[11] = self.store.write_details({"broken": why})
        self.store.put(row, fields)

    def message(self, row: int, a: Analysed, fields: list[Any], timing: dict[str, Any] | None = None) -> None:
        self.summary.add(a)
        kind = a.kind
        row_of = self.seqmap.row
        findings = a.findings
        nfind = len(findings)
        worst = max([f.severity for f in findings]) if nfind else 0
        fields[1] = KIND_OF[kind]
        fields[3] = ERA_OF[a.era]
        pending = False
        if kind is Kind.BATCH:
            units = a.members or ()
            for mem in units:
                if mem.findings:
                    nfind += len(mem.findings)
                    worst = max(worst, *(f.severity for f in mem.findings))
            one = units[0] if units else a
        else:
            units = (a,)
            one = a
        fields[5] |= PAIR_CODE.get(one.pair_status or "", 0)
        fields[6] = min(nfind, 65535)
        fields[4] = int(worst)
        fields[7] = self.method_index(one.method or one.answers_method)
        for u in units:
            ukind = u.kind
            if ukind is Kind.RESULT or ukind is Kind.ERROR:
                if u.partner_seq is not None:
                    prow = row_of(u.partner_seq)
                    if prow is not None:
                        fields[8] = prow
                if u.latency_ns is not None:
                    fields[9] = _lat_us(u.latency_ns)
                req = u.request
                if req is not None and u.pair_status in _ANSWERED:
                    self.answered(req, row, u)
            elif ukind is Kind.REQUEST:
                pending = pending or self.remember(u, row, a)  # (a batch: its first pending request)
            elif u.partner_seq is not None and fields[8] < 0:
                prow = row_of(u.partner_seq)
                if prow is not None:
                    fields[8] = prow
            if u.op_seq is not None:
                oprow = row_of(u.op_seq)
                if oprow is not None:
                    fields[10] = oprow
        if timing is not None:
            self.timings[row] = timing
        if pending:
            # most requests are answered within the same flush window: write their details once,
            # when answered (or at the flush), not twice
            self.deferred[row] = a
        else:
            fields[11] = self.store.write_details(compact(a, row_of, timing))
        if nfind:
            self.new_frows.append(row)
        self.store.put(row, fields)

    def remember(self, u: Analysed, row: int, top: Analysed) -> bool:
        """Stash a pending request so its row can learn its partner when the answer comes."""
        if u.idkey is None:
            return False
        s = self.analyser.sessions.get(u.rec.conn)
        if s is None:
            return False
        req = s.pending.get((u.rec.dir, u.idkey))
        if req is None or req.msg is not u:
            return False
        self.stash[id(req)] = (req, row, top)
        return True

    def answered(self, req: Any, row: int, resp: Analysed) -> None:
        hit = self.stash.pop(id(req), None)
        if hit is None or hit[0] is not req:
            return
        _, req_row, top = hit
        store = self.store
        fields = store.get(req_row)
        fields[8] = row
        if resp.latency_ns is not None:
            fields[9] = _lat_us(resp.latency_ns)
        if req.op_seq is not None and fields[10] < 0:
            oprow = self.seqmap.row(req.op_seq)
            if oprow is not None:
                fields[10] = oprow
        self.deferred.pop(req_row, None)
        fields[11] = store.write_details(self._compact(req_row, top))
        store.put(req_row, fields)

    def _compact(self, row: int, a: Analysed) -> Any:
        return compact(a, self.seqmap.row, self.timings.get(row) if self.timings else None)

    def write_deferred(self) -> None:
        store = self.store
        for row, top in self.deferred.items():
            fields = store.get(row)
            fields[11] = store.write_details(self._compact(row, top))
            store.put(row, fields)
        self.deferred.clear()

    def attach_end_finding(self, f: Finding) -> None:
        self.summary.add_finding(f)
        row = self.seqmap.row(f.seq) if f.seq else None
        if row is None:
            self.capture_findings.append(finding_list(f, self.seqmap.row))
            return
        if row in self.deferred:
            self.write_deferred()
        store = self.store
        fields = store.get(row)
        d = expand(store.read_details(fields[11])) or {}
        d.setdefault("f", []).append(finding_list(f, self.seqmap.row))
        fields[6] = min(fields[6] + 1, 65535)
        fields[4] = max(fields[4], int(f.severity))
        fields[11] = store.write_details(d)
        store.put(row, fields)
        self.new_frows.append(row)

    def method_index(self, label: str | None) -> int:
        if not label:
            return -1
        i = self.methods.get(label)
        if i is None:
            if len(self.methods) >= MAX_METHODS:
                return -2
            i = self.methods[label] = len(self.methods)
            self.new_methods[label] = i
        return i

    # -- progress ----------------------------------------------------------------------------

    def flush(self, *, eof: bool = False, done: bool = False, summary: bool = False) -> None:
        if self.deferred:
            self.write_deferred()
        if self.timings:  # keep the SSE timing only of rows whose details may be written again
            waiting = {v[1] for v in self.stash.values()}
            self.timings = {r: t for r, t in self.timings.items() if r in waiting}
        store = self.store
        changed = bool(store.buf or self.new_frows or self.new_methods or store.patched)
        if eof and not changed and not done and self._eof_reported:
            return
        self._eof_reported = eof
        store.patched = False
        store.flush()
        now = time.monotonic()
        self._last_flush = now
        msg: dict[str, Any] = {"rows": store.flushed, "eof": eof, "done": done}
        if self.new_methods:
            msg["m"] = self.new_methods
            self.new_methods = {}
        if self.new_frows:
            msg["fr"] = self.new_frows
            self.new_frows = []
        stale = self._summary_rows != self.row
        if summary or (stale and (eof or now - self._last_summary >= self._summary_every)):
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
    args = p.parse_args(argv)
    faulthandler.enable()  # a fatal signal (native code) still says why on stderr, which the viewer shows
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
