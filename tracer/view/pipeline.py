"""The viewer's analysis on two cores: this process runs lint's analyser over the capture and hands
each row's results to the row writer (tracer.view.replay), which builds the rows, notes, details
and summary in a process of its own, so the last row's findings are known after the longer of the
two, not their sum (tests/bench/bench_view_analysis.py measures it).

The writer runs the one-process code (tracer.view.annotate, tracer.view.hotrows) unchanged, with
the results read here standing in for the analyser's. What it can read from the capture itself it
reads there (the record, its bytes, and a message's kind, method, id and _meta, classified from its
bytes as the analyser classifies them); what needs the analyser's state crosses: a message's era
and its reason, version, pairing (status, partner, latency, first round, the request it answers),
and for the rare rows with findings, batches, invalid messages or unusual pairings everything the
writer reads of their `Analysed` (`encode`). Everything it decides from the analyser's state or
from the clock is decided here, in the order it met it: which rows are fed (the same steps before
the analyser, so a row unreadable there is never fed here either), where a block of rows ends,
when a flush comes and whether it carries the summary (with the open sessions' facts as the
analyser holds them at that row), the end-of-session findings, and a followed file's reset. So
rows.bin, details.jsonl and every progress report are what the one-process analysis writes.

Pairing changes a request's `Analysed` after its row (its partner, latency and first round when
its answer comes, and a note when an HTTP exchange answers it) and the writer reads it again; the
answer's row says so: the request's line when the change is what the writer derives from the
answer itself (nearly always), else the request's new state. tracer.view.stashmirror knows which
requests the writer's stash holds. Nothing is kept per row beyond what lint keeps (objects kept per
row until a flush are what the collector walks at every young collection: they cost more than the
rest of the handing over), so a plain message's era reason crosses only when it differs from the
previous one's.

Frames on the pipe: a tag (b"M" marshal, b"P" pickle, for values marshal cannot write), a 4-byte
length, the payload: ("rows", first, n, results), ("flush", eof, done, summary, facts, updates),
("finish", events, updates), ("error", text). The results are one flat list, per fed row its line,
a tag and the tag's values: 0, a plain message's ten (era, era reason (1: the previous plain
message's), version, pairing status, answered method, partner, latency, first round, the request
it answers (0: the one the writer derives), the answered request's change); 1, a record's events and updates; 2, a raised
exception's name and text, for a row whose analysis raised; 3, a message's `encode` tuple.
Updates are requests' states pairing changed after they were sent (update_of).
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
from tracer.model import KIND_BATCH as _BATCH
from tracer.model import REC_HTTP as _HTTP
from tracer.model import REC_MESSAGE as _MESSAGE
from tracer.model import Analysed as _Analysed
from tracer.model import Direction, Kind
from tracer.pairing import PairStatus, may_answer_at_http_level
from tracer.protocol import META_CLIENT_CAPS, META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO
from tracer.summary import session_facts
from tracer.view import annotate as _ann
from tracer.view.rowfill import MAX_STASH
from tracer.view.stashmirror import StashMirror

HEAD = struct.Struct("<cI")
META_KEYS = (META_PROTOCOL_VERSION, META_CLIENT_CAPS, META_CLIENT_INFO)  # what the summary reads of _meta

_REQUEST, _RESULT, _ERROR = Kind.REQUEST, Kind.RESULT, Kind.ERROR
_ANSWERED = (PairStatus.PAIRED, PairStatus.AFTER_CANCEL)
_OTHER = {Direction.C2S: Direction.S2C, Direction.S2C: Direction.C2S}


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


class Analysis(StashMirror):
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
        StashMirror.__init__(self)
        self.last_why: Any = None  # the era reason of the last plain message sent (see analyse)

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
        self.fresh_http = []
        self.shadowed = {}
        self.fresh_members = []
        opened = self.open
        while len(opened) > MAX_STASH:  # (as the writer's stash: oldest first)
            del opened[next(iter(opened))]
        if self.flow_open:
            self.prune_flows()
        self.send(("flush", eof, done, take, facts, updates))

    # -- results -----------------------------------------------------------------------------

    @staticmethod
    def errors_without_id(a: Any) -> bool:
        """A message that may answer at the HTTP level (tracer.update.pairing.match_response): an error
        without id, or a batch with one (the writer's test: RowFiller.message and batch)."""
        if a.kind is _ERROR:
            return a.idkey is None
        return a.kind is _BATCH and any(u.kind is _ERROR and u.idkey is None for u in a.members or ())

    def http_error(self, rec: Any) -> list[tuple]:
        return self.http_answered(rec) if may_answer_at_http_level(rec) else []

    def encode(self, a: Any, pos: int = -1) -> tuple:
        """What the row writer reads of an `Analysed` it cannot classify itself (tracer.view.rowfill,
        notes, details, summary): a row with findings, a batch, an invalid message, an unusual
        pairing. POS: its place in its batch (-1: none)."""
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
                upd = self.answer(a, req, False)
        elif kind is _REQUEST:
            meta = a.meta
            if meta is not None and len(meta) > 3:
                meta = {k: meta[k] for k in META_KEYS if k in meta}
            if a.idkey is not None:
                rec = a.rec
                line = rec.line
                key = (rec.seq, rec.conn, a.idkey)
                same = self.open.get(key)
                if same is not None and same.__class__ is _Analysed:
                    self.shadowed[same.rec.line] = same  # (its row still waits: its answer may come)
                    same = None
                if pos < 0:
                    held = [a, line, a.partner_seq, a.latency_ns, a.op_seq, a.pair_note]
                    self.fresh.append(held)
                    self.open[key] = held
                else:
                    held = [a, line, pos, (a.partner_seq, a.latency_ns, a.op_seq, a.pair_note)]
                    batch = self.batch_open
                    if not batch or batch[0][1] != line:  # (its first request: the batch's list)
                        batch = self.batch_open = []
                    batch.append(held)
                    self.open[key] = batch
                    self.fresh_members.append(held)
                if rec.http is not None:
                    self.carried(rec, held)
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

    # -- rows (what tracer.view.hotrows.fill and RowFiller.analyse_row feed) ---------------------

    def analyse(self, first: int, lines: list[bytes]) -> list[Any]:
        """The results of LINES, the rows from FIRST on, flat (see the module's docstring)."""
        loads = orjson.loads
        json_error = orjson.JSONDecodeError
        capture = self.capture
        feed = self.analyser.feed
        shadowed = self.shadowed
        opened = self.open
        other = _OTHER
        probe = array("q", [0])  # (SeqMap.add's append: a seq it refuses is a row never fed)
        out: list = []
        last_why = self.last_why
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
                else:  # (a plain message record: its seq is within 0 .. 2**63-1, as SeqMap.add takes it)
                    message = True
                try:
                    a = feed(rec)
                except Exception as exc:
                    out += (row + 1, 2, type(exc).__name__, str(exc)[:300])
                    continue
                if not message:
                    http_answer = rec.http is not None and may_answer_at_http_level(rec)
                    if http_answer:  # (tracer.update.http_answer)
                        self.dirty = True
                    updates = self.changed()
                    if http_answer and rec.type is _HTTP and self.flow_open:
                        updates += self.http_answered(rec)  # (RowFiller.analyse_row settles them again)
                    out += (row + 1, 1, encode_events(a), updates)
                    if self.open:
                        for ev in a:  # (RowFiller.analyse_row: a closed session's requests are forgotten)
                            session = getattr(ev, "session", None)
                            if session is not None:
                                conn = session.conn
                                opened = self.open
                                for k in [k for k in opened if k[1] == conn]:
                                    del opened[k]
                    continue
                kind = a.kind
                if (
                    rec.http is not None
                    and (kind is _BATCH or (kind is _ERROR and a.idkey is None))
                    and may_answer_at_http_level(rec)
                ):
                    self.dirty = True  # (tracer.update.pairing.answered_at_http_level)
                if kind is _BATCH or a.findings or a.reason is not None or a.pair_note is not None:
                    t = self.encode(a)
                    if rec.http is not None and self.flow_open and self.errors_without_id(a):
                        more = self.http_error(rec)  # (RowFiller.message and batch settle them again)
                        if more:
                            t = (*t[:-1], (t[-1] or []) + more)
                    out += (row + 1, 3, t)
                    continue
                # a plain message: what the writer cannot read from its own bytes (tracer.view.replay)
                req = a.request
                upd = reqv = None
                if kind is _REQUEST:
                    if a.idkey is not None:
                        key = (rec.seq, rec.conn, a.idkey)
                        old = opened.get(key)
                        if old is not None and old.__class__ is _Analysed:
                            shadowed[old.rec.line] = old  # (its row still waits: its answer may come)
                        opened[key] = a
                        if rec.http is not None:
                            self.fresh_http.append(a)
                            self.carried(rec, a)
                    if req is not None:
                        reqv = (req.seq, req.idkey, req.method, req.dir._value_, req.op_seq)
                elif req is not None:
                    partner = a.partner_seq
                    answers = a.answers_method
                    rk = req.idkey
                    idkey = a.idkey
                    if (
                        req.seq is partner
                        and req.method is answers
                        and req.op_seq is a.op_seq
                        and req.dir is other.get(rec.dir)
                        and idkey is not None
                        and rk == idkey
                        and type(rk[1]) is type(idkey[1])
                    ):
                        reqv = 0  # (the request the writer derives: the answer's partner, id...)
                    else:
                        reqv = (req.seq, rk, req.method, req.dir._value_, req.op_seq)
                    if (kind is _RESULT or kind is _ERROR) and a.pair_status in _ANSWERED:
                        # (answer(), inlined for the answer nearly every one is: the plain request the
                        # writer's stash holds, changed as the answer's own values give)
                        hit = opened.pop((req.seq, rec.conn, req.idkey), None)
                        if (
                            hit.__class__ is _Analysed
                            and hit.rec.line == req.line
                            and hit.partner_seq is rec.seq
                            and hit.latency_ns is a.latency_ns
                            and hit.op_seq is a.op_seq
                            and hit.pair_note is None
                        ):
                            upd = req.line
                        else:
                            upd = self.answered(a, req, hit, True)
                why = a._era_why
                if why == last_why:
                    # (nearly every row of a session gives the same reason, each its own tuple: kept
                    # in the frame, they cost the collector more than comparing them here)
                    why = 1
                else:
                    last_why = why
                out += (
                    row + 1,
                    0,
                    a.era._value_,
                    why,
                    a.version,
                    a.pair_status,
                    a.answers_method,
                    a.partner_seq,
                    a.latency_ns,
                    a.op_seq,
                    reqv,
                    upd,
                )
            except Exception:  # (a row the writer meets as unreadable before its analysis: not fed)
                continue
        self.last_why = last_why
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
