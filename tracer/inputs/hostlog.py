"""MCP host log files (Claude Desktop's `mcp.log` / `mcp-server-NAME.log` and look-alikes).

Lines read `2025-06-13T14:44:29.945Z [info] [my-server] Message from client: {...}` (older versions
put `[my-server] [info]` the other way round). Message lines become envelopes; every other line is
kept as a `host-log` event (so is a "Message from" line whose payload is not JSON: it is never a
message). Each server name is a connection; a server's first line and each restart ("Initializing
server...") start its stream (a restart is a new connection), which the start-of-session rules see
as a stdio capture's byte 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from datetime import datetime
from functools import partial
from typing import IO

import orjson

from tracer.capture import ReadProblem
from tracer.lines import LongLine, iter_lines
from tracer.model import Direction, Record, RecordType

LEVELS = frozenset({"info", "error", "warn", "warning", "debug", "trace", "notice", "fatal"})
LINE_RE = re.compile(
    rb"^(?P<ts>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s+"
    rb"\[(?P<a>[^\]]*)\]\s+\[(?P<b>[^\]]*)\]\s?(?P<rest>.*)$"
)
MSG_RE = re.compile(rb"^Message from (?P<who>client|server):\s?(?P<json>.*)$")
RESTART_RE = re.compile(rb"Initializing server", re.I)
_decoder = json.JSONDecoder()
_loads = orjson.loads


def sniff(head: bytes) -> bool:
    for line in head.split(b"\n")[:50]:
        m = LINE_RE.match(line.rstrip(b"\r"))
        if m and (
            m.group("a").lower().decode("utf-8", "replace") in LEVELS
            or m.group("b").lower().decode("utf-8", "replace") in LEVELS
        ):
            return True
    return False


_SECONDS: dict[bytes, int | None] = {}  # b"YYYY-MM-DDTHH:MM:SS<zone>" -> seconds (None: no time)
_SECONDS_CAP = 4096  # log lines share their second with many others: a small cache saves the parse
_UNSEEN = object()


def _seconds(stamp: bytes) -> int | None:
    """Whole seconds since the epoch of a stamp without its fraction (None: not a time)."""
    text = stamp.decode("ascii").replace(" ", "T")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        return int(datetime.fromisoformat(text).timestamp())
    except ValueError:
        return None


def _ts_ns(ts: bytes) -> int:
    """Nanoseconds since the epoch, exact to the log's own digits: the fraction is added as an
    integer (a float of the whole time loses the last millisecond digit to rounding). TS is what
    LINE_RE matched: 19 characters of date and time, maybe a fraction, maybe a zone."""
    tail = ts[19:]
    if tail[:1] == b".":
        zone = tail[1:].lstrip(b"0123456789")
        frac_ns = int((tail[1 : len(tail) - len(zone)] + b"000000000")[:9])
    else:
        zone, frac_ns = tail, 0
    stamp = ts[:19] + zone
    secs = _SECONDS.get(stamp, _UNSEEN)
    if secs is _UNSEEN:
        secs = _seconds(stamp)
        if len(_SECONDS) >= _SECONDS_CAP:
            _SECONDS.clear()
        _SECONDS[stamp] = secs
    return 0 if secs is None else secs * 1_000_000_000 + frac_ns


# A payload that is one JSON value and nothing else (or that and the suffix Claude Desktop adds) is
# read by orjson, which accepts no more than the standard library's decoder does; orjson refuses
# the rest (NaN, integers beyond 64 bits, text after the value...), which the decoder then reads.
# (Deeply nested payloads go to the decoder straight away: its recursion limit is part of what a
# payload it cannot read means.)
_SUFFIX = b" { metadata: undefined }"
_JSON_WS = b" \t\n\r"
_FAST_NESTING = 200


def _json_part(payload: bytes) -> bytes | None:
    """The JSON text at the start of the payload (hosts append things like `{ metadata: undefined }`),
    or None when the payload does not start with JSON: such a line is host text, never a message."""
    if payload.count(b"{") + payload.count(b"[") < _FAST_NESTING:
        for value in (payload, payload[: -len(_SUFFIX)] if payload.endswith(_SUFFIX) else None):
            if value is None:
                break
            try:
                _loads(value)
            except orjson.JSONDecodeError:
                continue
            return value.strip(_JSON_WS)
    try:
        text = payload.decode("utf-8").lstrip()
    except UnicodeDecodeError:
        return None
    try:
        _, end = _decoder.raw_decode(text)
    except (ValueError, RecursionError):  # nested past the decoder's limit: not a payload it reads
        return None
    return text[:end].encode("utf-8")


def _restarts(rest: bytes) -> bool:
    """RESTART_RE.search(rest), sooner: a case-insensitive bytes pattern folds ASCII only, as
    bytes.lower() does, and a plain search of the lowered line is several times cheaper."""
    return b"initializing server" in rest.lower()


def _conn(server: str, generation: int) -> str:
    return server if generation <= 1 else f"{server}#{generation}"


class _Streams:
    """Which connection each server's lines belong to, and whether the log holds the start of it.

    A server's first line in the log, and each "Initializing server..." line, start its stream: a
    restart is a new connection (the earlier one is closed). The first message each way after a
    start gets offset 0, the mark the start-of-session rules read (MCP401) as for a stdio capture
    whose stream begins at byte 0."""

    def __init__(self) -> None:
        self.generation: dict[str, int] = {}
        self.used: set[str] = set()  # servers whose current connection carried a line already
        self.fresh: dict[str, set[Direction]] = {}  # server -> directions whose first message is pending

    def line(self, server: str, restart: bool) -> tuple[str, str | None]:
        """(the connection of this line, the connection it closes or None)."""
        gen = self.generation.get(server, 0)
        closed = None
        if gen == 0 or (restart and server in self.used):
            if gen:
                closed = _conn(server, gen)
            gen += 1
            self.generation[server] = gen
            self.used.discard(server)
            self.fresh[server] = {Direction.C2S, Direction.S2C}
        if not restart:
            self.used.add(server)
        return _conn(server, gen), closed

    def offset(self, server: str, direction: Direction) -> int | None:
        fresh = self.fresh.get(server)
        if fresh and direction in fresh:
            fresh.discard(direction)
            return 0
        return None


def _host_text(line: bytes, seq: int, n: int, source: str) -> Record:
    """A line that is no log entry of its own (a stack trace's continuation...): host text."""
    return Record(
        RecordType.EVENT,
        seq=seq,
        transport="hostlog",
        conn="host",
        data={"event": "host-log", "text": line.decode("utf-8", "replace")},
        line=n,
        source=source,
    )


def _fields(m: re.Match[bytes]) -> tuple[str, str, int, bytes]:
    """(level, server, t_ns, rest) of a log entry line."""
    ts, a_raw, b_raw, rest = m.groups()  # (LINE_RE's groups: ts, a, b, rest)
    a, b = a_raw.decode("utf-8", "replace"), b_raw.decode("utf-8", "replace")
    level, server = (a, b) if a.lower() in LEVELS else (b, a)
    return level, server, _ts_ns(ts), rest


def _closed(seq: int, t_ns: int, conn: str, n: int, source: str) -> Record:
    return Record(
        RecordType.EVENT,
        seq=seq,
        t_ns=t_ns,
        transport="hostlog",
        conn=conn,
        data={"event": "closed", "reason": "server restarted"},
        line=n,
        source=source,
    )


def _entry(
    seq: int,
    fields: tuple[str, str, int, bytes],
    conn: str,
    offset_of: Callable[[Direction], int | None],
    n: int,
    source: str,
) -> Record:
    """The record of a log entry: a message when its payload starts with JSON, else host text."""
    level, server, t_ns, rest = fields
    mm = MSG_RE.match(rest)
    raw = _json_part(mm.group("json")) if mm else None
    if raw is not None:
        direction = Direction.C2S if mm.group("who") == b"client" else Direction.S2C
        return Record(
            RecordType.MESSAGE,
            seq=seq,
            t_ns=t_ns,
            dir=direction,
            raw=raw,
            transport="hostlog",
            conn=conn,
            offset=offset_of(direction),
            line=n,
            source=source,
        )
    return Record(
        RecordType.EVENT,
        seq=seq,
        t_ns=t_ns,
        transport="hostlog",
        conn=conn,
        data={
            "event": "host-log",
            "level": level,
            "server": server,
            "text": rest.decode("utf-8", "replace"),
        },
        line=n,
        source=source,
    )


def read(fh: IO[bytes], source: str) -> Iterator[Record | ReadProblem]:
    seq = 0
    streams = _Streams()
    for n, line, _had_nl in iter_lines(fh):
        if type(line) is LongLine:  # (not kept: its number and its first bytes)
            yield ReadProblem(source, n, line.message())
            continue
        line = line.rstrip(b"\r")
        if not line.strip():
            continue
        m = LINE_RE.match(line)
        if not m:
            # Continuation of a multi-line log entry (stack traces...): keep it as host text.
            seq += 1
            yield _host_text(line, seq, n, source)
            continue
        fields = _fields(m)
        server, rest = fields[1], fields[3]
        conn, closed = streams.line(server, bool(server and _restarts(rest)))
        if closed is not None:  # the server restarts: its earlier session is over
            seq += 1
            yield _closed(seq, fields[2], closed, n, source)
        seq += 1
        yield _entry(seq, fields, conn, partial(streams.offset, server), n, source)


# -- the viewer's lazy rows (tracer.inputs.lazy): what a record needs beyond its own line ---------

CLOSING = 1  # the "closed" event a restart line yields before its own record
OFFSET0 = 2  # the first message each way of a stream (offset 0)


def context(rec: Record) -> int:
    """The bits of RECORD that its line alone does not say (its conn is kept beside them)."""
    data = rec.data
    if rec.type is RecordType.EVENT and data is not None and data.get("event") == "closed":
        return CLOSING
    if rec.offset is not None:
        if rec.offset != 0:
            raise ValueError(f"a host-log record with offset {rec.offset}")
        return OFFSET0
    return 0


def rebuild(line: bytes, n: int, source: str, seq: int, conn: str, ctx: int) -> Record:
    """The record `read` made of line N, from the line and its context (see `context`)."""
    line = line.rstrip(b"\r")
    m = LINE_RE.match(line)
    if not m:
        return _host_text(line, seq, n, source)
    fields = _fields(m)
    if ctx & CLOSING:
        return _closed(seq, fields[2], conn, n, source)
    offset = 0 if ctx & OFFSET0 else None
    return _entry(seq, fields, conn, lambda _d: offset, n, source)
