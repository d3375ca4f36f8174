"""Run a tracer.filter expression over the rows of a CaptureView, in one sequential pass.

Analysed fields (kind, era, method, latency, findings) come from the analysis summaries, read in
blocks; the raw line is parsed only when a term needs it (free text, id, conn...) or the row is
not analysed yet. A filter that needs the analysis waits for it to reach the rows it scans.
"""

from __future__ import annotations

import os
import threading
from array import array
from bisect import bisect_right
from collections.abc import Callable
from typing import Any

import orjson

from tracer.filter import Filter, id_text
from tracer.inputs.lazy import RecordIndex
from tracer.view.annotations import RowSummary
from tracer.view.viewdata import CaptureView, RowBasics, _raw_of, basics_from_line

RAW_FIELDS = frozenset({"text", "id", "conn", "transport", "status", "seq"})
BLOCK = 8192


class RowFields:
    """The filter's view of one row (tracer.filter.Fields), parsing the raw line only on demand."""

    __slots__ = ("_b", "_line", "_rules", "row", "s", "view")

    def __init__(self, view: CaptureView, row: int, summary: RowSummary | None, line: bytes | None):
        self.view = view
        self.row = row
        self.s = summary
        self._line = line
        self._b: RowBasics | None = None
        self._rules: list[str] | None = None

    @property
    def b(self) -> RowBasics:
        if self._b is None:
            line = self._line if self._line is not None else self.view.index.line(self.row)
            self._b = basics_from_line(self.row, line)
        return self._b

    @property
    def kind(self) -> str:
        s = self.s
        if s is not None:
            return s.kind or s.rtype
        b = self.b
        return b.kind or b.rtype

    @property
    def dir(self) -> str | None:
        return self.s.dir if self.s is not None else self.b.dir

    @property
    def era(self) -> str | None:
        return self.s.era if self.s is not None else None

    @property
    def method(self) -> str | None:
        if self.s is not None:
            return self.s.method
        return self.b.method

    @property
    def id_text(self) -> str | None:
        b = self.b
        return id_text(b.id) if b.has_id else None

    @property
    def latency_ns(self) -> int | None:
        return self.s.latency_ns if self.s is not None else None

    @property
    def rules(self) -> list[str]:
        if self._rules is None:
            out: list[str] = []
            s = self.s
            if s is not None and s.nfind and self.view.ann is not None:
                out = self.view.ann.finding_rules(s)
            self._rules = out
        return self._rules

    @property
    def severity(self) -> int:
        return self.s.worst if self.s is not None else 0

    @property
    def nfindings(self) -> int:
        return self.s.nfind if self.s is not None else 0

    @property
    def partner(self) -> bool:
        return self.s is not None and self.s.partner is not None

    @property
    def text(self) -> str:
        line = self._line if self._line is not None else self.view.index.line(self.row)
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            return line.decode("utf-8", "replace").lower()
        if type(obj) is not dict:
            return ""
        if obj.get("type") in ("message", "stderr"):
            return _raw_of(obj).decode("utf-8", "replace").lower()
        return self.b.label.lower()

    @property
    def conn(self) -> str | None:
        return self.b.conn

    @property
    def transport(self) -> str | None:
        return self.b.transport

    @property
    def status(self) -> int | None:
        return self.b.status

    @property
    def seq(self) -> int:
        return self.b.seq


def candidates(view: CaptureView, first: int, last: int, needles: list[bytes]) -> list[int]:
    """Rows first..last-1 whose line contains every needle (case-insensitive): one read and one
    search per block, rows found by bisecting the index, no per-row parsing."""
    ix = view.index
    start, end = ix.span(first)[0], ix.span(last - 1)[1]
    low = os.pread(ix.fd, end - start, start).lower()

    def rows_with(needle: bytes) -> set[int]:
        found: set[int] = set()
        pos = low.find(needle)
        while pos >= 0:
            r = bisect_right(ix.ends, start + pos, first, min(last, len(ix.ends)))
            found.add(r)
            nxt = (ix.ends[r] if r < len(ix.ends) else end) - start  # one hit per row is enough
            pos = low.find(needle, max(nxt, pos + 1))
        return found

    rows: set[int] | None = None
    for needle in needles:
        found = rows_with(needle)
        rows = found if rows is None else rows & found
        if not rows:
            break
    # bytes that are not UTF-8 are stored base64: those rows cannot be pre-filtered
    return sorted(r for r in (rows or set()) | rows_with(b'"b64":"') if first <= r < last)


class FilterJob:
    """Scan rows [start, stop) and collect the ones that match. Runs in a worker thread;
    `on_progress(matches, scanned_upto)` is called every block (the UI posts it on)."""

    def __init__(
        self,
        view: CaptureView,
        flt: Filter,
        *,
        start: int = 0,
        stop: int | None = None,
        on_progress: Callable[[array, int], None] | None = None,
        into: array | None = None,
    ):
        self.view = view
        self.filter = flt
        self.start = start
        self.stop = stop
        self.on_progress = on_progress
        self.matches = into if into is not None else array("i")  # appended to (follow mode extends)
        self.scanned = start
        self.cancelled = threading.Event()

    def cancel(self) -> None:
        self.cancelled.set()

    def run(self) -> array:
        view, flt = self.view, self.filter
        ann = view.ann
        stop = self.stop if self.stop is not None else len(view)
        needs_raw = bool(flt.fields & RAW_FIELDS)
        needs_analysis = flt.needs_analysis and ann is not None
        match = flt.match
        # Free text every match must contain, as it appears in the capture line (JSON-escaped):
        # a cheap bytes test skips most lines before any parsing. Only for text that JSON writes
        # unchanged (ASCII, no quote, backslash or control character).
        needles = [
            n.encode()
            for n in flt.needles
            if n.isascii() and n.isprintable() and '"' not in n and "\\" not in n
        ]
        if isinstance(view.index, RecordIndex):
            # (rows made on demand, an NDJSON file or a host log: no capture file for the block
            # search to read, so each row is matched as it is made)
            needles = []
        row = self.start
        while row < stop and not self.cancelled.is_set():
            last = min(stop, row + BLOCK)
            if needs_analysis:
                while not self.cancelled.is_set() and not ann.wait(
                    lambda last=last: ann.rows_done >= last, 0.2
                ):
                    pass
                if self.cancelled.is_set():
                    break
            summaries: dict[int, RowSummary] = dict(ann.rows(row, last)) if ann is not None else {}
            lines: Any = view.index.lines(row, last) if needs_raw or len(summaries) < last - row else None
            if needles:
                for r in candidates(view, row, last, needles):
                    if match(RowFields(view, r, summaries.get(r), None)):
                        self.matches.append(r)
            else:
                for r in range(row, last):
                    line = None
                    if lines is not None:
                        _, line = next(lines)
                    if match(RowFields(view, r, summaries.get(r), line)):
                        self.matches.append(r)
            row = last
            self.scanned = row
            if self.on_progress is not None:
                self.on_progress(self.matches, row)
        return self.matches
