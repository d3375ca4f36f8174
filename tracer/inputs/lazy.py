"""The viewer's rows of an input that is not one of our captures, without converting it first.

The viewer shows every input as capture rows (row 0 a header, then one capture record a row, as
`converted` writes them: the lint reader's records, settled, renumbered so that seqs rise). For
our captures those rows are the file's lines (tracer.index.LineIndex). For a host log or NDJSON,
`RecordIndex` runs the lint reader itself over the file, in steps (so the first screen is drawn after
the first step, not after the whole file), and keeps per row only what the row's own line cannot
say: the line's number, the row's seq, its connection (interned) and a few format bits
(`InputFormat.context`). A row's capture line is made again when it is asked for, from the line and
those bits (`InputFormat.rebuild`): 24 bytes a row stay in memory, plus 8 a line of the input.

Formats whose records need more than their line (HAR entries replayed in time order across the
document, mitmproxy flows) are converted to a temporary capture as before, but by a process of
its own while the viewer shows what is written (tracer.inputs.spooled.SpoolIndex).

Thread use, as LineIndex: one thread updates, others read rows; the arrays only grow.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import orjson

from tracer import lines as line_cap
from tracer.capture import ReadProblem, fitted, header_record, record_to_dict
from tracer.index import CHUNK, IndexReset, LineIndex
from tracer.model import Record, RecordType
from tracer.safejson import dumps as safe_dumps

if TYPE_CHECKING:
    from tracer.inputs import InputFormat, OpenInput

BOM = b"\xef\xbb\xbf"
CONTEXT_BITS = 8  # a row's meta: conn index << CONTEXT_BITS | the format's context bits
CACHE_ROWS = 256  # capture lines made lately (the list asks for a row's length, then its bytes)
PULL_STEP = 256  # records read between two looks at how far the reader has got
DEFAULT_STEP = 8 << 20  # bytes an update without a bound reads


class InputBroken(IndexReset):
    """The reader stopped on the input (unreadable past a point): what was read stays shown."""


def converted_header(path: str, fmt_name: str) -> bytes:
    """Row 0 of a converted input: a capture header that says what was read, with no clock of its
    own (the conversion's time is no time of the input's)."""
    head = header_record("file", label=f"{fmt_name}: {os.path.basename(path)}")
    head["t_ns"] = 0
    head.pop("started", None)
    head["redacted"] = False
    return orjson.dumps(head)


def record_line(rec: Record) -> bytes:
    """A record as a converted capture's line: as the input says it (nothing redacted), with the
    record's line in the original file (`line`, which only the viewer reads). Never past the line
    cap (tracer.lines), which the viewer's analysis reads it back with: a HAR body of hundreds of MB,
    an NDJSON line escaped to six times its size, keeps what fits (capture.fitted)."""
    line = _record_line(rec)
    cap = line_cap.LINE_MAX
    return line if len(line) <= cap else fitted(rec, len(line), _record_line, cap)


def _record_line(rec: Record) -> bytes:
    obj = record_to_dict(rec, redact=False)
    if rec.line:
        obj["line"] = rec.line
    return safe_dumps(obj)  # (a host log's year 9999 is a time past 64 bits)


def converted_records(
    items: Iterable[Record | ReadProblem], problems: list[ReadProblem] | None = None
) -> Iterator[Record]:
    """The records a converted capture holds, in order: read problems (kept in PROBLEMS when given)
    and headers left out, seqs made to rise (a settled answer moved after its request takes the
    next number)."""
    last_seq = 0
    for item in items:
        if isinstance(item, ReadProblem):
            if problems is not None:
                problems.append(item)
            continue
        if item.type is RecordType.HEADER:
            continue
        item.seq = last_seq = item.seq if item.seq > last_seq else last_seq + 1
        yield item


class RecordIndex:
    """Rows of a host log or NDJSON file, the same as its converted capture's lines, made on demand.

    Duck-types tracer.index.LineIndex for the viewer (update, complete, progress, len, length,
    line, lines); rows are never torn (every row is a record the reader made)."""

    # bytes of input the viewer reads before its first screen (a screenful of rows is in the first
    # few KB; reading is lint's pace, not a newline search), then at each step
    FIRST_STEP = 128 << 10
    STEP = 2 << 20

    def __init__(self, inp: OpenInput):
        fmt: InputFormat = inp.format
        if fmt.rebuild is None or fmt.context is None:
            raise ValueError(f"{fmt.name} has no lazy rows")
        self.path = inp.path
        self.fmt = fmt
        self.final = True
        self._inp = inp
        self._items = converted_records(inp.records)
        self.src = LineIndex(inp.path, final=True)
        self.fd = self.src.fd
        self.size = inp.size or 0
        self.header = converted_header(inp.path, fmt.name)
        self.linenos = array("q")  # row r (r >= 1): its line in the input, at r - 1
        self.seqs = array("q")
        self.meta = array("q")
        self.conns: list[str] = []
        self._rows = 0  # rows readers may ask for (their lines are indexed)
        self._conn_idx: dict[str, int] = {}
        self.done = False
        self.closed = False  # (closed while another thread reads on: that read stops)
        self._pos = 0
        self._cache: dict[int, bytes] = {}

    # -- building ----------------------------------------------------------------------------

    def update(self, max_bytes: int | None = None) -> int:
        """Read about `max_bytes` more of the input (None: 8 MB, so that a caller looping until
        `complete`, as the analysis process does, works on rows as they come; `build` reads it
        all). Returns the rows added. Raises InputBroken when the reader stops on the input."""
        if self.done or self.closed:
            return 0
        before = len(self)
        target = self._pos + (max_bytes if max_bytes is not None else DEFAULT_STEP)
        items = self._items
        context = self.fmt.context
        conn_idx = self._conn_idx
        add_line, add_seq, add_meta = self.linenos.append, self.seqs.append, self.meta.append
        try:
            while True:
                for _ in range(PULL_STEP):
                    rec = next(items, None)
                    if rec is None:
                        self.done = True
                        break
                    ci = conn_idx.get(rec.conn)
                    if ci is None:
                        ci = conn_idx[rec.conn] = len(self.conns)
                        self.conns.append(rec.conn)
                    bits = context(rec)
                    add_line(rec.line)
                    add_seq(rec.seq)
                    add_meta(ci << CONTEXT_BITS | bits)
                self._pos = self._inp.position() if not self.done else self.size
                if self.done or self._pos >= target or self.closed:
                    break
        except IndexReset:
            raise
        except Exception as exc:  # InputError, OSError: the input cannot be read on
            self.done = True
            raise InputBroken(str(exc)) from None
        finally:
            self._sync_src()
            # rows become visible once their lines are indexed: a reader (the screen) never has to
            # index the input itself, which this thread is doing
            self._rows = len(self.meta)
        return len(self) - before

    def _sync_src(self) -> None:
        """Index the input's lines at least as far as the reader has read (all of them at the end,
        however far the file has grown meanwhile)."""
        src = self.src
        while self.done or src._probe < self._pos:
            probe = src._probe
            src.update(max_bytes=CHUNK)  # (it looks at the file's size each time)
            if src._probe == probe or (self.done and src.complete):
                break

    def build(self) -> int:
        """Read the whole input."""
        added = 0
        while not self.done:
            added += self.update(1 << 62)
        return added

    @property
    def complete(self) -> bool:
        return self.done

    @property
    def progress(self) -> float:
        return 1.0 if self.done or not self.size else min(1.0, self._pos / self.size)

    # -- reading -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._rows + 1

    @property
    def ends(self) -> range:
        """As LineIndex.ends for `len`: every row is complete (none is a torn last line)."""
        return range(len(self))

    def record(self, row: int, line: bytes | None = None) -> Record:
        """Row ROW's record (row >= 1), made from its line (read when not given) and context."""
        i = row - 1
        if i < 0 or i >= self._rows:
            raise IndexError(row)
        meta = self.meta[i]
        n = self.linenos[i]
        if line is None:
            line = self.src.line(n - 1)
        if n == 1 and line.startswith(BOM):  # the reader started past it
            line = line[len(BOM) :]
        ctx = meta & ((1 << CONTEXT_BITS) - 1)
        return self.fmt.rebuild(line, n, self.path, self.seqs[i], self.conns[meta >> CONTEXT_BITS], ctx)

    def _row_bytes(self, row: int) -> bytes:
        if row == 0:
            return self.header
        cache = self._cache  # (a plain dict: the screen's and the filters' threads share it)
        got = cache.get(row)
        if got is None:
            got = record_line(self.record(row))
            if len(cache) >= CACHE_ROWS:
                cache.clear()
            cache[row] = got
        return got

    def length(self, row: int) -> int:
        return len(self._row_bytes(row))

    def line(self, row: int, limit: int | None = None) -> bytes:
        data = self._row_bytes(row)
        return data if limit is None or len(data) <= limit else data[:limit]

    def read_part(self, row: int, offset: int, n: int) -> bytes:
        """N bytes of a row's line from OFFSET (the body screen's raw pages)."""
        return self._row_bytes(row)[offset : offset + n]

    def lines(self, first: int, last: int, block: int = 4096) -> Iterator[tuple[int, bytes]]:
        """(row, capture line) for rows first..last-1 (sequential scans: filters, the analysis): the
        input's lines are read a block at a time (rows follow their lines but for a few settled ones)."""
        first, last = max(0, first), min(last, len(self))
        if first == 0 and last > 0:
            yield 0, self.header
            first = 1
        linenos = self.linenos
        row = first
        while row < last:
            stop = min(last, row + block)
            nums = linenos[row - 1 : stop - 1]
            lo, hi = min(nums), max(nums)
            got: dict[int, bytes] = {}
            if hi - lo < 4 * block and hi - 1 < len(self.src):
                got = {n + 1: line for n, line in self.src.lines(lo - 1, hi)}
            for r in range(row, stop):
                yield r, record_line(self.record(r, got.get(linenos[r - 1])))
            row = stop

    def close(self) -> None:
        self.src.close()
        self.fd = -1
        self.closed = True
        close = getattr(self._items, "close", None)
        if close is not None:
            try:
                close()
            except ValueError:  # (being read by `update` in another thread: it ends at its next step)
                pass
        try:
            self._inp.fh.close()
        except OSError:
            pass

    def __enter__(self) -> RecordIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _detected(path: str) -> InputFormat | None:
    from tracer.inputs import HEAD_BYTES, detect

    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return None
    return detect(head.removeprefix(BOM))


def lazy_rows(inp: OpenInput, fmt: str | None = None) -> bool:
    """Whether the viewer reads INP's rows lazily: a regular file of a format with lazy rows, read
    as detected (the analysis process, which opens it by path with `open_rows`, detects it too)."""
    if inp.format.rebuild is None or inp.format.context is None or inp.size is None:
        return False
    return fmt is None or _detected(inp.path) is inp.format


def open_rows(path: str, *, final: bool = True) -> LineIndex | RecordIndex:
    """The rows of what the viewer opened: a capture's lines, or another input's lazy rows (never
    for a followed file: a capture being written can look like NDJSON until its header is)."""
    fmt = _detected(path) if final else None
    if fmt is not None and fmt.rebuild is not None and fmt.name != "capture":
        from tracer.inputs import open_input

        inp = open_input(path)
        if lazy_rows(inp):
            return RecordIndex(inp)
        inp.fh.close()
    return LineIndex(path, final=final)
