"""What the viewer's analysis writes for each row of a capture (tracer.view.annotate runs it): the
row's summary in rows.bin, and its details stored or left to be derived when shown (its note).

A request's row is written when it comes, and patched when its answer comes (its partner, its
latency, its details); end-of-session findings are added to the rows they are about.
"""

from __future__ import annotations

from typing import Any

import orjson

from tracer.analyser import Analyser, RuleSet
from tracer.capture import record_from_dict
from tracer.inputs.lazy import open_rows
from tracer.lines import LongRow, torn_reason
from tracer.model import REC_MESSAGE as _MESSAGE
from tracer.model import Analysed, Finding, Kind, Record, RecordType
from tracer.pairing import PairStatus
from tracer.summary import SummaryBuilder
from tracer.view.details import SseClock, compact, derive, expand
from tracer.view.flowwait import FlowWaiting
from tracer.view.notes import Notes
from tracer.view.rowformat import (
    DIR_OF,
    ERA_OF,
    F_DET,
    F_LAT_NS,
    F_NOTE,
    F_SEQ,
    FLAG_DIR_INFERRED,
    KIND_OF,
    NO_LAT,
    PAIR_CODE,
    Q_MAX,
    Q_MIN,
    ROW,
    ROW_SIZE,
    RTYPE_CODE,
    RTYPE_OF,
    SeqMap,
    empty_row,
    finding_list,
)
from tracer.view.rowstore import RowStore

MAX_METHODS = 50_000  # method labels beyond this (junk from invalid traffic) are not interned
MAX_STASH = 100_000  # requests awaiting their answer whose rows are kept to be patched
MAX_CONNS = 100_000  # rows whose connection conn_of keeps (read again beyond)
LAT_MAX_US = 2**31 - 1
_ANSWERED = (PairStatus.PAIRED, PairStatus.AFTER_CANCEL)


def _lat_us(latency_ns: int) -> int:
    """A latency as the row table holds it: microseconds, capped; -1 (none) for a negative one (an
    answer timed before its request: clocks of different machines)."""
    us = latency_ns // 1000
    return -1 if us < 0 else min(LAT_MAX_US, us)


class RowFiller:
    """The rows of one capture, filled in as the analyser reads its records in order."""

    def __init__(
        self, capture: str, workdir: str, *, follow: bool = False, rules: RuleSet | None = None, analyser=None
    ):
        self.capture = capture
        self.workdir = workdir
        self.follow = follow
        # a capture's lines, or the rows the viewer reads lazily from another input (the same rows)
        self.index = open_rows(capture, final=not follow)
        # (tracer.view.replay gives the results another process analysed, with the same reads)
        self.analyser = analyser if analyser is not None else Analyser(rules)
        self.summary = SummaryBuilder()
        self.store = RowStore(workdir)
        self.seqmap = SeqMap(self.conn_of)
        self.conns: dict[int, str | None] = {}  # row -> its connection, as conn_of read it
        self.row = 0  # next row to analyse
        self.methods: dict[str, int] = {}
        self.method_list: list[str] = []
        self.notes = Notes()  # era reasons of rows whose details are derived (tracer.view.notes)
        self.new_methods: dict[str, int] = {}
        self.new_frows: list[int] = []
        # (seq, connection, id) of a request awaiting its answer -> (request, row, top) (a batch's share its seq)
        self.stash: dict[tuple, tuple[Analysed, int, Analysed]] = {}
        self.flow_waiting = FlowWaiting()  # the stashed requests of each HTTP exchange (http_answered)
        # rows whose details wait for their answer -> (message, its row's fields); these fields are
        # the row (the buffer may hold a placeholder: tracer.view.hotrows packs such a row once)
        self.deferred: dict[int, tuple[Analysed, list[Any]]] = {}
        self.sse = SseClock()
        self.timings: dict[int, dict[str, Any]] = {}  # row -> SSE timing, until its details are written
        self.capture_findings: list[list[Any]] = []
        self.analysis_errors = 0  # rows whose analysis raised (see unreadable)

    # -- one row -----------------------------------------------------------------------------

    def analyse_row(self, row: int, line: bytes, obj: Any = None) -> None:
        """Row ROW from its LINE (OBJ: the line already parsed, when it was)."""
        try:
            if obj is None:
                obj = orjson.loads(line)
            if type(obj) is not dict:
                raise ValueError("record is not a JSON object")
            rec = record_from_dict(obj, line=row + 1, source=self.capture)
        except (orjson.JSONDecodeError, ValueError) as exc:
            fields = empty_row()
            if not line.strip():
                fields[0] = RTYPE_CODE["blank"]
                self.store.put(row, fields)
                return
            torn = row >= len(self.index.ends)  # the unterminated last line of a final index
            fields[0] = RTYPE_CODE["broken"]
            if type(line) is LongRow:
                why = line.message()
            else:
                why = torn_reason(line) if torn else f"broken capture record: {exc}"
            fields[F_DET] = self.store.write_details({"broken": why})
            self.store.put(row, fields)
            return
        rtype = rec.type
        if rtype is _MESSAGE and not rec.sse:  # nearly every row: a message outside an SSE stream
            seq = rec.seq
            self.seqmap.add(seq, row)
            try:
                a = self.analyser.feed(rec)
            except Exception:  # (the row is unreadable, its record counted all the same)
                self.summary.add_record(rec)
                raise
            self.summary.add_record(rec)
            self.message(row, a, self.message_fields(rec), None)
            return
        self.summary.add_record(rec)
        fields = empty_row()
        fields[0] = RTYPE_OF[rtype]
        if rec.dir is not None:
            fields[2] = DIR_OF[rec.dir]
        if rec.dir_inferred:
            fields[5] |= FLAG_DIR_INFERRED
        timing = self.sse.timing(rec) if rec.sse or rtype is RecordType.EVENT else None
        if rtype is _MESSAGE:
            seq = rec.seq
            self.seqmap.add(seq, row)
            if Q_MIN <= seq < Q_MAX:
                fields[F_SEQ] = seq
            self.message(row, self.analyser.feed(rec), fields, timing)  # (a message record: its Analysed)
            return
        events = self.analyser.feed(rec)
        self.store.put(row, fields)
        if rtype is RecordType.HTTP and self.flow_waiting.answered_by(rec):  # (tracer.update.http_answer)
            self.http_answered(rec)
        # Findings that belong to no message: end-of-session rules on a close event (or a new
        # recording's header), and HTTP rules on `http` records and SSE stream events. One raised
        # on this record itself (its seq and line: an HTTP exchange without a message, a stream's
        # end) is shown on its row, as a message's are on theirs.
        line = row + 1
        for ev in events:
            for f in ev.findings:
                if f.line == line and f.seq == rec.seq and f.seq:
                    self.add_finding(row, f, self.row_of_finding(f))
                else:
                    self.attach_end_finding(f)
            session = getattr(ev, "session", None)
            if session is not None:  # (a SessionClosed) the summary reads what it established
                self.summary.session_closed(session, ev.name, ev.cell)
            if session is not None and self.stash:  # its requests can no longer be answered
                conn = session.conn
                stash = self.stash  # (in place: tracer.view.hotrows holds it)
                for k in [k for k, v in stash.items() if v[2].rec.conn == conn]:
                    del stash[k]

    def message_fields(self, rec: Record) -> list[Any]:
        """The start of a message record's row, before its analysis fills it in (message())."""
        fields = empty_row()
        fields[0] = RTYPE_OF[rec.type]
        if rec.dir is not None:
            fields[2] = DIR_OF[rec.dir]
        if rec.dir_inferred:
            fields[5] |= FLAG_DIR_INFERRED
        if Q_MIN <= rec.seq < Q_MAX:
            fields[F_SEQ] = rec.seq
        return fields

    def unreadable(self, row: int, exc: Exception) -> None:
        """The row whose analysis raised: shown as broken, with the reason, in its details and counted
        in the summary (the analysis goes on with the next row)."""
        self.analysis_errors += 1
        why = f"the analysis could not read this record ({type(exc).__name__}: {str(exc)[:300]})"
        fields = empty_row()
        fields[0] = RTYPE_CODE["broken"]
        fields[F_DET] = self.store.write_details({"broken": why})
        self.store.put(row, fields)

    def message(self, row: int, a: Analysed, fields: list[Any], timing: dict[str, Any] | None = None) -> None:
        # the hot path of the viewer's analysis, beside the analyser's own: flat, no tuple of units
        self.summary.add(a)
        kind = a.kind
        if kind is Kind.BATCH:
            self.batch(row, a, fields, timing)
            return
        findings = a.findings
        if findings:
            fields[6] = min(len(findings), 65535)
            fields[4] = int(max([f.severity for f in findings]))
            self.new_frows.append(row)
        fields[1] = KIND_OF[kind]
        fields[3] = ERA_OF[a.era]
        ps = a.pair_status
        if ps:
            fields[5] |= PAIR_CODE.get(ps, 0)
        label = a.method or a.answers_method
        if label:
            i = self.methods.get(label)
            fields[7] = i if i is not None else self.method_index(label)
        pending = False
        partner = a.partner_seq
        row_of = self.seqmap.of(a.rec.conn)  # (a partner is of the message's own connection)
        if kind is Kind.RESULT or kind is Kind.ERROR:
            req = a.request
            hit = None
            if req is not None and ps in _ANSWERED:
                hit = self.stash.pop((req.seq, a.rec.conn, req.idkey), None)
            if partner is not None:
                # the request's row, as the stash knows it (one recording: seqs rise, so it is the
                # row the seq map would find) or as the seq map finds it
                if hit is not None and partner == req.seq and len(self.seqmap.segments) == 1:
                    fields[8] = hit[1]
                else:
                    prow = row_of(partner)
                    if prow is not None:
                        fields[8] = prow
            lat = a.latency_ns
            if lat is not None:
                fields[9] = _lat_us(lat)
            if hit is not None:
                self.answered(req, hit, row, a)
        elif kind is Kind.REQUEST:
            pending = self.remember(a, row, a)
        elif partner is not None:
            prow = row_of(partner)
            if prow is not None:
                fields[8] = prow
        if a.op_seq is not None:
            oprow = row_of(a.op_seq)
            if oprow is not None:
                fields[10] = oprow
        if timing is not None:
            self.timings[row] = timing
        if pending:
            # most requests are answered within the same flush window: their details (or note) are
            # settled once, when answered (or at the flush), not twice
            self.deferred[row] = (a, fields)
        else:
            self.settle(fields, a, timing)
        store = self.store
        buf = store.buf
        if (row - store.flushed) * ROW_SIZE == len(buf):  # (RowStore.put's common case, inlined)
            buf += ROW.pack(*fields)
        else:
            store.put(row, fields)
        if kind is Kind.ERROR and a.idkey is None and self.flow_waiting.answered_by(a.rec):
            self.http_answered(a.rec)  # (an error without id: tracer.update.pairing.match_response)

    def batch(self, row: int, a: Analysed, fields: list[Any], timing: dict[str, Any] | None) -> None:
        """A batch's row: its members' findings, its first member's pairing."""
        kind = a.kind
        row_of = self.seqmap.of(a.rec.conn)
        findings = a.findings
        nfind = len(findings)
        worst = max([f.severity for f in findings]) if nfind else 0
        fields[1] = KIND_OF[kind]
        fields[3] = ERA_OF[a.era]
        pending = False
        units = a.members or ()  # (message() sends only batches here)
        for mem in units:
            if mem.findings:
                nfind += len(mem.findings)
                worst = max(worst, *(f.severity for f in mem.findings))
        one = units[0] if units else a
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
                    hit = self.stash.pop((req.seq, u.rec.conn, req.idkey), None)
                    if hit is not None:
                        self.answered(req, hit, row, u)
            elif ukind is Kind.REQUEST:
                pending = self.remember(u, row, a) or pending  # (a batch: every request waits)
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
            # most requests are answered within the same flush window: their details (or note) are
            # settled once, when answered (or at the flush), not twice
            self.deferred[row] = (a, fields)
        else:
            self.settle(fields, a, timing)
        if nfind:
            self.new_frows.append(row)
        self.store.put(row, fields)
        if self.flow_waiting.answered_by(a.rec) and any(
            u.kind is Kind.ERROR and u.idkey is None for u in units
        ):
            self.http_answered(a.rec)

    def settle(self, fields: list[Any], a: Analysed, timing: dict[str, Any] | None) -> None:
        """A message row's details: a note when they can be derived when shown, else stored."""
        lat = a.latency_ns
        fields[F_LAT_NS] = NO_LAT if lat is None or not Q_MIN <= lat < Q_MAX else lat
        note = -1
        if timing is None and not a.findings and a.reason is None and a.pair_note is None:
            note = self.notes.of(fields[7], fields[8], fields[10], a)
        if note >= 0:
            fields[F_NOTE] = note
            fields[F_DET] = -1
        else:
            fields[F_NOTE] = -1
            fields[F_DET] = self.store.write_details(compact(a, self.seqmap.of(a.rec.conn), timing))

    def remember(self, u: Analysed, row: int, top: Analysed) -> bool:
        """Stash a request so its row can learn its partner when the answer comes (the answer's
        PendingRequest names its seq). One that is never answered is settled at the flush and
        forgotten when its session closes."""
        if u.idkey is None:
            return False
        key = (u.rec.seq, u.rec.conn, u.idkey)
        self.stash[key] = (u, row, top)
        if u.rec.http is not None:  # (an HTTP exchange may answer it without a response: http_answered)
            self.flow_waiting.add(u.rec, key, row)
        return True

    def answered(self, req: Any, hit: tuple[Analysed, int, Analysed], row: int, resp: Analysed) -> None:
        """The stashed request HIT (its PendingRequest REQ) is answered by ROW: its row learns its
        partner (a batch's row: its first request's, as batch() shows it)."""
        u, req_row, top = hit
        store = self.store
        # a row still deferred is its fields (its place in the buffer is packed from them)
        waiting = self.deferred.pop(req_row, None)
        fields = waiting[1] if waiting is not None else store.get(req_row)
        if top is u or top.members[0] is u:
            fields[8] = row
            if resp.latency_ns is not None:
                fields[9] = _lat_us(resp.latency_ns)
        if req.op_seq is not None and fields[10] < 0:
            oprow = self.seqmap.row(req.op_seq, top.rec.conn)
            if oprow is not None:
                fields[10] = oprow
        self.settle(fields, top, self.timings.get(req_row) if self.timings else None)
        if waiting is not None:
            ROW.pack_into(store.buf, (req_row - store.flushed) * ROW_SIZE, *fields)
        else:
            store.put(req_row, fields)

    def http_answered(self, rec: Record) -> None:
        """The failed HTTP exchange REC has answered the stashed requests it carried (the row's own
        answer aside): their rows settled again now, as an answer's request's are, not only when the
        next flush comes after REC. They stay stashed, as requests no answer came for do."""
        store = self.store
        done = -1  # (a batch's requests: its row settled once)
        for key, row in self.flow_waiting.take(rec):
            hit = self.stash.get(key)
            if hit is not None and hit[1] == row and row != done and hit[0].partner_seq == rec.seq:
                done = row
                waiting = self.deferred.pop(row, None)
                fields = waiting[1] if waiting is not None else store.get(row)
                self.settle(fields, hit[2], self.timings.get(row) if self.timings else None)
                if waiting is not None:
                    ROW.pack_into(store.buf, (row - store.flushed) * ROW_SIZE, *fields)
                else:
                    store.put(row, fields)

    def write_deferred(self) -> None:
        store = self.store
        timings = self.timings
        buf, flushed = store.buf, store.flushed
        for row, (top, fields) in self.deferred.items():  # (rows in the buffer: packed from their fields)
            self.settle(fields, top, timings.get(row) if timings else None)
            ROW.pack_into(buf, (row - flushed) * ROW_SIZE, *fields)
        self.deferred.clear()

    def details_of(self, fields: list[Any], row: int) -> dict[str, Any] | None:
        """A row's details as the viewer reads them (stored, or derived from its note)."""
        store = self.store
        if fields[F_DET] >= 0:
            return expand(store.read_details(fields[F_DET]))
        if fields[F_NOTE] < 0:
            return None
        rec = record_from_dict(orjson.loads(self.index.line(row)), line=row + 1, source=self.capture)
        return derive(
            fields,
            rec.raw,
            rec.conn,
            self.notes.entries[fields[F_NOTE]],
            self.method_list,
            lambda r: self.fields_of(r)[F_SEQ],
        )

    def fields_of(self, row: int) -> list[Any]:
        """A row's fields as they stand (a waiting request's are in `deferred`, not the buffer)."""
        waiting = self.deferred.get(row)
        return waiting[1] if waiting is not None else self.store.get(row)

    def attach_end_finding(self, f: Finding) -> None:
        row_of = self.row_of_finding(f)
        row = row_of(f.seq) if f.seq else None
        if row is None and f.seq:
            row = self.record_row(f)
        if row is None:
            self.summary.add_finding(f)
            self.capture_findings.append(finding_list(f, row_of))
            return
        self.add_finding(row, f, row_of)

    def row_of_finding(self, f: Finding):
        """seq -> row for the seqs finding F names: of its message's connection once seqs restarted."""
        row_of = self.seqmap.row
        if len(self.seqmap.segments) > 1 and f.line > 0:
            conn = self.conn_of(f.line - 1)
            if conn is not None:
                row_of = self.seqmap.of(conn)
        return row_of

    def record_row(self, f: Finding) -> int | None:
        """The row of the record other than a message that finding F is about (an end-of-input
        rule's finding on a stream's event, say): its line's record, when it has F's seq."""
        row = f.line - 1
        store = self.store
        if not 0 <= row < store.flushed + store.buffered:  # (a row written already)
            return None
        try:
            rec = record_from_dict(orjson.loads(self.index.line(row)), line=f.line, source=self.capture)
        except Exception:  # (a line that changed or went away: the capture's finding, as before)
            return None
        return row if rec.type is not _MESSAGE and rec.seq == f.seq else None

    def add_finding(self, row: int, f: Finding, row_of) -> None:
        """Finding F shown on row ROW (written already), in its details and its count."""
        self.summary.add_finding(f)
        if row in self.deferred:
            self.write_deferred()
        store = self.store
        fields = store.get(row)
        d = self.details_of(fields, row) or {}
        d.setdefault("f", []).append(finding_list(f, row_of))
        fields[6] = min(fields[6] + 1, 65535)
        fields[4] = max(fields[4], int(f.severity))
        fields[F_NOTE] = -1
        fields[F_DET] = store.write_details(d)
        store.put(row, fields)
        self.new_frows.append(row)

    def conn_of(self, row: int) -> str | None:
        """The connection of row ROW's record, read again from its line (SeqMap asks once seqs have
        restarted); None when it cannot be read again."""
        conns = self.conns
        if row in conns:
            return conns[row]
        try:
            conn = record_from_dict(
                orjson.loads(self.index.line(row)), line=row + 1, source=self.capture
            ).conn
        except Exception:  # (a line that changed or went away names no connection: no guess)
            conn = None
        if len(conns) >= MAX_CONNS:
            conns.clear()
        conns[row] = conn
        return conn

    def method_index(self, label: str | None) -> int:
        if not label:
            return -1
        i = self.methods.get(label)
        if i is None:
            if len(self.methods) >= MAX_METHODS:
                return -2
            i = self.methods[label] = len(self.methods)
            self.method_list.append(label)
            self.new_methods[label] = i
        return i
