"""The last rows of an input, read ahead of the sequential pass, so that `G` shows the end at once.

A host log's or an NDJSON file's rows are exact only in order: an answer moved after its request
renumbers every later row, a restart names the connections after it, an NDJSON response takes the
opposite direction of its request (tracer.inputs.lazy). So the viewer's `G` used to wait for the
reader to reach the end of the file. Here the same reader is run on the last TAIL_BYTES of the file
alone, from the first line that starts in that window (a resynchronisation point: the readers
decide on one line at a time, the state they keep only refines what a line says): what the end of
the input holds is shown at once, and marked provisional.

What such a row cannot know is what came before the window: its seq (0 here: pending), its
connection's generation (a server restarted earlier is `name#N`, here `name`), whether it is the
first message of its stream (MCP401's offset 0), an NDJSON response's direction when its request
is before the window (a server's, here). Its payload, time, line number and kind are the input's.
The viewer shows these rows apart (no row number, no analysis) and drops them once the sequential
pass has reached the end: the rows it shows then are the exact ones (lint's).
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass

from tracer.capture import ReadProblem
from tracer.inputs.lazy import BOM, record_line
from tracer.inputs.settle import settle
from tracer.model import RecordType

TAIL_BYTES = 256 << 10  # of the input read ahead: a few screens of rows at any line length
TAIL_ROWS = 512  # provisional rows kept at most (the last ones)
COUNT_BLOCK = 8 << 20  # bytes read at a time while counting the lines before the window


@dataclass(slots=True)
class Tail:
    """Provisional rows: capture lines (as a conversion writes them, seq 0) of the input's end."""

    lines: list[bytes]
    offset: int  # where in the input the window's first whole line starts
    first_line: int  # that line's number (1-based)
    size: int  # the input's size when it was read


def _lines_before(fd: int, offset: int) -> int:
    """Newlines in the first OFFSET bytes (C speed: ~0.1 s a GB warm)."""
    n = pos = 0
    while pos < offset:
        chunk = os.pread(fd, min(COUNT_BLOCK, offset - pos), pos)
        if not chunk:
            break
        n += chunk.count(b"\n")
        pos += len(chunk)
    return n


def read_tail(path: str, fmt, *, nbytes: int = TAIL_BYTES, rows: int = TAIL_ROWS) -> Tail | None:
    """The provisional last rows of PATH read as FMT (an InputFormat with lazy rows), or None when
    there are none to show (no line starts in the window, nothing but read problems, an error)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        start = max(0, size - nbytes)
        window = os.pread(fd, size - start, start)
        if start > 0:
            nl = window.find(b"\n")
            if nl < 0:  # one line longer than the window: its start is unknown here
                return None
            window = window[nl + 1 :]
            start += nl + 1
        elif window.startswith(BOM):
            window = window[len(BOM) :]
        first_line = _lines_before(fd, start) + 1
    except OSError:
        return None
    finally:
        os.close(fd)
    items = fmt.read(io.BufferedReader(io.BytesIO(window)), path)  # type: ignore[arg-type]
    if not fmt.exact_order:
        items = settle(items)
    kept: list[bytes] = []
    try:
        for rec in items:
            if isinstance(rec, ReadProblem) or rec.type is RecordType.HEADER:
                continue
            rec.seq = 0  # (pending: the sequential pass numbers it)
            rec.line += first_line - 1
            kept.append(record_line(rec))
            if len(kept) > 2 * rows:
                del kept[:-rows]
    except Exception:  # a reader is lint's and never raises on content; this is a preview only
        return None
    if not kept:
        return None
    return Tail(kept[-rows:], start, first_line, size)
