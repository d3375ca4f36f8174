"""Annotate a capture row by row: the analyser's verdicts as fixed-width per-row summaries.

The viewer cannot analyse a 2,000,000-message capture before showing it, and must not keep two
million `Analysed` objects in memory. So the analysis runs once, sequentially (pairing and era
need every message in order), in a separate process (the machine's other core; the UI keeps the
GIL to itself), and writes into a work directory:

- `rows.bin`: 32 bytes per row (tracer.view.rowformat; row = line of the capture, as tracer.index counts them): record
  type, kind, direction, era, worst severity, pair status, finding count, method (an index into a
  table sent on stdout), partner row, latency, MRTR first-round row, and the offset of the row's
  details. A request learns its partner later: its row is patched in place when the answer comes.
- `details.jsonl`: one JSON object per analysed message: era and why, pairing and why, findings
  with their messages. Appended; a patched row points at its newer line.

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
from typing import Any, BinaryIO

import orjson

from tracer.analyser import Analyser, RuleSet
from tracer.capture import record_from_dict
from tracer.index import IndexReset
from tracer.inputs.lazy import open_rows
from tracer.model import Analysed, Finding, Kind, Record, RecordType
from tracer.pairing import PairStatus
from tracer.safejson import dumps as safe_dumps
from tracer.safejson import loads as safe_loads
from tracer.session import BoundedMap
from tracer.summary import SummaryBuilder
from tracer.view.rowformat import (
    DIR_OF,
    ERA_OF,
    FLAG_DIR_INFERRED,
    KIND_OF,
    PAIR_CODE,
    ROW,
    ROW_SIZE,
    RTYPE_CODE,
    RTYPE_OF,
    SeqMap,
    empty_row,
    finding_list,
    read_line_at,
)

MAX_METHODS = 50_000  # method labels beyond this (junk from invalid traffic) are not interned
LAT_MAX_US = 2**31 - 1


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
        self.rows_fd = os.open(os.path.join(workdir, "rows.bin"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        fd = os.open(os.path.join(workdir, "details.jsonl"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self.details: BinaryIO = os.fdopen(fd, "w+b")
        self.det_pos = 0
        self.seqmap = SeqMap()
        self.row = 0  # next row to analyse
        self.flushed = 0  # rows written to rows.bin
        self.buf = bytearray()
        self.methods: dict[str, int] = {}
        self.new_methods: dict[str, int] = {}
        self.new_frows: list[int] = []
        self.stash: dict[int, tuple[Any, int, Analysed]] = {}  # id(PendingRequest) -> (req, row, top)
        self.deferred: dict[int, Analysed] = {}  # rows whose details wait for their answer
        self.streams = BoundedMap(10_000)  # SSE stream -> [opened t_ns, last event t_ns, events]
        self.timings: dict[int, dict[str, Any]] = {}  # row -> SSE timing, until its details are written
        self.capture_findings: list[list[Any]] = []
        self.stop = threading.Event()
        self._last_flush = time.monotonic()
        self._last_summary = 0.0
        self._summary_every = 0.5
        self._summary_rows = -1
        self._eof_reported = False
        self._patched = False
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
        for row, line in self.index.lines(self.row, upto):
            self.row = row + 1
            try:
                self.analyse_row(row, line)
            except Exception as exc:  # a record this version cannot analyse costs its row, not the rest
                self.unreadable(row, exc)
            if self.row - self.flushed >= FLUSH_ROWS:
                now = time.monotonic()
                if now - self._last_flush >= FLUSH_SECONDS or self.row - self.flushed >= 16 * FLUSH_ROWS:
                    self.flush()
            if self.stop.is_set():
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
        if not line.strip():
            fields[0] = RTYPE_CODE["blank"]
            self.put(row, fields)
            return
        try:
            obj = orjson.loads(line)
            if type(obj) is not dict:
                raise ValueError("record is not a JSON object")
            rec = record_from_dict(obj, line=row + 1, source=self.capture)
        except (orjson.JSONDecodeError, ValueError) as exc:
            torn = row >= len(self.index.ends)  # the unterminated last line of a final index
            fields[0] = RTYPE_CODE["broken"]
            why = (
                "torn last line (the writer was stopped mid-record)"
                if torn
                else f"broken capture record: {exc}"
            )
            fields[11] = self.write_details({"broken": why})
            self.put(row, fields)
            return
        self.summary.add_record(rec)
        fields[0] = RTYPE_OF[rec.type]
        if rec.dir is not None:
            fields[2] = DIR_OF[rec.dir]
        if rec.dir_inferred:
            fields[5] |= FLAG_DIR_INFERRED
        timing = self.sse_timing(rec)
        if rec.type is RecordType.MESSAGE:
            self.seqmap.add(rec.seq, row)
            a = self.analyser.feed_legacy(rec)
            self.message(row, a, fields, timing)
            return
        events = self.analyser.feed(rec)
        self.put(row, fields)
        # Findings that belong to no message: end-of-session rules on a close event (or a new
        # recording's header), and HTTP rules on `http` records and SSE stream events.
        for ev in events:
            for f in ev.findings:
                self.attach_end_finding(f)
            session = getattr(ev, "session", None)
            if session is not None:  # (a SessionClosed) the summary reads what it established
                self.summary.session_closed(session, ev.name, ev.cell)
        if rec.type is RecordType.EVENT and self.stash and rec.conn not in self.analyser.sessions:
            self.stash = {k: v for k, v in self.stash.items() if v[2].rec.conn != rec.conn}

    def unreadable(self, row: int, exc: Exception) -> None:
        """The row whose analysis raised: shown as broken, with the reason, in its details and counted
        in the summary (the analysis goes on with the next row)."""
        self.analysis_errors += 1
        why = f"the analysis could not read this record ({type(exc).__name__}: {str(exc)[:300]})"
        fields = empty_row()
        fields[0] = RTYPE_CODE["broken"]
        fields[11] = self.write_details({"broken": why})
        self.put(row, fields)

    def sse_timing(self, rec: Record) -> dict[str, Any] | None:
        """For a record of an SSE stream: its place in the stream and the gaps (SSE timing)."""
        stream = None
        if rec.sse:
            stream = rec.sse.get("stream")
        elif rec.type is RecordType.EVENT and rec.data and rec.data.get("event") == "stream-open":
            stream = rec.data.get("stream")
        if stream is None:
            return None
        key = str(stream)
        st = self.streams.get(key)
        if st is None:
            st = [rec.t_ns, rec.t_ns, 0]  # opened, last event, events with data so far
            self.streams.put(key, st)
            if not rec.sse:
                return None
        if rec.type is not RecordType.MESSAGE:
            return None
        st[2] += 1
        timing = {"stream": key, "n": st[2], "since_open": rec.t_ns - st[0], "since_prev": rec.t_ns - st[1]}
        st[1] = rec.t_ns
        return timing

    def message(self, row: int, a: Analysed, fields: list[Any], timing: dict[str, Any] | None = None) -> None:
        self.summary.add(a)
        kind = a.kind
        batch = kind is Kind.BATCH
        units = (a.members or ()) if batch else (a,)
        one = units[0] if units else a
        fields[1] = KIND_OF[kind]
        fields[3] = ERA_OF[a.era]
        fields[5] |= PAIR_CODE.get(one.pair_status or "", 0)
        nfind = len(a.findings)
        worst = max((f.severity for f in a.findings), default=0)
        if batch:
            for mem in units:
                if mem.findings:
                    nfind += len(mem.findings)
                    worst = max(worst, *(f.severity for f in mem.findings))
        fields[6] = min(nfind, 65535)
        fields[4] = int(worst)
        fields[7] = self.method_index(one.method or one.answers_method)
        row_of = self.seqmap.row
        pending = False
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
                if req is not None and (
                    u.pair_status == PairStatus.PAIRED or u.pair_status == PairStatus.AFTER_CANCEL
                ):
                    self.answered(req, row, u)
            elif ukind is Kind.REQUEST:
                pending = pending or self.remember(u, row, a)
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
            fields[11] = self.write_details(self.details_for(row, a))
        if nfind:
            self.new_frows.append(row)
        self.put(row, fields)

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
        fields = self.get(req_row)
        fields[8] = row
        if resp.latency_ns is not None:
            fields[9] = _lat_us(resp.latency_ns)
        if req.op_seq is not None and fields[10] < 0:
            oprow = self.seqmap.row(req.op_seq)
            if oprow is not None:
                fields[10] = oprow
        self.deferred.pop(req_row, None)
        fields[11] = self.write_details(self.details_for(req_row, top))
        self.put(req_row, fields)

    def write_deferred(self) -> None:
        for row, top in self.deferred.items():
            fields = self.get(row)
            fields[11] = self.write_details(self.details_for(row, top))
            self.put(row, fields)
        self.deferred.clear()

    def attach_end_finding(self, f: Finding) -> None:
        self.summary.add_finding(f)
        row = self.seqmap.row(f.seq) if f.seq else None
        if row is None:
            self.capture_findings.append(finding_list(f, self.seqmap.row))
            return
        if row in self.deferred:
            self.write_deferred()
        fields = self.get(row)
        d = self.read_details(row) or {}
        d.setdefault("f", []).append(finding_list(f, self.seqmap.row))
        fields[6] = min(fields[6] + 1, 65535)
        fields[4] = max(fields[4], int(f.severity))
        fields[11] = self.write_details(d)
        self.put(row, fields)
        self.new_frows.append(row)

    # -- details -----------------------------------------------------------------------------

    def detail_of(self, a: Analysed, *, member: bool = False) -> dict[str, Any]:
        row_of = self.seqmap.row
        d: dict[str, Any] = {"kind": a.kind, "era": a.era, "why": a.era_reason, "version": a.version}
        if a.method is not None:
            d["method"] = a.method
        if a.answers_method is not None:
            d["answers"] = a.answers_method
        if a.id is not None or a.idkey is not None:
            d["id"] = a.id
        if a.reason:
            d["reason"] = a.reason
            d["problem"] = a.problem
        if a.pair_status:
            d["ps"] = a.pair_status
        if a.pair_reason:
            d["pr"] = a.pair_reason
        if a.partner_seq is not None:
            d["partner"] = a.partner_seq
            d["prow"] = row_of(a.partner_seq)
        if a.latency_ns is not None:
            d["lat"] = a.latency_ns
        if a.op_seq is not None:
            d["op"] = a.op_seq
            d["oprow"] = row_of(a.op_seq)
        if a.findings:
            d["f"] = [finding_list(f, row_of) for f in a.findings]
        if a.members and not member:
            d["members"] = [self.detail_of(m, member=True) for m in a.members]
        return d

    def details_for(self, row: int, a: Analysed) -> dict[str, Any]:
        d = self.detail_of(a)
        timing = self.timings.get(row) if self.timings else None
        if timing is not None:
            d["sse"] = timing
        return d

    def write_details(self, d: dict[str, Any]) -> int:
        data = safe_dumps(d) + b"\n"  # ids beyond 64 bits, lone surrogates in messages
        off = self.det_pos
        self.details.write(data)
        self.det_pos += len(data)
        return off

    def read_details(self, row: int) -> dict[str, Any] | None:
        off = self.get(row)[11]
        if off < 0:
            return None
        self.details.flush()
        line = read_line_at(self.details.fileno(), off, 4096)
        return safe_loads(line) if line else None

    # -- rows.bin ----------------------------------------------------------------------------

    def put(self, row: int, fields: list[Any]) -> None:
        data = ROW.pack(*fields)
        if row >= self.flushed:
            at = (row - self.flushed) * ROW_SIZE
            if at == len(self.buf):
                self.buf += data
            else:
                self.buf[at : at + ROW_SIZE] = data
        else:
            os.pwrite(self.rows_fd, data, row * ROW_SIZE)
            self._patched = True

    def get(self, row: int) -> list[Any]:
        if row >= self.flushed:
            at = (row - self.flushed) * ROW_SIZE
            return list(ROW.unpack_from(self.buf, at))
        return list(ROW.unpack(os.pread(self.rows_fd, ROW_SIZE, row * ROW_SIZE)))

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

    def flush(self, *, eof: bool = False, done: bool = False, summary: bool = False) -> None:
        if self.deferred:
            self.write_deferred()
        if self.timings:  # keep the SSE timing only of rows whose details may be written again
            waiting = {v[1] for v in self.stash.values()}
            self.timings = {r: t for r, t in self.timings.items() if r in waiting}
        changed = bool(self.buf or self.new_frows or self.new_methods or self._patched)
        if eof and not changed and not done and self._eof_reported:
            return
        self._eof_reported = eof
        self._patched = False
        self.details.flush()
        if self.buf:
            os.pwrite(self.rows_fd, bytes(self.buf), self.flushed * ROW_SIZE)
            self.flushed += len(self.buf) // ROW_SIZE
            self.buf.clear()
        now = time.monotonic()
        self._last_flush = now
        msg: dict[str, Any] = {"rows": self.flushed, "eof": eof, "done": done}
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
        snap["analysed_rows"] = self.flushed
        snap["unreadable_rows"] = self.analysis_errors
        return snap

    def close(self) -> None:
        try:
            self.details.close()
        finally:
            os.close(self.rows_fd)
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
            while sys.stdin.buffer.read(4096):
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
