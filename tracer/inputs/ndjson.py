"""Bare NDJSON: one JSON-RPC message per line, no direction recorded.

Direction is inferred from the message (requests and notifications by the method's side in the
schema; responses as the opposite of the request they answer) and marked `dir_inferred`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from tracer.capture import ReadProblem
from tracer.classify import id_key, parse_json
from tracer.lines import LongLine, iter_lines
from tracer.model import Direction, Record, RecordType
from tracer.protocol import CLIENT_METHODS_ANY, SERVER_METHODS_ANY


def sniff(head: bytes) -> bool:
    lines = head.split(b"\n")
    checked = 0
    for line in lines[:-1] if len(lines) > 1 else lines:
        line = line.strip()
        if not line:
            continue
        checked += 1
        obj, problem, _ = parse_json(line)  # (big integers and lone surrogates are JSON too)
        if problem is not None:
            if checked > 64:
                break
            continue
        if isinstance(obj, dict) and (
            "jsonrpc" in obj or "method" in obj or "result" in obj or "error" in obj
        ):
            return True
        if isinstance(obj, list):
            return True
        if checked > 64:
            break
    # One huge first line (cut by the head): JSON-looking text is read as NDJSON.
    stripped = head.lstrip()
    return len(lines) <= 1 and stripped[:1] in (b"{", b"[")


class DirectionGuesser:
    """Infers who sent each message of a direction-less log.

    Methods either side may send are told by what they name: `notifications/progress` comes from
    the other side of the pending request that supplied its progressToken (nearly always the
    server; a token no request seen supplied, as in a log that begins mid-session, the server's
    too), `notifications/cancelled` from the side of the pending request it cancels. What names
    nothing seen (a `ping`, a cancel) is assumed to come from the host."""

    def __init__(self) -> None:
        self.pending: dict[tuple, Direction] = {}
        self.tokens: dict[tuple, Direction] = {}  # progressToken -> direction of its pending request
        self.token_of: dict[tuple, tuple] = {}  # request id -> the progressToken it supplied

    def guess(self, obj: object) -> Direction:
        if type(obj) is list:
            return self.guess(obj[0]) if obj and type(obj[0]) is dict else Direction.C2S
        if type(obj) is not dict:
            return Direction.C2S
        method = obj.get("method")
        if type(method) is str:
            if method in CLIENT_METHODS_ANY and method not in SERVER_METHODS_ANY:
                d = Direction.C2S
            elif method in SERVER_METHODS_ANY and method not in CLIENT_METHODS_ANY:
                d = Direction.S2C
            else:
                d = self._either_side(method, obj.get("params"))
            key = id_key(obj.get("id"))
            if key is not None:
                self.pending[key] = d
                params = obj.get("params")
                meta = params.get("_meta") if type(params) is dict else None
                tok = id_key(meta.get("progressToken")) if type(meta) is dict else None
                if tok is not None:
                    self.tokens[tok] = d
                    self.token_of[key] = tok
            return d
        key = id_key(obj.get("id"))
        if key is not None and key in self.pending:
            tok = self.token_of.pop(key, None)
            if tok is not None:
                self.tokens.pop(tok, None)
            return self.pending.pop(key).other
        return Direction.S2C  # a response to nothing we saw: most responses come from servers

    def _either_side(self, method: str, params: object) -> Direction:
        """The sender of a method both sides may send (ping, cancelled, progress)."""
        if method == "notifications/progress":
            d = self.tokens.get(id_key(params.get("progressToken"))) if type(params) is dict else None
            # a token of a request before the log began: most progress is a server's
            return d.other if d is not None else Direction.S2C
        if method == "notifications/cancelled" and type(params) is dict:
            d = self.pending.get(id_key(params.get("requestId")))
            if d is not None:
                return d
        return Direction.C2S  # assume the host


def read(fh: IO[bytes], source: str) -> Iterator[Record | ReadProblem]:
    guesser = DirectionGuesser()
    seq = 0
    for n, line, had_nl in iter_lines(fh):
        if type(line) is LongLine:  # (not kept: its number and its first bytes)
            yield ReadProblem(source, n, line.message())
            continue
        if not line.strip():
            continue
        seq += 1
        obj = parse_json(line)[0]
        yield Record(
            RecordType.MESSAGE,
            seq=seq,
            t_ns=0,
            dir=guesser.guess(obj),
            raw=line,
            transport="ndjson",
            conn="0",
            eol=had_nl,
            dir_inferred=True,
            line=n,
            source=source,
        )


# -- the viewer's lazy rows (tracer.inputs.lazy): what a record needs beyond its own line ---------

C2S, S2C, NO_EOL = 1, 2, 4


def context(rec: Record) -> int:
    """The guessed direction (settled: an early answer takes the other side of its request) and
    whether the line was the unterminated last one."""
    d = C2S if rec.dir is Direction.C2S else S2C if rec.dir is Direction.S2C else 0
    return d | (0 if rec.eol else NO_EOL)


def rebuild(line: bytes, n: int, source: str, seq: int, conn: str, ctx: int) -> Record:
    """The record `read` made of line N, from the line and its context (see `context`)."""
    return Record(
        RecordType.MESSAGE,
        seq=seq,
        t_ns=0,
        dir=Direction.C2S if ctx & C2S else Direction.S2C if ctx & S2C else None,
        raw=line,
        transport="ndjson",
        conn=conn,
        eol=not ctx & NO_EOL,
        dir_inferred=True,
        line=n,
        source=source,
    )
