"""Incremental framers: newline-delimited JSON (stdio) and Server-Sent Events (HTTP).

Both are pure: they are fed copies of the bytes that crossed the wire, in whatever chunks they came,
and return frames. They never decode more than a frame and never change what they were given.
"""

from __future__ import annotations

from dataclasses import dataclass, field

RETRY_MAX = (1 << 63) - 1  # the largest SSE retry a capture stores (its integers are int64)
# What one SSE event may hold in memory (its data, and a line still without its end), the same cap
# as a stdio line (LineFramer.max_line): a server that never ends an event, or a line, must not take
# the proxy's memory. The bytes are still relayed whole; the capture keeps this much and the count.
SSE_EVENT_MAX = 64 * 1024 * 1024
SSE_COMMENTS_MAX = 1024  # comment lines kept per event (keep-alives of an event that never ends)


@dataclass(slots=True)
class Frame:
    data: bytes  # the line without its "\n" (a "\r" before it is kept)
    offset: int  # byte offset of the first byte of the line in the stream
    eol: bool = True  # False: the stream ended before a "\n"
    cut: int = 0  # bytes of the line not kept (over LineFramer.max_line); the line is len(data) + cut long


class LineFramer:
    """Splits a byte stream into lines. `feed` returns complete lines; `finish` the unterminated tail.

    `max_line` caps what is buffered for one line: a longer line is still framed (its length and
    offset are exact) but only its first `max_line` bytes are kept, and `truncated` counts such lines.
    """

    __slots__ = ("_buf", "_dropped", "_resync", "_start", "discarded", "max_line", "truncated")

    def __init__(self, max_line: int = 64 * 1024 * 1024):
        self._buf = bytearray()
        self._start = 0  # stream offset of _buf[0]
        self.max_line = max_line
        self.truncated = 0
        self._dropped = 0  # bytes of the current line not kept (over max_line)
        self._resync = False  # after skip(): discard up to the next newline
        self.discarded = 0  # bytes of lines broken by skip() that were thrown away

    def feed(self, chunk: bytes) -> list[Frame]:
        frames: list[Frame] = []
        if not chunk:
            return frames
        pos = 0
        if self._resync:
            nl = chunk.find(b"\n")
            if nl < 0:
                self._start += len(chunk)
                self.discarded += len(chunk)
                return frames
            self._start += nl + 1
            self.discarded += nl + 1
            self._resync = False
            pos = nl + 1
        n = len(chunk)
        buf = self._buf
        max_line = self.max_line
        while pos < n:
            nl = chunk.find(b"\n", pos)
            if nl < 0:
                self._keep(chunk[pos:])
                break
            if not buf and not self._dropped and nl - pos <= max_line:
                # the common case, a whole line inside one chunk: one copy, no buffering
                frames.append(Frame(chunk[pos:nl], self._start))
                self._start += nl - pos + 1
                pos = nl + 1
                continue
            self._keep(chunk[pos:nl])
            line_len = len(self._buf) + self._dropped
            frames.append(Frame(bytes(self._buf), self._start, cut=self._dropped))
            if self._dropped:
                self.truncated += 1
            self._start += line_len + 1
            self._buf.clear()
            self._dropped = 0
            pos = nl + 1
        return frames

    def _keep(self, part: bytes) -> None:
        room = self.max_line - len(self._buf)
        if len(part) <= room:
            self._buf += part
        else:
            if room > 0:
                self._buf += part[:room]
            self._dropped += len(part) - max(room, 0)

    def finish(self) -> Frame | None:
        """The bytes after the last newline, if any (a message missing its final newline)."""
        if not self._buf and not self._dropped:
            return None
        frame = Frame(bytes(self._buf), self._start, eol=False, cut=self._dropped)
        self._start += len(self._buf) + self._dropped
        self._buf.clear()
        self._dropped = 0
        return frame

    def skip(self, n: int) -> int:
        """`n` bytes of the stream were not seen (a capture that could not keep up dropped them).
        Offsets stay exact; the line the gap falls in cannot be framed, so its bytes up to the next
        newline are discarded. Returns how many buffered bytes of that broken line were dropped."""
        lost = len(self._buf) + self._dropped
        self.discarded += lost
        self._start += lost + n
        self._buf.clear()
        self._dropped = 0
        self._resync = True
        return lost

    @property
    def pending(self) -> int:
        return len(self._buf) + self._dropped


@dataclass(slots=True)
class SseEvent:
    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None
    offset: int = 0  # stream offset of the event's first line
    has_data: bool = True
    comments: list[str] = field(default_factory=list)
    cut: int = 0  # bytes of the event's data not kept (over SSE_EVENT_MAX)


class SseParser:
    """WHATWG event-stream parser, incremental over bytes; handles CR, LF and CRLF line endings,
    chunks split mid-line and mid-UTF-8 sequence (lines are decoded only when complete)."""

    __slots__ = (
        "_buf",
        "_comments",
        "_cut",
        "_data",
        "_ev_start",
        "_event",
        "_id",
        "_line_cut",
        "_line_start",
        "_offset",
        "_pending_cr",
        "_retry",
        "_size",
        "_started",
        "last_id",
        "max_event",
    )

    def __init__(self, max_event: int = SSE_EVENT_MAX) -> None:
        self.max_event = max_event
        self._buf = bytearray()
        self._offset = 0  # stream offset of _buf[0]
        self._line_cut = 0  # bytes dropped from the end of the line at _buf[0] (it outgrew max_event)
        self._data: list[str] = []
        self._size = 0  # bytes (UTF-8) the event's data holds so far (with its newlines)
        self._cut = 0  # bytes of the event's data not kept
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None
        self._ev_start: int | None = None
        self._comments: list[str] = []
        self._started = False
        self._pending_cr = False
        self.last_id: str | None = None

    def feed(self, chunk: bytes) -> list[SseEvent]:
        out: list[SseEvent] = []
        if self._pending_cr and chunk.startswith(b"\n"):
            # the "\n" of a CRLF split across chunks
            chunk = chunk[1:]
            self._offset += 1
        self._pending_cr = False
        self._buf += chunk
        buf = self._buf
        pos = 0
        while True:
            cr = buf.find(b"\r", pos)
            lf = buf.find(b"\n", pos)
            if cr < 0 and lf < 0:
                break
            if cr >= 0 and (lf < 0 or cr < lf):
                end = cr
                if cr + 1 < len(buf):
                    nxt = cr + 2 if buf[cr + 1] == 0x0A else cr + 1
                else:
                    nxt = cr + 1
                    self._pending_cr = True
            else:
                end = lf
                nxt = lf + 1
            line_cut = self._line_cut
            if line_cut and end - pos > self.max_event:
                # (the line outgrew the cap: its start is kept; what came after the bytes cut from it
                # is cut as well, not spliced onto that start)
                line = bytes(buf[pos : pos + self.max_event])
                ev = self._line(line, self._offset + pos, line_cut + end - pos - self.max_event)
            else:
                line = bytes(buf[pos:end])
                ev = self._line(line, self._offset + pos, line_cut)
            if line_cut:  # (the bytes dropped from that line came before what follows it)
                self._line_cut = 0
                self._offset += line_cut
            if ev is not None:
                out.append(ev)
            pos = nxt
        if pos:
            del buf[:pos]
            self._offset += pos
        over = len(buf) - self.max_event
        if over > 0:  # a line without its end outgrew the cap: keep its start, count the rest
            del buf[self.max_event :]
            self._line_cut += over
        return out

    def _line(self, raw: bytes, offset: int, line_cut: int = 0) -> SseEvent | None:
        line = raw.decode("utf-8", "replace")
        if not self._started:
            self._started = True
            if line.startswith("\ufeff"):
                line = line[1:]
        if line == "":
            return self._dispatch()
        if self._ev_start is None:
            self._ev_start = offset
        if line.startswith(":"):
            if len(self._comments) < SSE_COMMENTS_MAX:
                self._comments.append(line[1:])
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            room = self.max_event - self._size
            # the cap is in bytes of UTF-8 (a character may take four), as the capture stores them
            size = len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
            if not self._cut and size < room:
                self._data.append(value)
                self._size += size + 1  # (and its newline: many empty lines count too)
            else:  # past the cap: the rest of the event's data is counted, not kept
                keep = ""
                if not self._cut and room > 0:  # (its start, up to the cap, whole characters)
                    keep = value.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore")
                self._size = self.max_event
                if keep:  # (the newline before this line is in the data kept)
                    self._data.append(keep)
                    self._cut += size - len(keep.encode("utf-8", "surrogatepass"))
                else:  # (this line and the newline before it are cut)
                    self._cut += size + 1
            self._cut += line_cut
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
                self.last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            # ASCII digits only, as the SSE spec says (str.isdigit also takes '²', which int()
            # refuses); a value past what a capture stores (int64) keeps its meaning, "wait that
            # long", as the largest one (int() of thousands of digits raises besides)
            self._retry = int(value) if len(value) < 19 else RETRY_MAX
        return None

    def _dispatch(self) -> SseEvent | None:
        start = self._ev_start if self._ev_start is not None else self._offset
        has_data = bool(self._data)
        ev = None
        if has_data or self._id is not None or self._retry is not None or self._event:
            ev = SseEvent(
                data="\n".join(self._data),
                event=self._event or "message",
                id=self._id,
                retry=self._retry,
                offset=start,
                has_data=has_data,
                comments=self._comments,
                cut=self._cut,
            )
        self._data = []
        self._size = 0
        self._cut = 0
        self._event = ""
        self._id = None
        self._retry = None
        self._ev_start = None
        self._comments = []
        return ev

    def finish(self) -> SseEvent | None:
        """At end of stream an unterminated event is discarded (per the spec); report it if any."""
        if self._buf:
            self.feed(b"\n")
        if self._data:
            return SseEvent(
                data="\n".join(self._data),
                event=self._event or "message",
                id=self._id,
                offset=self._ev_start or 0,
                has_data=True,
                cut=self._cut,
            )
        return None
