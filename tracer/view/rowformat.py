"""The per-row summary format shared by tracer.view.annotate (writer) and tracer.view.annotations (reader).

`rows.bin` holds one ROW per capture row: record type, kind, direction, era, worst severity,
flags (pair status in the low 4 bits, direction inferred 0x10), finding count, method index,
partner row, latency in microseconds, MRTR first-round row, note (an index into the table of era
reasons and versions, for a message whose details are derived when shown: tracer.view.details),
details offset (a message whose details are stored), the message's seq, its exact latency in ns
(NO_LAT: none). -1 means none.
"""

from __future__ import annotations

import os
import struct
from array import array
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

from tracer.model import Direction, Era, Finding, Kind, RecordType
from tracer.pairing import PairStatus

ROW = struct.Struct("<BBBBBBHiiiiiqqq")
ROW_SIZE = ROW.size  # 52
F_PARTNER, F_LAT_US, F_OP, F_NOTE, F_DET, F_SEQ, F_LAT_NS = 8, 9, 10, 11, 12, 13, 14
NO_LAT = -(2**63)  # the exact latency of a row without one
Q_MIN, Q_MAX = -(2**63), 2**63  # what a seq or a latency must be within to be stored as is

RTYPES = ("", "header", "message", "stderr", "http", "event", "broken", "blank")
RTYPE_CODE = {name: i for i, name in enumerate(RTYPES)}
KINDS = ("", *(k.value for k in Kind))
KIND_CODE = {name: i for i, name in enumerate(KINDS)}
DIRS = ("", "c2s", "s2c")
DIR_CODE = {name: i for i, name in enumerate(DIRS)}
ERAS = ("", "modern", "legacy", "unknown")
ERA_CODE = {name: i for i, name in enumerate(ERAS)}
PAIR_STATUSES = ("", *(v for k, v in vars(PairStatus).items() if k.isupper()))
PAIR_CODE = {name: i for i, name in enumerate(PAIR_STATUSES)}
FLAG_DIR_INFERRED = 0x10
# the same codes keyed by the enum members (no .value lookups on the hot path)
KIND_OF = {k: KIND_CODE[k.value] for k in Kind}
ERA_OF = {e: ERA_CODE[e.value] for e in Era}
DIR_OF = {d: DIR_CODE[d.value] for d in Direction}
RTYPE_OF = {t: RTYPE_CODE[t.value] for t in RecordType}


def read_line_at(fd: int, offset: int, block: int = 65536) -> bytes:
    """The line of a file that starts at `offset`, without its newline (positional reads, so a
    writer appending to the same file is never disturbed)."""
    buf = b""
    pos = offset
    while True:
        chunk = os.pread(fd, block, pos)
        if not chunk:
            return buf
        nl = chunk.find(b"\n")
        if nl >= 0:
            return buf + chunk[:nl]
        buf += chunk
        pos += len(chunk)


def empty_row() -> list[Any]:
    return [0, 0, 0, 0, 0, 0, 0, -1, -1, -1, -1, -1, -1, 0, NO_LAT]


def finding_list(f: Finding, row_of_seq) -> list[Any]:
    rel_row = row_of_seq(f.related_seq) if f.related_seq else None
    return [f.rule, int(f.severity), f.message, f.path, f.related_seq, rel_row, f.seq]


class SeqMap:
    """seq -> row for message rows. Seqs rise within a capture; a restart (concatenated captures, or
    several tees appending to one file, each numbering its records from 1) opens a new segment,
    searched newest first. Once seqs have restarted a seq can name a row of each connection:
    row(seq, conn) then takes the newest row of that connection (CONN_OF, row -> its connection,
    tells), else the newest of any (a link the analyser made across connections: an MRTR round)."""

    def __init__(self, conn_of: Callable[[int], str | None] | None = None) -> None:
        self.seqs = array("q")
        self.rows = array("i")
        self.segments = [0]
        self.conn_of = conn_of

    def add(self, seq: int, row: int) -> None:
        if self.seqs and seq <= self.seqs[-1]:
            self.segments.append(len(self.seqs))
        self.seqs.append(seq)
        self.rows.append(row)

    def row(self, seq: int | None, conn: str | None = None) -> int | None:
        if seq is None:
            return None
        seqs = self.seqs
        hi = len(seqs)
        # (one segment: a seq names one row, whatever its connection)
        by_conn = conn is not None and self.conn_of is not None and len(self.segments) > 1
        first = None
        for lo in reversed(self.segments):
            i = bisect_left(seqs, seq, lo, hi)
            if i < hi and seqs[i] == seq:
                row = self.rows[i]
                if not by_conn or self.conn_of(row) == conn:
                    return row
                if first is None:
                    first = row
            hi = lo
        return first

    def of(self, conn: str) -> Callable[[int | None], int | None]:
        """row(seq, CONN) as a one-argument lookup; row itself while seqs have not restarted."""
        if len(self.segments) == 1 or self.conn_of is None:
            return self.row
        return lambda seq: self.row(seq, conn)
