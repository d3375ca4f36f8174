"""MCP host log files (Claude Desktop's `mcp.log` / `mcp-server-NAME.log` and look-alikes).

Lines read `2025-06-13T14:44:29.945Z [info] [my-server] Message from client: {...}` (older versions
put `[my-server] [info]` the other way round). Message lines become envelopes; every other line is
kept as a `host-log` event. Each server name is a connection; a server restart
("Initializing server...") starts a new session.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from typing import IO

from tracer.capture import ReadProblem, iter_lines
from tracer.model import Direction, Record, RecordType

LEVELS = frozenset({"info", "error", "warn", "warning", "debug", "trace", "notice", "fatal"})
LINE_RE = re.compile(
    rb"^(?P<ts>\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)\s+"
    rb"\[(?P<a>[^\]]*)\]\s+\[(?P<b>[^\]]*)\]\s?(?P<rest>.*)$"
)
MSG_RE = re.compile(rb"^Message from (?P<who>client|server):\s?(?P<json>.*)$")
RESTART_RE = re.compile(rb"Initializing server", re.I)
_decoder = json.JSONDecoder()


def sniff(head: bytes) -> bool:
    for line in head.split(b"\n")[:50]:
        m = LINE_RE.match(line.rstrip(b"\r"))
        if m and (m.group("a").lower().decode("utf-8", "replace") in LEVELS
                  or m.group("b").lower().decode("utf-8", "replace") in LEVELS):
            return True
    return False


def _ts_ns(ts: bytes) -> int:
    """Nanoseconds since the epoch, exact to the log's own digits: the fraction is added as an
    integer (a float of the whole time loses the last millisecond digit to rounding)."""
    text = ts.decode("ascii").replace(" ", "T")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    frac_ns = 0
    if len(text) > 19 and text[19] == ".":
        digits = text[20:]
        n = len(digits) - len(digits.lstrip("0123456789"))
        frac_ns = int((digits[:n] + "000000000")[:9])
        text = text[:19] + digits[n:]
    try:
        return int(datetime.fromisoformat(text).timestamp()) * 1_000_000_000 + frac_ns
    except ValueError:
        return 0


def _json_part(payload: bytes) -> bytes:
    """The JSON text at the start of the payload; hosts append things like `{ metadata: undefined }`."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return payload
    try:
        _, end = _decoder.raw_decode(text)
    except ValueError:
        return payload
    return text[:end].encode("utf-8")


def _conn(server: str, generation: int) -> str:
    return server if generation <= 1 else f"{server}#{generation}"


def read(fh: IO[bytes], source: str) -> Iterator[Record | ReadProblem]:
    seq = 0
    generation: dict[str, int] = {}
    for n, line, _had_nl in iter_lines(fh):
        line = line.rstrip(b"\r")
        if not line.strip():
            continue
        m = LINE_RE.match(line)
        if not m:
            # Continuation of a multi-line log entry (stack traces...): keep it as host text.
            seq += 1
            yield Record(RecordType.EVENT, seq=seq, transport="hostlog", conn="host",
                         data={"event": "host-log", "text": line.decode("utf-8", "replace")},
                         line=n, source=source)
            continue
        a, b = m.group("a").decode("utf-8", "replace"), m.group("b").decode("utf-8", "replace")
        level, server = (a, b) if a.lower() in LEVELS else (b, a)
        t_ns = _ts_ns(m.group("ts"))
        rest = m.group("rest")
        if RESTART_RE.search(rest) and server:
            gen = generation.get(server, 0)
            if gen:  # the server restarts: its earlier session is over
                seq += 1
                yield Record(RecordType.EVENT, seq=seq, t_ns=t_ns, transport="hostlog",
                             conn=_conn(server, gen), data={"event": "closed", "reason": "server restarted"},
                             line=n, source=source)
            generation[server] = gen + 1
        conn = _conn(server, generation.get(server, 1))
        seq += 1
        mm = MSG_RE.match(rest)
        if mm:
            direction = Direction.C2S if mm.group("who") == b"client" else Direction.S2C
            yield Record(RecordType.MESSAGE, seq=seq, t_ns=t_ns, dir=direction, raw=_json_part(mm.group("json")),
                         transport="hostlog", conn=conn, line=n, source=source)
        else:
            yield Record(RecordType.EVENT, seq=seq, t_ns=t_ns, transport="hostlog", conn=conn,
                         data={"event": "host-log", "level": level, "server": server,
                               "text": rest.decode("utf-8", "replace")},
                         line=n, source=source)
