"""A byte-offset index of the lines of a capture file, so line N is one seek + read away.

The viewer never holds a capture in memory: it keeps 8 bytes per line (where each line ends) and
reads the few lines on screen when it draws them. The index is built in chunks (so a caller can
report progress and show the first screen long before a 1 GB file is indexed) and extended
incrementally when the file grows (follow mode).

Rows are lines, one for one: row 0 is the header line. A line is complete when its `\\n` has been
written; an unterminated last line (a writer still writing, or killed mid-record) becomes a row
only when the index is `final` (the file is not followed), exactly like the capture reader's
"torn last line".

Thread use: one thread extends the index while others read rows. Reads use `os.pread` (no shared
file position) and the offsets array only grows, so readers need no lock.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_right
from collections.abc import Iterator

CHUNK = 8 << 20  # bytes read per step while indexing


class IndexReset(Exception):
    """The file shrank below what was indexed (truncated or replaced): the index is stale."""


class LineIndex:
    # bytes the viewer indexes before its first screen, then at each step (finding newlines is cheap)
    FIRST_STEP = CHUNK
    STEP = CHUNK

    def __init__(self, path: str | os.PathLike[str], *, final: bool = True):
        self.path = os.fspath(path)
        self.fd = os.open(self.path, os.O_RDONLY)
        self.final = final
        # ends[i]: the offset just past line i's "\n" (the start of line i+1).
        self.ends = array("q")
        self.scanned = 0  # bytes known to hold only complete lines (== ends[-1] or 0)
        self._probe = 0  # how far newline search has looked (a long line spans several chunks)
        self.size = 0  # file size at the last update

    # -- building ----------------------------------------------------------------------------

    def update(self, max_bytes: int | None = None) -> int:
        """Index what the file holds now (at most `max_bytes` more). Returns the new row count
        added. Raises IndexReset when the file shrank."""
        size = os.fstat(self.fd).st_size
        if size < self.scanned:
            raise IndexReset(f"{self.path} shrank from {self.scanned} to {size} bytes")
        before = len(self)
        self.size = size
        budget = max_bytes if max_bytes is not None else size
        ends = self.ends
        append = ends.append
        while self._probe < size and budget > 0:
            want = min(CHUNK, size - self._probe, budget)
            chunk = os.pread(self.fd, want, self._probe)
            if not chunk:
                break
            base = self._probe
            find = chunk.find
            i = find(b"\n")
            while i >= 0:
                append(base + i + 1)
                i = find(b"\n", i + 1)
            self._probe = base + len(chunk)
            budget -= len(chunk)
        if ends:
            self.scanned = ends[-1]
        return len(self) - before

    def build(self) -> int:
        """Index the whole file as it is now."""
        return self.update()

    @property
    def complete(self) -> bool:
        """Everything the file held at the last update has been indexed."""
        return self._probe >= self.size

    @property
    def progress(self) -> float:
        return 1.0 if not self.size else min(1.0, self._probe / self.size)

    # -- reading -----------------------------------------------------------------------------

    def _has_tail(self) -> bool:
        return self.final and self._probe >= self.size and self.size > self.scanned

    def __len__(self) -> int:
        return len(self.ends) + (1 if self._has_tail() else 0)

    def span(self, row: int) -> tuple[int, int]:
        """(start, end) byte offsets of a row's content, without its newline."""
        ends = self.ends
        n = len(ends)
        if row < 0:
            raise IndexError(row)
        start = ends[row - 1] if row else 0
        if row < n:
            return start, ends[row] - 1
        if row == n and self._has_tail():
            return start, self.size
        raise IndexError(row)

    def length(self, row: int) -> int:
        start, end = self.span(row)
        return end - start

    def line(self, row: int, limit: int | None = None) -> bytes:
        """The bytes of a row (without "\\n"); at most `limit` bytes when given."""
        start, end = self.span(row)
        n = end - start
        if limit is not None and n > limit:
            n = limit
        return os.pread(self.fd, n, start)

    def read_part(self, row: int, offset: int, n: int) -> bytes:
        """N bytes of a row from OFFSET (a page of a line too long to show whole)."""
        start, end = self.span(row)
        offset = max(0, min(offset, end - start))
        return os.pread(self.fd, max(0, min(n, end - start - offset)), start + offset)

    def lines(self, first: int, last: int, block: int = CHUNK) -> Iterator[tuple[int, bytes]]:
        """(row, bytes) for rows first..last-1, read in large blocks (sequential scans)."""
        ends = self.ends
        row = first
        while row < last:
            start = self.span(row)[0]
            # rows whose end fits in the block (always at least one row)
            lim = min(last, len(ends))
            stop = max(row + 1, bisect_right(ends, start + block, row, lim)) if row < lim else row + 1
            end = self.span(stop - 1)[1]
            buf = os.pread(self.fd, end - start, start)
            prev = start
            for r in range(row, stop):
                e = ends[r] - 1 if r < len(ends) else end
                yield r, buf[prev - start : e - start]
                prev = e + 1
            row = stop

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> LineIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
