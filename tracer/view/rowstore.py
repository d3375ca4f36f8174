"""The files the viewer's analysis writes: `rows.bin` (one ROW per capture row, tracer.view.rowformat)
and `details.jsonl` (one line per stored details record, tracer.view.details).

New rows are buffered and written in one positional write per flush; a row already written is
patched in place (a request learns its partner when the answer comes), after the rows it may point
at, at the same flush, so a reader that re-reads the rows it shows sees the patch and never a row
beyond what it was told is written. Details are appended; a patched row points at its newer line.
"""

from __future__ import annotations

import os
from typing import Any, BinaryIO

from tracer.safejson import dumps as safe_dumps
from tracer.view.details import load
from tracer.view.rowformat import ROW, ROW_SIZE, read_line_at


class RowStore:
    def __init__(self, workdir: str):
        self.rows_fd = os.open(os.path.join(workdir, "rows.bin"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        fd = os.open(os.path.join(workdir, "details.jsonl"), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self.details: BinaryIO = os.fdopen(fd, "w+b")
        self.det_pos = 0
        self.flushed = 0  # rows written to rows.bin
        self.buf = bytearray()
        self.patches: dict[int, bytes] = {}  # written rows changed since the last flush
        self.patched = False  # a written row changed since the last flush

    # -- rows --------------------------------------------------------------------------------

    def put(self, row: int, fields: list[Any]) -> None:
        self.put_packed(row, ROW.pack(*fields))

    def put_packed(self, row: int, data: bytes) -> None:
        """put() of a row already packed (ROW)."""
        if row >= self.flushed:
            at = (row - self.flushed) * ROW_SIZE
            if at == len(self.buf):
                self.buf += data
            else:
                self.buf[at : at + ROW_SIZE] = data
        else:
            self.patches[row] = data
            self.patched = True

    def get(self, row: int) -> list[Any]:
        if row >= self.flushed:
            return list(ROW.unpack_from(self.buf, (row - self.flushed) * ROW_SIZE))
        data = self.patches.get(row)
        if data is None:
            data = os.pread(self.rows_fd, ROW_SIZE, row * ROW_SIZE)
        return list(ROW.unpack(data))

    @property
    def buffered(self) -> int:
        return len(self.buf) // ROW_SIZE

    def flush(self) -> None:
        """Write the buffered rows (after the details they point at, so a reader never follows an
        offset past the end of details.jsonl)."""
        self.details.flush()
        if self.buf:
            os.pwrite(self.rows_fd, bytes(self.buf), self.flushed * ROW_SIZE)
            self.flushed += len(self.buf) // ROW_SIZE
            self.buf.clear()
        if self.patches:
            fd = self.rows_fd
            for row, data in self.patches.items():
                os.pwrite(fd, data, row * ROW_SIZE)
            self.patches.clear()

    # -- details -----------------------------------------------------------------------------

    def write_details(self, d: Any) -> int:
        """Append a details record; returns its offset."""
        data = safe_dumps(d) + b"\n"  # (ids beyond 64 bits, lone surrogates in messages: see safejson)
        off = self.det_pos
        self.details.write(data)
        self.det_pos += len(data)
        return off

    def read_details(self, off: int) -> Any:
        if off < 0:
            return None
        self.details.flush()
        line = read_line_at(self.details.fileno(), off, 4096)
        return load(line) if line else None

    def close(self) -> None:
        try:
            self.details.close()
        finally:
            os.close(self.rows_fd)
