"""What the viewer shows, without the UI: rows of a capture, read lazily, with their analysis.

A `CaptureView` joins three sources:
- the line index (tracer.index): row N's bytes are one pread away;
- raw-derived basics, parsed only for the rows asked for (the screen) and kept in a small LRU:
  time, direction, kind, method, id, text previews;
- the background analysis (tracer.view.annotations): era, pairing, latency, findings, once the
  analysis process has reached the row.

Everything here may be called from worker threads; the UI only posts what it gets.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from tracer import temps
from tracer.capture import record_from_dict
from tracer.filter import id_text
from tracer.index import LineIndex
from tracer.inputs.lazy import RecordIndex, converted_header, converted_records, record_line
from tracer.inputs.spooled import SpoolIndex, new_capture, prepared_tail, take_early
from tracer.inputs.tail import Tail, read_tail
from tracer.model import Record
from tracer.view.annotations import Annotations, RowSummary
from tracer.view.rowbasics import RowBasics, _raw_of, basics_from_line, basics_from_prefix, preview

LRU_ROWS = 4096
# Rows read ahead of the index (`G` while a host log or NDJSON file is still being read, see
# tracer.inputs.tail) have negative numbers: GAP_ROW stands for the rows not read yet, then the
# provisional rows are -2, -3, ... in order. They are never analysed and never filtered.
GAP_ROW = -1


@dataclass(slots=True)
class RowInfo:
    """A row as the list draws it: basics plus the analysis when it has arrived."""

    basics: RowBasics
    ann: RowSummary | None = None

    @property
    def row(self) -> int:
        return self.basics.row

    @property
    def analysed(self) -> bool:
        return self.ann is not None

    @property
    def kind(self) -> str | None:
        return self.ann.kind if self.ann is not None and self.ann.kind else self.basics.kind

    @property
    def era(self) -> str | None:
        return self.ann.era if self.ann is not None else None

    @property
    def label(self) -> str:
        if self.ann is not None and self.ann.method:
            return self.ann.method
        b = self.basics
        return b.method or b.label or ""

    @property
    def answers(self) -> bool:
        """The label is the method this response answers."""
        return self.kind in ("result", "error") and bool(self.label)

    @property
    def latency_ns(self) -> int | None:
        return self.ann.latency_ns if self.ann is not None else None

    @property
    def nfind(self) -> int:
        return self.ann.nfind if self.ann is not None else 0

    @property
    def worst(self) -> int:
        return self.ann.worst if self.ann is not None else 0

    @property
    def partner(self) -> int | None:
        return self.ann.partner if self.ann is not None else None

    @property
    def op_row(self) -> int | None:
        return self.ann.op_row if self.ann is not None else None


@dataclass(slots=True)
class RowDetail:
    """Everything the detail pane shows for one row."""

    row: int
    line: bytes  # the capture line (capped)
    line_size: int
    record: Record | None
    problem: str | None = None  # why the line is not a record
    analysis: dict[str, Any] | None = None  # tracer.view.annotate details
    summary: RowSummary | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    where: str = ""  # where the row is in what the user opened: "capture line 12", "line 3 of x.ndjson"


__all__ = ["RowBasics", "_raw_of", "basics_from_line", "basics_from_prefix", "preview"]


class CaptureView:
    """Rows of one capture file (our JSONL; other inputs read lazily or converted, see open_view)."""

    DETAIL_CAP = 16 << 20  # bytes of a line read for the detail pane before "expand"
    ROW_CAP = 1 << 20  # a list row parses at most this much; longer lines show their envelope only

    def __init__(
        self,
        path: str,
        *,
        follow: bool = False,
        analyse: bool = True,
        on_analysis: Callable[[Annotations], None] | None = None,
        source: str | None = None,
        cleanup: Callable[[], None] | None = None,
        index: LineIndex | RecordIndex | SpoolIndex | None = None,
    ):
        self.path = path
        self.source = source or path  # what the user opened (differs for converted inputs)
        self.follow = follow
        # rows read lazily from another format (tracer.inputs.lazy): the rows of its conversion
        self.lazy = index is not None
        self.index = index if index is not None else LineIndex(path, final=not follow)
        self.ann = Annotations(path, follow=follow, on_progress=on_analysis) if analyse else None
        self._basics: OrderedDict[int, RowBasics] = OrderedDict()
        self.parsed = 0  # rows parsed from raw so far (the laziness test reads it)
        self._cleanup = cleanup
        self._lock = threading.Lock()
        self.closed = False
        self.tail: Tail | None = None  # provisional rows of the input's end (read_ahead)
        self._tail_basics: dict[int, RowBasics] = {}

    def start(self) -> None:
        """Start the background analysis (any thread; nothing happens once closed). A capture
        still being converted in the background is analysed once it is whole (the analysis of a
        file that is not followed ends at its end, with the end-of-session rules)."""
        index = self.index
        # (a followed input's conversion never ends: its analysis follows it, as a capture's)
        if isinstance(index, SpoolIndex) and not index.follow and index.when_written(self.start):
            return
        with self._lock:
            if self.ann is not None and not self.closed and self.ann.proc is None:
                self.ann.start()

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
        if self.ann is not None:
            self.ann.stop()
        self.index.close()
        if self._cleanup is not None:
            self._cleanup()
            self._cleanup = None

    # -- rows --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.index)

    # -- provisional rows of the end, read ahead of the index ---------------------------------

    def can_read_ahead(self) -> bool:
        """Whether `read_ahead` may give rows: a host log or NDJSON file read lazily, or a HAR or
        flow file converted in the background, not yet read to its end."""
        index = self.index
        if self.follow or index.complete:
            return False
        return isinstance(index, RecordIndex) or (
            isinstance(index, SpoolIndex) and index.fmt.tail is not None
        )

    def read_ahead(self) -> bool:
        """Read the input's last rows ahead of the index (any thread; the UI shows them once this
        returns True, and drops them with `drop_tail` when the index is complete)."""
        index = self.index
        if not self.can_read_ahead():
            return False
        if isinstance(index, RecordIndex):
            tail = read_tail(index.path, index.fmt)
        else:
            assert isinstance(index, SpoolIndex) and index.fmt.tail is not None
            # (a flow file's: read ahead by its converter, when it has, not here with mitmproxy)
            lines = prepared_tail(index.path)
            if lines is None:
                lines = index.fmt.tail(self.source)
            tail = Tail(lines, 0, 0, 0) if lines else None
        if tail is None or index.complete:
            return False
        self.tail = tail
        return True

    @property
    def read_problems(self) -> tuple[list[tuple[int, str]], int]:
        """What the reader of a converted input could not read, as lint names it: ([(line, why)]
        for the first few, how many there were)."""
        index = self.index
        if isinstance(index, SpoolIndex):
            return index.problems, index.problem_count
        return [], 0

    @property
    def provisional(self) -> int:
        """Provisional rows to show after the indexed ones (0: none)."""
        tail = self.tail
        return len(tail.lines) if tail is not None else 0

    def drop_tail(self) -> None:
        self.tail = None
        self._tail_basics = {}

    def _tail_line(self, row: int) -> bytes:
        tail = self.tail
        i = -2 - row
        if tail is None or not 0 <= i < len(tail.lines):
            raise IndexError(row)
        return tail.lines[i]

    def _tail_row_basics(self, row: int) -> RowBasics:
        b = self._tail_basics.get(row)
        if b is None:
            if row == GAP_ROW:
                b = RowBasics(row, "gap", label="rows still being read")
            else:
                b = basics_from_line(row, self._tail_line(row))
            self._tail_basics[row] = b
        return b

    def _tail_detail(self, row: int) -> RowDetail:
        tail = self.tail
        name = os.path.basename(self.source)
        if row == GAP_ROW or tail is None:
            done = f"{self.index.progress:.0%}" if tail is not None else "all"
            why = (
                f"The rows between are still being read ({done} of {name} so far). The rows below "
                "it were read ahead from the end of the file: provisional until then."
            )
            return RowDetail(row, b"", 0, None, why, where=f"read from {name}")
        line = self._tail_line(row)
        rec = None
        try:
            rec = record_from_dict(orjson.loads(line), line=0, source=self.source)
        except (orjson.JSONDecodeError, ValueError, TypeError):
            pass
        why = (
            "Read ahead from the end of the file, before the rows above it: provisional. Its row "
            "number and seq are pending, and what the rows before it decide (its connection, a "
            "guessed direction, a first-message mark, a HAR entry's number) may change once they "
            "are read; it is analysed then."
        )
        where = f"line {rec.line:,} of {name}, read ahead" if rec is not None and rec.line else "read ahead"
        return RowDetail(row, line, len(line), rec, why, where=where)

    def basics(self, row: int) -> RowBasics:
        if row < 0:
            return self._tail_row_basics(row)
        cache = self._basics
        b = cache.get(row)
        if b is not None:
            cache.move_to_end(row)
            return b
        size = self.index.length(row)
        if size > self.ROW_CAP:
            b = basics_from_prefix(row, self.index.line(row, limit=4096), size)
        else:
            b = basics_from_line(row, self.index.line(row))
        self.parsed += 1
        cache[row] = b
        if len(cache) > LRU_ROWS:
            cache.popitem(last=False)
        return b

    def info(self, row: int) -> RowInfo:
        ann = self.ann.row(row) if self.ann is not None and row >= 0 else None
        return RowInfo(self.basics(row), ann)

    def detail(self, row: int, cap: int | None = None) -> RowDetail:
        if row < 0:
            return self._tail_detail(row)
        cap = cap or self.DETAIL_CAP
        size = self.index.length(row)
        line = self.index.line(row, limit=cap)
        rec: Record | None = None
        problem = None
        if size > cap:
            problem = f"the line is {size:,} bytes; showing the first {cap:,} (press e to load it all)"
        else:
            try:
                obj = orjson.loads(line)
                if type(obj) is not dict:
                    raise ValueError("the line is not a JSON object")
                rec = record_from_dict(obj, line=self._line_of(row, obj), source=self.source)
            except (orjson.JSONDecodeError, ValueError) as exc:
                problem = f"not a capture record: {exc}" if line.strip() else "blank line"
        summary = self.ann.row(row) if self.ann is not None else None
        analysis = self.ann.details(summary, rec) if self.ann is not None else None
        return RowDetail(row, line, size, rec, problem, analysis, summary, where=self._where(row, rec))

    @property
    def converted(self) -> bool:
        """The rows come from another format (NDJSON, host log...): written as a temporary capture,
        or read lazily as the rows of that conversion."""
        return self.lazy or self.source != self.path

    def _line_of(self, row: int, obj: dict[str, Any]) -> int:
        if self.converted:
            n = obj.get("line")
            return n if type(n) is int and n > 0 else 0
        return row + 1

    def _where(self, row: int, rec: Record | None) -> str:
        """The line lint names for this row: the capture's own line, or the original file's."""
        if not self.converted:
            return f"capture line {row + 1:,}"
        if rec is not None and rec.line:
            return f"line {rec.line:,} of {os.path.basename(self.source)}"
        return f"read from {os.path.basename(self.source)}"

    def grow(self) -> int:
        """Index what was appended to the file (follow mode; the UI's thread: no waiting). Returns
        the new row count. Raises IndexReset (InputBroken: a followed input truncated or rotated)."""
        index = self.index
        if isinstance(index, SpoolIndex):
            index.update(wait=False)
        else:
            index.update()
        return len(index)

    # -- navigation --------------------------------------------------------------------------

    def partner(self, row: int) -> int | None:
        info = self.info(row)
        return info.partner

    def next_finding(self, row: int, step: int = 1) -> int | None:
        if self.ann is None:
            return None
        if row < 0:  # a provisional row: after every indexed row, before nothing analysed
            return self.ann.next_finding(len(self), step) if step < 0 else None
        return self.ann.next_finding(row, step)


def converted_capture(path: str, fmt_name: str, records) -> tuple[str, Callable[[], None]]:
    """Write another input format's records as a temporary capture; returns (path, cleanup).

    Written as the input says, not as a recorder would: no time where the input has none (bare
    NDJSON), the reader's own seq numbers (those lint reports), and each record's line in the
    original file (`line`, which only the viewer reads) so the viewer points where lint points."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix="mcptrace-view-", suffix=".jsonl")  # (mode 0600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(converted_header(path, fmt_name) + b"\n")
        for rec in converted_records(records):
            fh.write(record_line(rec) + b"\n")

    def cleanup() -> None:
        try:
            os.unlink(tmp)
        except OSError:
            pass

    return tmp, temps.keep(cleanup)  # (removed at a signal that ends the viewer too)


def id_of(b: RowBasics) -> str | None:
    return id_text(b.id) if b.has_id else None


def open_view(
    path: str,
    *,
    follow: bool = False,
    fmt: str | None = None,
    on_analysis: Callable[[Annotations], None] | None = None,
    whole: bool = False,
) -> CaptureView:
    """A CaptureView of any input lint reads: our captures by their lines, host logs and NDJSON by
    lazy rows, other formats (HAR, .mitm) converted to a temporary capture in the background (a HAR
    entry by entry unless WHOLE: its index raises tracer.inputs.spooled.InputRestart when the file
    must be opened again with whole=True). Raises tracer.inputs.InputError."""
    from tracer.inputs import open_input
    from tracer.inputs.lazy import lazy_rows

    if follow and fmt in (None, "capture") and os.path.isfile(path) and os.path.getsize(path) == 0:
        return CaptureView(path, follow=True, on_analysis=on_analysis)  # the writer has not begun
    inp = open_input(path, fmt=fmt)
    if inp.format.name == "capture":
        inp.fh.close()
        return CaptureView(path, follow=follow, on_analysis=on_analysis)
    if follow and (lazy_rows(inp, fmt) or inp.format.name == "mitm"):
        # a host log, NDJSON or flow file still being written: converted by a process that reads on
        # as it grows, and followed as a capture being written (its analysis too)
        tmp, cleanup = new_capture()
        try:
            index = SpoolIndex(inp, tmp, follow=True)
        except BaseException:
            inp.fh.close()
            cleanup()
            raise
        return CaptureView(
            tmp, follow=True, on_analysis=on_analysis, source=path, cleanup=cleanup, index=index
        )
    if lazy_rows(inp, fmt):
        # rows straight from the input, the same as its conversion's; the analysis process reads
        # them the same way (tracer.inputs.lazy.open_rows)
        return CaptureView(path, follow=False, on_analysis=on_analysis, index=RecordIndex(inp))
    # converted to a temporary capture in the background, shown as it is written (by the process
    # `mcptrace view` started before its own imports, when it did: tracer.inputs.spooled.start_early)
    early = None if whole else take_early(path, inp.format.name)
    tmp, cleanup, proc = early if early is not None else (*new_capture(), None)
    try:
        index = SpoolIndex(inp, tmp, whole=whole, proc=proc)
    except BaseException:
        inp.fh.close()
        cleanup()
        raise
    return CaptureView(tmp, follow=False, on_analysis=on_analysis, source=path, cleanup=cleanup, index=index)
