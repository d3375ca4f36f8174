"""The viewer's analysis on two cores: this process runs lint's analyser over the capture and hands
each row's results to the row writer (tracer.view.replay), which builds the rows, notes, details
and summary in a process of its own, so the last row's findings are known after the longer of the
two, not their sum (tests/bench/bench_view_analysis.py measures it).

The writer runs the one-process code (tracer.view.annotate, tracer.view.hotrows) unchanged, with
the results read here standing in for the analyser's: what it reads of each `Analysed` crosses
(`encode`), the rest (the record, its bytes) it reads from the capture itself. Everything it
decides from the analyser's state or from the clock is decided here, in the order it met it: which
rows are fed (the same steps before the analyser, so a row unreadable there is never fed here
either), where a block of rows ends, when a flush comes and whether it carries the summary (with
the open sessions' facts as the analyser holds them at that row), the end-of-session findings,
and a followed file's reset. So rows.bin, details.jsonl and every progress report are what the
one-process analysis writes.

Frames on the pipe: a tag (b"M" marshal, b"P" pickle, for values marshal cannot write), a 4-byte
length, the payload: ("rows", first, n, results), ("flush", eof, done, summary, facts, updates),
("finish", events, updates), ("error", text). A result is (line, 0, message), (line, 1, events,
updates) or (line, 2, exception name, text) for a row whose analysis raised; updates are the
requests' messages pairing changed after they were sent (Analysis.update_of).
"""

from __future__ import annotations

import marshal
import os
import pickle
import struct
import threading
import time
from array import array
from typing import Any

import orjson

from tracer.analyser import Analyser, RuleSet
from tracer.capture import _fast_record, record_from_dict
from tracer.index import IndexReset
from tracer.inputs.lazy import open_rows
from tracer.model import Kind, RecordType
from tracer.pairing import PairStatus
from tracer.protocol import META_CLIENT_CAPS, META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO
from tracer.summary import session_facts
from tracer.view import annotate as _ann
from tracer.view.rowfill import MAX_STASH

HEAD = struct.Struct("<cI")
META_KEYS = (META_PROTOCOL_VERSION, META_CLIENT_CAPS, META_CLIENT_INFO)  # what the summary reads of _meta
_MESSAGE = RecordType.MESSAGE
_REQUEST, _RESULT, _ERROR = Kind.REQUEST, Kind.RESULT, Kind.ERROR
_ANSWERED = (PairStatus.PAIRED, PairStatus.AFTER_CANCEL)
_UNPARSED = object()


def encode_events(events: Any) -> bytes:
    """Events of a record that is no message (or the end of input): findings, closed sessions."""
    out = []
    for ev in events:
        session = getattr(ev, "session", None)
        closed = None
        if session is not None:
            name, cell = ev.name, ev.cell
            closed = (session.conn, name, cell, session_facts(session, cell) if name is not None else None)
        out.append((ev.findings, closed))
    return pickle.dumps(out, pickle.HIGHEST_PROTOCOL)


def frame(op: tuple) -> bytes:
    try:
        tag, data = b"M", marshal.dumps(op)
    except ValueError:  # (a value marshal cannot write: an era reason's values, say)
        tag, data = b"P", pickle.dumps(op, pickle.HIGHEST_PROTOCOL)
    return HEAD.pack(tag, len(data)) + data


class Analysis:
    """The analyser's side of the pipeline: tracer.view.annotate.Annotator's loop and decisions,
    without the rows, writing what the row writer needs to FD."""

    def __init__(self, capture: str, fd: int, *, follow: bool = False, rules: RuleSet | None = None):
        self.capture = capture
        self.fd = fd
        self.follow = follow
        self.index = open_rows(capture, final=not follow)
        self.analyser = Analyser(rules)
        self.stop = threading.Event()
        self.row = 0
        self.flushed = 0  # rows the writer has written (it flushes when told)
        self._last_flush = time.monotonic()
        self._last_summary = 0.0
        self._summary_every = 0.5
        self._summary_rows = -1
        self._eof_reported = False
        # requests fed since the last flush (the writer's waiting rows): [message, line, place in
        # its batch, what was last sent of it]
        self.fresh: list[list] = []
        # (seq, connection) -> (message, line, place in its batch) of a request awaiting its answer,
        # as the writer's stash keeps them (RowFiller.remember): pairing changes its message
        self.open: dict[tuple, list] = {}

    def send(self, op: tuple) -> None:
        data = frame(op)
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    # -- the loop (Annotator.run, process, finish) ----------------------------------------------

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                try:
                    self.index.update()
                except IndexReset as exc:
                    self.flush(eof=True)
                    self.send(("error", str(exc)))
                    return
                n = len(self.index)
                if self.row < n:
                    self.process(n)
                    continue
                if not self.follow and self.index.complete:
                    ended = self.analyser.finish()
                    self.send(("finish", encode_events(ended), self.changed()))
                    self.flush(eof=True, done=True, summary=True)
                    return
                self.flush(eof=True)
                self.stop.wait(_ann.POLL_SECONDS)
        finally:
            self.index.close()

    def process(self, upto: int) -> None:
        while self.row < upto:
            first = self.row
            lines = _ann.next_block(self.index, first, upto, self.flushed)
            if not lines:
                return
            self.send(("rows", first, len(lines), self.analyse(first, lines)))
            self.row = first + len(lines)
            unwritten = self.row - self.flushed
            if unwritten >= _ann.FLUSH_ROWS:
                if _ann.flush_due(unwritten, self._last_flush):
                    self.flush()
                if self.stop.is_set():
                    return

    def flush(self, *, eof: bool = False, done: bool = False, summary: bool = False) -> None:
        # (Annotator.flush: the writer has changes exactly when rows came since its last flush)
        if eof and self.row == self.flushed and not done and self._eof_reported:
            return
        self._eof_reported = eof
        self.flushed = self.row
        now = self._last_flush = time.monotonic()
        stale = self._summary_rows != self.row
        take = summary or (stale and (eof or now - self._last_summary >= self._summary_every))
        facts = None
        if take:
            # the open sessions as the analyser holds them at this row (SummaryBuilder.snapshot)
            facts = pickle.dumps(
                {conn: session_facts(s) for conn, s in self.analyser.sessions.items()},
                pickle.HIGHEST_PROTOCOL,
            )
            self._summary_rows = self.row
            self._last_summary = time.monotonic()
            self._summary_every = min(10.0, max(0.5, (self._last_summary - now) * 20))
        # the requests the writer settles at this flush, as pairing has left them by now (an HTTP
        # exchange may have answered one without a response of its own)
        updates = self.changed()
        self.fresh = []
        opened = self.open
        while len(opened) > MAX_STASH:  # (as the writer's stash: oldest first)
            del opened[next(iter(opened))]
        self.send(("flush", eof, done, take, facts, updates))

    # -- results -----------------------------------------------------------------------------

    def encode(self, a: Any, pos: int = -1) -> tuple:
        """What the row writer reads of an `Analysed` (tracer.view.rowfill, notes, details, summary);
        POS: its place in its batch (-1: none)."""
        kind = a.kind
        req = a.request
        meta = srv = upd = None
        if kind is _RESULT or kind is _ERROR:
            res = a.result  # (the summary reads a response's _meta serverInfo, a request's _meta)
            if res is not None:
                rm = res.get("_meta")
                if rm is not None and type(rm) is dict:
                    srv = rm.get(META_SERVER_INFO)
            if req is not None and a.pair_status in _ANSWERED:
                # the request, as the writer's stash holds it: its message as pairing has changed it
                # (a batch's requests share its key: each is read again with the batch's row)
                hit = self.open.pop((req.seq, a.rec.conn), None)
                if hit is not None:
                    upd = [self.update_of(held) for held in hit]
        elif kind is _REQUEST:
            meta = a.meta
            if meta is not None and len(meta) > 3:
                meta = {k: meta[k] for k in META_KEYS if k in meta}
            if a.idkey is not None:
                rec = a.rec
                line = rec.line
                held = [a, line, pos, (a.partner_seq, a.latency_ns, a.op_seq, a.pair_note)]
                key = (rec.seq, rec.conn)
                same = self.open.get(key) if pos >= 0 else None
                if same is not None and same[0][1] == line:
                    same.append(held)
                else:
                    self.open[key] = [held]
                self.fresh.append(held)
        findings = a.findings
        members = a.members
        extra = None
        if findings or members is not None or a.reason is not None or a.pair_note is not None:
            # (rare rows: findings, batches, invalid messages, unusual pairings; pickled as they are)
            extra = pickle.dumps(
                (
                    a.reason,
                    a.problem,
                    a.pair_note,
                    findings,
                    None if members is None else [self.encode(m, i) for i, m in enumerate(members)],
                    a.batch_seq,
                ),
                pickle.HIGHEST_PROTOCOL,
            )
        return (
            kind._value_,
            a.era._value_,
            a._era_why,
            a.version,
            a.method,
            a.answers_method,
            a.id,
            a.idkey,
            a.partner_seq,
            a.latency_ns,
            a.pair_status,
            a.op_seq,
            meta,
            srv,
            None if req is None else (req.seq, req.idkey, req.method, req.dir._value_, req.op_seq),
            extra,
            upd,
        )

    @staticmethod
    def update_of(held: list) -> tuple:
        """A request's message as pairing left it: (its row's line, its place in its batch, partner,
        latency, first round, pairing note)."""
        a = held[0]
        state = held[3] = (a.partner_seq, a.latency_ns, a.op_seq, a.pair_note)
        return (held[1], held[2], *state)

    def changed(self) -> list[tuple]:
        """update_of each request fed since the last flush that pairing changed since it was sent
        (an HTTP exchange answers the requests it carried without a response message)."""
        out = []
        for held in self.fresh:
            a = held[0]
            if (a.partner_seq, a.latency_ns, a.op_seq, a.pair_note) != held[3]:
                out.append(self.update_of(held))
        return out

    # -- rows (what tracer.view.hotrows.fill and RowFiller.analyse_row feed) ---------------------

    def analyse(self, first: int, lines: list[bytes]) -> list[tuple]:
        loads = orjson.loads
        json_error = orjson.JSONDecodeError
        capture = self.capture
        feed = self.analyser.feed
        probe = array("q", [0])  # (SeqMap.add's append: a seq it refuses is a row never fed)
        out: list[tuple] = []
        append = out.append
        for row, line in enumerate(lines, first):
            try:
                try:
                    obj = loads(line)
                except json_error:
                    continue  # (a broken line: never fed)
                rec = _fast_record(obj, row + 1, capture) if obj.__class__ is dict else None
                if rec is None:
                    if type(obj) is not dict:
                        continue
                    try:
                        rec = record_from_dict(obj, line=row + 1, source=capture)
                    except ValueError:
                        continue
                    message = rec.type is _MESSAGE
                    if message:
                        probe[0] = rec.seq
                else:
                    probe[0] = rec.seq
                    message = True
                try:
                    a = feed(rec)
                except Exception as exc:
                    append((row + 1, 2, type(exc).__name__, str(exc)[:300]))
                    continue
                if message:
                    append((row + 1, 0, self.encode(a)))
                    continue
                append((row + 1, 1, encode_events(a), self.changed()))
                if self.open:
                    for ev in a:  # (RowFiller.analyse_row: a closed session's requests are forgotten)
                        session = getattr(ev, "session", None)
                        if session is not None:
                            conn = session.conn
                            opened = self.open
                            for k in [k for k, v in opened.items() if v[0][0].rec.conn == conn]:
                                del opened[k]
            except Exception:  # (a row the writer meets as unreadable before its analysis: not fed)
                continue
        return out


def analysis_main(capture: str, fd: int, follow: bool, configure=None) -> int:
    """The analysis process: stops when its stdin closes (the writer stopped or died)."""
    an = Analysis(capture, fd, follow=follow)
    if configure is not None:
        configure(an)

    def watch_stdin() -> None:
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        an.stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    try:
        an.run()
    except BrokenPipeError:  # the writer is gone
        return 0
    except Exception as exc:  # said on the writer's progress channel, as the one process says it
        try:
            an.send(("error", f"analysis stopped: {type(exc).__name__}: {str(exc)[:300]}"))
        except OSError:
            pass
        return 1
    return 0


def start(capture: str, follow: bool, configure=None) -> tuple[int, int, int]:
    """Fork the analysis process: (its pid, the read end of its frames, the write end of its stdin,
    whose closing stops it)."""
    data_r, data_w = os.pipe()
    ctl_r, ctl_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the analysis
        code = 1
        try:
            os.close(data_r)
            os.close(ctl_w)
            os.dup2(ctl_r, 0)
            os.close(ctl_r)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)  # (the viewer's progress channel is the writer's alone)
            os.close(null)
            code = analysis_main(capture, data_w, follow, configure)
        finally:
            os._exit(code)
    os.close(data_w)
    os.close(ctl_r)
    return pid, data_r, ctl_w
