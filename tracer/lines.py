"""The longest line any reader holds, and the writer's promise never to write a longer one.

Every input mcptrace reads is made of lines (capture records, NDJSON messages, host log entries);
a reader that holds a line whole holds as much memory as the line is long, and a line that never
ends (a log whose writer hangs mid-line, a hostile file) takes it all. A line longer than
`LINE_MAX` is therefore a broken line: reported with its number and its first bytes, the rest of
it read past without being kept, and reading goes on at the next line.

Real traffic never comes near it. Peers cap their own messages far below: the TypeScript SDK
(1.32) refuses a stdio line over 10 MiB and an HTTP+SSE POST over 4 MiB, the Python SDK (2.3) an
HTTP request body over 4 MiB; a tool result with a base64 image is a few MB to tens of MB. The tee
keeps at most 64 MiB of one line (tracer.framing.LineFramer), whose capture record (JSON-escaped:
a `"` or `\\` takes two bytes) stays within the default 128 MiB; the capture writer shortens a
record whose line would be longer (counting the bytes it did not keep in `data.cut`, as the tee
does), so every capture line it writes is read back. MCPTRACE_MAX_LINE_MB raises the cap (or
lowers it, to no less than `LINE_MAX_MIN_MB`) for the readers and the writer alike; helper
processes inherit it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from functools import partial
from typing import IO

import orjson

ENV = "MCPTRACE_MAX_LINE_MB"
LINE_MAX_DEFAULT_MB = 128
# The smallest cap: lint --jobs' router reads 1 MiB blocks (a line within a block is never longer
# than the cap), and a run of tee lines is escaped from a chunk of at most 1 MiB (at most six bytes
# a byte: \u00XX), so no cap below this changes what those paths see.
LINE_MAX_MIN_MB = 8
EVIDENCE_BYTES = 80  # of a long line's start, shown in its problem


def _line_max() -> int:
    text = os.environ.get(ENV, "").strip()
    if not text:
        return LINE_MAX_DEFAULT_MB << 20
    try:
        mb = int(text)
    except ValueError:
        mb = -1
    if mb < LINE_MAX_MIN_MB:
        print(
            f"mcptrace: {ENV}={text!r} is not a whole number of MiB of at least {LINE_MAX_MIN_MB}; "
            f"using {LINE_MAX_DEFAULT_MB}",
            file=sys.stderr,
        )
        return LINE_MAX_DEFAULT_MB << 20
    return mb << 20


LINE_MAX = _line_max()  # bytes of a line, without its newline


class LongLine:
    """A line longer than the cap, in place of its bytes: what a reader reports for it. Not bytes,
    so a parser given it fails (orjson raises JSONDecodeError) and the reader's broken-line path
    reports it, at no cost to the lines that fit. `ended`: its newline was read already (else
    `skip_rest` reads past the rest, once the problem is said)."""

    __slots__ = ("cap", "ended", "head")

    def __init__(self, head: bytes | bytearray, cap: int, ended: bool = False):
        self.head = bytes(head[:EVIDENCE_BYTES])
        self.cap = cap
        self.ended = ended

    def message(self) -> str:
        start = self.head.decode("utf-8", "replace")
        return (
            f"a line longer than {self.cap >> 20:,} MiB (the line cap; {ENV} raises it): not read, "
            f"reading goes on after it; it starts {start!r}"
        )


# Lines are read a piece of at most this much at a time: a longer one is gathered piece by piece
# into one buffer that grows in place (readline's own join of a long line held it twice, and an
# endless line twice the cap), so no reader holds much more than the cap. Below the smallest cap.
PIECE = 1 << 20


def skip_rest(fh: IO[bytes]) -> None:
    """Read past the rest of a long line of FH, keeping none of it: up to its newline, or to the
    end of the file (a piece at a time: what is held stays small however long the line is)."""
    readline = fh.readline
    while True:
        more = readline(PIECE)
        if not more or more[-1] == 10:
            return


def capped_readline(fh: IO[bytes]) -> tuple[object, int]:
    """FH's `readline` bound to read a piece of a line at most, and that limit: a line it returns
    that is `limit` long without a newline at its end goes on (`rest_of_line`)."""
    limit = PIECE + 1
    return partial(fh.readline, limit), limit


def rest_of_line(fh: IO[bytes], start: bytes) -> bytearray | LongLine:
    """The line of FH that begins with START (a piece `capped_readline` read, no newline at its
    end), with its newline when it has one; a `LongLine` once it is past the cap."""
    cap = LINE_MAX
    buf = bytearray(start)
    readline = fh.readline
    while True:
        more = readline(PIECE)
        if not more:
            return buf  # (the file ends without a newline: a torn last line)
        ended = more[-1] == 10
        if len(buf) + len(more) - ended > cap:
            return LongLine(buf, cap, ended)
        buf += more
        if ended:
            return buf


def iter_lines(fh: IO[bytes], first_line: int = 1) -> Iterator[tuple[int, bytes | LongLine, bool]]:
    """(line number, content without newline, had_newline) for every line of a binary file; a line
    longer than LINE_MAX is a `LongLine` (had_newline False), read past without being kept."""
    n = first_line - 1
    readline, limit = capped_readline(fh)
    for raw in iter(readline, b""):
        n += 1
        if len(raw) == limit and raw[-1] != 10:
            line = rest_of_line(fh, raw)
            if type(line) is LongLine:
                yield n, line, False  # (said before the rest is read: a followed file's line may
                if not line.ended:  # not end for a long time)
                    skip_rest(fh)
                continue
            raw = bytes(line)
        if raw[-1] == 10:
            yield n, raw[:-1], True
        else:
            yield n, raw, False


class LongRow(bytes):
    """A row whose line is past the line cap, in place of its bytes: its first bytes,
    which no parser takes for a record, so the row is a broken one that says why (as lint says of
    the line) and the analysis never holds the line."""

    def message(self) -> str:
        return LongLine(self, LINE_MAX).message()


def torn_reason(line: bytes) -> str:
    """Why an unterminated last line is not a record: a writer stopped mid-record, unless the file's
    lines end in a carriage return alone (an editor or a tool rewrote them), which makes the whole
    file one "line" that no stop explains."""
    head = line.split(b"\r", 1)
    if len(head) == 2 and head[1].strip():
        try:
            if type(orjson.loads(head[0])) is dict:
                return (
                    "the lines end in a carriage return alone (a capture's end in a line feed), so the "
                    "file reads as one unterminated line: convert its line ends (tr '\\r' '\\n')"
                )
        except orjson.JSONDecodeError:
            pass
    return "torn last line (the writer was stopped mid-record)"
