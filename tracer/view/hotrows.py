"""The viewer's analysis loop over rows (tracer.view.annotate runs it): lint's analyser on each
record, then the row written, in one flat loop for the row nearly every capture is made of.

The analysis process is lint's analyser plus what it writes per row, so every step here is a share
of its gap to lint's speed (tests/bench/bench_view_analysis.py measures it). A plain message (a
record with the writer's seven members, one JSON-RPC object, no finding, no unusual pairing) is
written here with what RowFiller.message() and settle() would write for it, with local names
instead of attribute lookups and method calls; any other row goes to RowFiller.analyse_row, which
decides everything as before.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from typing import TYPE_CHECKING

import orjson

from tracer.capture import _fast_record  # (record_from_dict's own first step: the same record)
from tracer.index import LineIndex
from tracer.lines import EVIDENCE_BYTES, LINE_MAX, LongRow
from tracer.model import Kind
from tracer.pairing import PairStatus
from tracer.view.details import compact
from tracer.view.rowformat import DIR_OF, ERA_OF, KIND_OF, NO_LAT, PAIR_CODE, Q_MAX, Q_MIN, ROW, ROW_SIZE

if TYPE_CHECKING:
    from tracer.inputs.lazy import RecordIndex
    from tracer.view.rowfill import RowFiller

BLOCK_BYTES = 4 << 20  # of the input read at once (beyond one row)
LAT_MAX_US = 2**31 - 1
_ANSWERED = (PairStatus.PAIRED, PairStatus.AFTER_CANCEL)
_RESULT, _ERROR, _REQUEST, _BATCH = Kind.RESULT, Kind.ERROR, Kind.REQUEST, Kind.BATCH
_MESSAGE_CODE = 2  # RTYPE_OF[RecordType.MESSAGE]
_UNPARSED = object()
_WAITING = bytes(ROW_SIZE)  # a waiting request's place in the buffer: its fields are in RowFiller.deferred


def block(index: LineIndex | RecordIndex, first: int, last: int) -> list[bytes]:
    """The lines of rows FIRST..LAST-1, or of the first of them that fit in BLOCK_BYTES (one row at
    least: memory stays bounded whatever the lines' length). A capture's come in one read, split at
    its newlines as the index found them (bytes.split: no step per line in Python)."""
    if type(index) is LineIndex:
        ends = index.ends
        start, first_end = index.span(first)
        if first_end - start > LINE_MAX:  # (only a block's first row can be: BLOCK_BYTES is smaller)
            return [LongRow(os.pread(index.fd, EVIDENCE_BYTES, start))]
        lim = min(last, len(ends))
        if first < lim:  # (else the one row left is the unterminated last line)
            last = max(first + 1, bisect_right(ends, start + BLOCK_BYTES, first, lim))
        end = index.span(last - 1)[1]
        lines = os.pread(index.fd, end - start, start).split(b"\n")
        if len(lines) == last - first:  # (else the file changed under us: as the index reads it)
            return lines
    out: list[bytes] = []
    size = 0
    for _, line in index.lines(first, last):
        out.append(line)
        size += len(line)
        if size >= BLOCK_BYTES:
            break
    return out


def fill(f: RowFiller, first: int, lines: list[bytes]) -> None:
    """Analyse LINES, the rows from FIRST on, into F's rows. A row whose analysis raises is written
    as unreadable (RowFiller.unreadable) and the next one goes on. F's tables are held here for
    the whole run: the general path changes them in place. Once seqs have restarted (tees sharing
    a file, concatenated captures), every row takes the general path, whose seq -> row lookups are
    per connection (tracer.view.rowformat.SeqMap.row): this loop's are not."""
    if len(f.seqmap.segments) > 1:
        general(f, first, lines)
        return
    loads = orjson.loads
    json_error = orjson.JSONDecodeError
    capture = f.capture
    feed = f.analyser.feed
    seqmap = f.seqmap
    seqs, seq_rows, segments, row_of = seqmap.seqs, seqmap.rows, seqmap.segments, seqmap.row
    summary = f.summary
    add_message = summary.add_message
    methods = f.methods
    stash = f.stash
    deferred = f.deferred
    note_of = f.notes.of
    store = f.store
    buf = store.buf  # (the store's own buffer: what it appends in place, this appends to as well)
    flushed = store.flushed  # (no flush happens during a fill)
    pack = ROW.pack
    pack_into = ROW.pack_into
    for row, line in enumerate(lines, first):
        try:
            try:
                obj = loads(line)
            except json_error:
                obj = _UNPARSED
            rec = _fast_record(obj, row + 1, capture) if obj.__class__ is dict else None
            if rec is None:  # not a plain message record: the general path (broken lines too)
                f.analyse_row(row, line, None if obj is _UNPARSED else obj)
                if len(segments) > 1:  # (its message restarted the seqs)
                    general(f, row + 1, lines[row + 1 - first :])
                    return
                continue
            seq = rec.seq
            if seqs and seq <= seqs[-1]:  # seqs restart (SeqMap.add): the rest as general() does
                general(f, row, lines[row - first :])
                return
            seqs.append(seq)
            seq_rows.append(row)
            try:
                a = feed(rec)
            except Exception:  # (the row is unreadable, its record counted all the same)
                summary.add_record(rec)
                raise
            kind = a.kind
            if kind is _BATCH or a.findings or a.reason is not None or a.pair_note is not None:
                summary.add_record(rec)
                f.message(row, a, f.message_fields(rec), None)
                continue
            # -- a plain message: RowFiller.message() and settle(), for what such a message has
            add_message(rec, a)
            ps = a.pair_status
            flags = PAIR_CODE.get(ps, 0) if ps else 0
            label = a.method or a.answers_method
            if label:
                midx = methods.get(label)
                if midx is None:
                    midx = f.method_index(label)
            else:
                midx = -1
            prow = lat_us = oprow = -1
            lat = a.latency_ns
            pending = False
            if kind is _RESULT or kind is _ERROR:
                req = a.request
                hit = None
                if req is not None and ps in _ANSWERED:
                    hit = stash.pop((req.seq, rec.conn, req.idkey), None)
                partner = a.partner_seq
                if partner is not None:
                    # the request's row, as the stash knows it (one recording: seqs rise, so it is
                    # the row the seq map would find) or as the seq map finds it
                    if hit is not None and partner == req.seq and len(segments) == 1:
                        prow = hit[1]
                    else:
                        p = row_of(partner)
                        if p is not None:
                            prow = p
                if lat is not None:
                    lat_us = -1 if lat < 0 else min(LAT_MAX_US, lat // 1000)
                if hit is not None:
                    # RowFiller.answered() and settle() for a request whose row waits in the buffer
                    # (nearly every one: answered within the flush window), without an SSE timing
                    waiting = deferred.pop(hit[1], None) if not f.timings else None
                    if waiting is None:
                        f.answered(req, hit, row, a)
                    else:
                        wf = waiting[1]
                        top = hit[2]
                        wf[8] = row
                        if lat is not None:
                            wf[9] = lat_us
                        if req.op_seq is not None and wf[10] < 0:
                            p = row_of(req.op_seq)
                            if p is not None:
                                wf[10] = p
                        tl = top.latency_ns
                        wf[14] = NO_LAT if tl is None or not Q_MIN <= tl < Q_MAX else tl
                        if not top.findings and top.reason is None and top.pair_note is None:
                            note = note_of(wf[7], row, wf[10], top)
                        else:
                            note = -1
                        if note >= 0:
                            wf[11] = note
                            wf[12] = -1
                        else:
                            wf[11] = -1
                            wf[12] = store.write_details(compact(top, row_of, None))
                        pack_into(buf, (hit[1] - flushed) * ROW_SIZE, *wf)
            elif kind is _REQUEST:
                pending = a.idkey is not None
            elif a.partner_seq is not None:
                p = row_of(a.partner_seq)
                if p is not None:
                    prow = p
            if a.op_seq is not None:
                p = row_of(a.op_seq)
                if p is not None:
                    oprow = p
            if pending:
                # RowFiller.remember(): its row learns its partner when the answer comes, and its
                # details are settled then (or at the flush), once
                fields = [
                    _MESSAGE_CODE, KIND_OF[kind], DIR_OF[rec.dir], ERA_OF[a.era], 0, flags, 0, midx, prow,
                    lat_us, oprow, -1, -1, seq, NO_LAT,
                ]  # fmt: skip
                stash[(seq, rec.conn, a.idkey)] = (a, row, a)
                deferred[row] = (a, fields)
                data = _WAITING  # (packed when answered or at the flush: RowFiller.deferred)
            else:
                note = note_of(midx, prow, oprow, a)
                det = -1 if note >= 0 else store.write_details(compact(a, row_of, None))
                data = pack(
                    _MESSAGE_CODE, KIND_OF[kind], DIR_OF[rec.dir], ERA_OF[a.era], 0, flags, 0, midx, prow,
                    lat_us, oprow, note, det, seq, lat if lat is not None and Q_MIN <= lat < Q_MAX else NO_LAT,
                )  # fmt: skip
            if (row - flushed) * ROW_SIZE == len(buf):
                buf += data
            else:
                store.put_packed(row, data)
        except Exception as exc:  # a record this version cannot analyse costs its row, not the rest
            f.unreadable(row, exc)
            if len(segments) > 1:
                general(f, row + 1, lines[row + 1 - first :])
                return
    f.row = first + len(lines)


def general(f: RowFiller, first: int, lines: list[bytes]) -> None:
    """fill() with every row on the general path (RowFiller.analyse_row)."""
    for row, line in enumerate(lines, first):
        try:
            f.analyse_row(row, line)
        except Exception as exc:  # (as fill: a record this version cannot analyse costs its row)
            f.unreadable(row, exc)
    f.row = first + len(lines)
