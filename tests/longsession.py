"""One long, realistic MCP session as a capture, for the bounded-memory test and benchmark.

The message shapes are the official Python SDK's (fixtures/captures/sdk-stdio-*.jsonl), repeated
with fresh ids, progress tokens, cursors, uris and MRTR request states, so that every table keyed
on them would grow if it were not bounded. One cycle: tools/call echo (with a log message), add,
fail; resources/read of a new item; prompts/get; a slow call with three progress notifications; a
slow call cancelled after one progress notification; now and then a ping, a paginated tools/list
with a fresh cursor, a server->client roots/list (legacy), a resource subscription and update
(legacy), and an MRTR operation of two rounds (modern: input_required with a requestState, then
the retry with inputResponses).

Modes: stdio-legacy, stdio-modern, http-legacy (Streamable HTTP 2025-11-25 with a session id, SSE
streams with event ids for the progress calls, a GET stream for server requests), http-modern
(stateless 2026-07-28 POSTs with the request-metadata headers). HTTP records are made by the HTTP
door itself (tracer.http.recorder), so they are what a proxy or importer writes.

    python tests/longsession.py OUT.jsonl --mode http-legacy --messages 200000
"""

from __future__ import annotations

import argparse
import os
from collections import deque
from collections.abc import Iterator

import orjson

from tests.longsession_script import C2S, LEGACY, MODERN, MODES, S2C, T0, steps
from tracer.capture import CaptureWriter, header_record
from tracer.http.recorder import Exchange, HttpRecorder
from tracer.model import Direction, Record, RecordType

__all__ = ["LEGACY", "MODERN", "MODES", "records", "state_sizes", "write"]


def stdio_records(modern: bool, messages: int) -> Iterator[Record]:
    t = T0
    conn = "stdio-4242"
    yield Record(RecordType.EVENT, t_ns=t, conn=conn, data={"event": "started", "pid": 4242})
    offsets = {C2S: 0, S2C: 0}
    for direction, msg, _how in steps(modern, messages):
        t += 200_000
        raw = orjson.dumps(msg)
        yield Record(RecordType.MESSAGE, t_ns=t, dir=direction, raw=raw, conn=conn, offset=offsets[direction])
        offsets[direction] += len(raw) + 1
    yield Record(RecordType.EVENT, t_ns=t + 1, conn=conn, data={"event": "stdin-eof"})
    yield Record(RecordType.EVENT, t_ns=t + 2, conn=conn, data={"event": "exit", "code": 0})


URL = "http://127.0.0.1:8765/mcp"
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class _Http:
    """Drives the HTTP door with the exchanges a client and server of MODE would make."""

    def __init__(self, modern: bool):
        self.modern = modern
        self.out: list[Record] = []
        self.rec = HttpRecorder(lambda recs: self.out.extend(recs), redact=False)
        self.t = T0
        self.flows = 0
        self.sid = None if modern else "4f1c2a9e0b7d4e55a1c3"
        self.stream = None  # (exchange, tee, event count) of the request being answered on SSE
        self.get_stream = None

    def _tick(self) -> int:
        self.t += 200_000
        return self.t

    def _headers(self, msg: dict | None) -> list:
        h = [
            ["accept", "application/json, text/event-stream"],
            ["content-type", "application/json"],
            ["user-agent", "python-httpx/0.28.1"],
        ]
        if self.modern:
            h.append(["mcp-protocol-version", MODERN])
            method = msg.get("method") if msg else None
            if method is not None and "id" in msg:
                h.append(["mcp-method", method])
                member = NAMED.get(method)
                if member is not None:
                    h.append(["mcp-name", str(msg["params"][member])])
        elif self.sid is not None and (msg is None or msg.get("method") != "initialize"):
            h += [["mcp-session-id", self.sid], ["mcp-protocol-version", LEGACY]]
        return h

    def _exchange(self, method: str, msg: dict | None) -> Exchange:
        self.flows += 1
        ex = Exchange(
            f"flow-{self.flows}",
            "127.0.0.1:50123",
            method,
            URL,
            self._headers(msg),
            orjson.dumps(msg) if msg is not None else None,
            t_ns=self._tick(),
            client_id="client-1",
        )
        self.rec.request(ex)
        return ex

    def _respond(self, ex: Exchange, status: int, ctype: str | None, body: bytes | None) -> None:
        ex.status = status
        ex.resp_headers = [["content-type", ctype]] if ctype else []
        if ctype == "text/event-stream":
            ex.resp_headers.append(["x-accel-buffering", "no"])
        if self.sid is not None:
            ex.resp_headers.append(["mcp-session-id", self.sid])
        ex.t_resp_ns = self._tick()
        if ctype == "text/event-stream":
            return
        self.rec.response(ex, body, t_ns=ex.t_resp_ns)

    def _open_stream(self, ex: Exchange) -> list:
        self._respond(ex, 200, "text/event-stream", None)
        tee = self.rec.response_headers(ex)
        if not self.modern:  # a resumable stream starts with a priming event (an id, empty data)
            tee.feed(f"id: {ex.id}-0\ndata: \n\n".encode(), self._tick())
        return [ex, tee, 0]

    def _event(self, stream: list, msg: dict) -> None:
        stream[2] += 1
        ex, tee = stream[0], stream[1]
        eid = f"{ex.id}-{stream[2]}" if not self.modern else None
        head = f"id: {eid}\n" if eid else ""
        tee.feed(f"{head}event: message\ndata: ".encode() + orjson.dumps(msg) + b"\n\n", self._tick())

    def _close(self, stream: list) -> None:
        """The server ended the stream; then the whole response is over (as the proxy's addon says)."""
        t = self._tick()
        stream[1].end("end", t)
        self.rec.response(stream[0], None, t_ns=t)

    def step(self, direction: Direction, msg: dict, how: str) -> None:
        if how == "call" and direction is C2S:
            self.pending = self._exchange("POST", msg)
        elif how == "call":
            self._respond(self.pending, 200, "application/json", orjson.dumps(msg))
        elif how == "stream":
            self.stream = self._open_stream(self._exchange("POST", msg))
        elif how == "on":
            self._event(self.stream, msg)
            if "id" in msg:
                self._close(self.stream)
                self.stream = None
        elif how == "cut":
            if self.modern:  # closing the stream is the cancellation (streamable-http, 2026-07-28)
                self.rec.failed(self.stream[0], "client disconnected", self._tick())
            else:  # legacy: the notification, and the server ends the stream without a result
                self._respond(self._exchange("POST", msg), 202, None, b"")
                self._close(self.stream)
            self.stream = None
        elif how in ("note", "reply"):
            ex = self._exchange("POST", msg)
            self._respond(ex, 202, None, b"")
            if msg.get("method") == "notifications/initialized" and self.get_stream is None:
                self.get_stream = self._open_stream(self._exchange("GET", None))
        elif how == "get":
            self._event(self.get_stream, msg)

    def take(self) -> list[Record]:
        out = self.out[:]
        self.out.clear()
        return out


def http_records(modern: bool, messages: int) -> Iterator[Record]:
    h = _Http(modern)
    for direction, msg, how in steps(modern, messages):
        h.step(direction, msg, how)
        yield from h.take()
    if h.get_stream is not None:
        h.rec.failed(h.get_stream[0], "client disconnected", h._tick())
    yield from h.take()


def records(mode: str, messages: int) -> Iterator[Record]:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (one of {', '.join(MODES)})")
    transport, era = mode.split("-")
    gen = stdio_records if transport == "stdio" else http_records
    return gen(era == "modern", messages)


def write_hostlog(path: str | os.PathLike, mode: str, messages: int) -> int:
    """The stdio session of MODE as a host's log file (Claude Desktop's `mcp-server-NAME.log` lines)."""
    from datetime import UTC, datetime

    count = 0
    with open(path, "wb") as fh:
        fh.write(b"2026-11-30T00:53:20.000Z [fixture] [info] Initializing server...\n")
        lines = []
        for rec in records(mode.replace("hostlog", "stdio"), messages):
            if rec.type is not RecordType.MESSAGE:
                continue
            count += 1
            ts = (
                datetime.fromtimestamp(rec.t_ns / 1e9, UTC)
                .isoformat(timespec="milliseconds")
                .replace("+00:00", "Z")
            )
            who = b"client" if rec.dir is C2S else b"server"
            lines.append(
                ts.encode()
                + b" [fixture] [info] Message from "
                + who
                + b": "
                + rec.raw
                + b" { metadata: undefined }"
            )
            if len(lines) >= 5000:
                fh.write(b"\n".join(lines) + b"\n")
                lines.clear()
        fh.write(b"\n".join(lines) + b"\n" if lines else b"")
    return count


def state_sizes(
    obj: object, name: str = "session", depth: int = 0, out: dict | None = None
) -> dict[str, int]:
    """The length of every table a session keeps (lists, dicts, sets), by attribute path, down to
    the session's own state objects (tracking, HTTP and stdio facts): what to watch for growth. The
    tables' entries themselves are not walked (a pending request's params are a message's)."""
    out = {} if out is None else out
    slots = getattr(type(obj), "__slots__", None)
    names = slots if slots is not None else list(getattr(obj, "__dict__", {}))
    for attr in names:
        value = getattr(obj, attr, None)
        path = f"{name}.{attr}"
        if isinstance(value, (dict, list, set, frozenset, tuple, deque)):
            out[path] = len(value)
        elif (
            depth < 2
            and type(value).__module__.startswith("tracer.")
            and hasattr(type(value), "__slots__")
            and type(value).__name__ in ("Tracking", "HttpState", "StdioState", "UsedIds")
        ):
            state_sizes(value, path, depth + 1, out)
    return out


def write(path: str | os.PathLike, mode: str, messages: int) -> int:
    """Write one session of MODE with at least MESSAGES messages; returns the message records."""
    transport = "stdio" if mode.startswith("stdio") else "http"
    head = header_record(
        transport,
        command=["python", "server.py"] if transport == "stdio" else None,
        upstream=URL if transport == "http" else None,
        label=f"long session ({mode})",
    )
    count = 0
    batch: list[Record] = []
    with CaptureWriter(path, head, redact=False, overwrite=True) as w:
        for rec in records(mode, messages):
            count += rec.type is RecordType.MESSAGE
            batch.append(rec)
            if len(batch) >= 5000:
                w.write_many(batch)
                batch.clear()
        w.write_many(batch)
    return count


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--mode", choices=MODES, default="stdio-legacy")
    p.add_argument("--messages", type=int, default=200_000)
    a = p.parse_args()
    print(write(a.out, a.mode, a.messages), "messages")
