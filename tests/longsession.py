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

from tracer.capture import CaptureWriter, header_record
from tracer.http.recorder import Exchange, HttpRecorder
from tracer.model import Direction, Record, RecordType

MODES = ("stdio-legacy", "stdio-modern", "http-legacy", "http-modern")
T0 = 1_796_000_000_000_000_000
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
CLIENT = {"name": "mcptrace-fixture-client", "version": "1.0.0"}
SERVER = {"name": "mcptrace-fixture", "version": "1.0.0"}
META = {
    f"io.modelcontextprotocol/{k}": v
    for k, v in (
        ("protocolVersion", MODERN),
        ("clientInfo", CLIENT),
        ("clientCapabilities", {"elicitation": {}}),
        ("logLevel", "info"),
    )
}
SERVER_META = {"io.modelcontextprotocol/serverInfo": SERVER}
TOOLS = [
    {
        "name": "echo",
        "description": "Return the text unchanged (and log one info line).",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
    {
        "name": "fail",
        "description": "Always fails: the result has isError true.",
        "inputSchema": {"type": "object", "properties": {"reason": {"type": "string"}}},
    },
    {
        "name": "slow",
        "description": "Count to `steps`, reporting progress at each step; cancellable.",
        "inputSchema": {
            "type": "object",
            "properties": {"steps": {"type": "integer"}},
            "required": ["steps"],
        },
    },
    {
        "name": "deploy",
        "description": "Deploy after the user confirms.",
        "inputSchema": {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]},
    },
]

# (direction, message, how it travels over HTTP): "call" a request answered as JSON, "stream" a
# request answered on an SSE stream (the messages tagged "on" until its result), "note" a client
# notification (202), "on" a server message on the current stream, "get" a server message on the
# GET stream, "reply" the client's answer to a server request (202), "cut" the client cancels the
# current stream's request (the stream ends without a result).
Step = tuple[Direction, dict, str]
CACHED = frozenset(
    {
        "server/discover",
        "tools/list",
        "resources/read",
        "resources/list",
        "prompts/list",
        "resources/templates/list",
    }
)
C2S, S2C = Direction.C2S, Direction.S2C


class Session:
    """The JSON-RPC messages of one session, in wire order, with how each travels."""

    def __init__(self, modern: bool):
        self.modern = modern
        self.next_id = 0
        self.server_id = 0
        self.cycle = 0

    def _req(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        msg: dict = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if self.modern:
            params = dict(params or {})
            params["_meta"] = {**META, **params.get("_meta", {})}
        if params is not None:
            msg["params"] = params
        return msg

    def _res(self, req: dict, result: dict) -> dict:
        if self.modern:
            cache = {"ttlMs": 0, "cacheScope": "private"} if req["method"] in CACHED else {}
            result = {"resultType": "complete", **cache, **result, "_meta": SERVER_META}
        return {"jsonrpc": "2.0", "id": req["id"], "result": result}

    def opening(self) -> Iterator[Step]:
        if self.modern:
            req = self._req("server/discover")
            yield C2S, req, "call"
            yield (
                S2C,
                self._res(
                    req,
                    {
                        "supportedVersions": [MODERN],
                        "capabilities": {"tools": {}, "resources": {}, "prompts": {}, "logging": {}},
                        "serverInfo": SERVER,
                    },
                ),
                "call",
            )
            return
        req = self._req(
            "initialize",
            {
                "protocolVersion": LEGACY,
                "capabilities": {"roots": {"listChanged": True}},
                "clientInfo": CLIENT,
            },
        )
        yield C2S, req, "call"
        yield (
            S2C,
            self._res(
                req,
                {
                    "protocolVersion": LEGACY,
                    "serverInfo": SERVER,
                    "capabilities": {
                        "logging": {},
                        "prompts": {"listChanged": False},
                        "resources": {"listChanged": False, "subscribe": True},
                        "tools": {"listChanged": False},
                    },
                },
            ),
            "call",
        )
        yield C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"}, "note"
        req = self._req("logging/setLevel", {"level": "info"})
        yield C2S, req, "call"
        yield S2C, self._res(req, {}), "call"

    def cycle_steps(self) -> Iterator[Step]:
        self.cycle += 1
        n = self.cycle
        req = self._req("tools/call", {"name": "echo", "arguments": {"text": f"hello {n}"}})
        yield C2S, req, "stream"
        yield (
            S2C,
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "logger": "fixture", "data": f"echo called with hello {n}"},
            },
            "on",
        )
        yield (
            S2C,
            self._res(
                req,
                {
                    "content": [{"type": "text", "text": f"hello {n}"}],
                    "isError": False,
                    "structuredContent": {"result": f"hello {n}"},
                },
            ),
            "on",
        )
        req = self._req("tools/call", {"name": "add", "arguments": {"a": n, "b": 3}})
        yield C2S, req, "call"
        yield (
            S2C,
            self._res(
                req,
                {
                    "content": [{"type": "text", "text": str(n + 3)}],
                    "isError": False,
                    "structuredContent": {"result": n + 3},
                },
            ),
            "call",
        )
        req = self._req("tools/call", {"name": "fail", "arguments": {"reason": "on purpose"}})
        yield C2S, req, "call"
        yield (
            S2C,
            self._res(
                req,
                {
                    "content": [{"type": "text", "text": "Error executing tool fail: on purpose"}],
                    "isError": True,
                },
            ),
            "call",
        )
        uri = f"fixture://items/{n}"
        req = self._req("resources/read", {"uri": uri})
        yield C2S, req, "call"
        yield (
            S2C,
            self._res(req, {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"item {n}"}]}),
            "call",
        )
        req = self._req("prompts/get", {"name": "review", "arguments": {"code": f"print({n})"}})
        yield C2S, req, "call"
        yield (
            S2C,
            self._res(
                req,
                {
                    "description": "Ask for a review of some code.",
                    "messages": [
                        {
                            "role": "user",
                            "content": {"type": "text", "text": f"Please review this code:\nprint({n})"},
                        }
                    ],
                },
            ),
            "call",
        )
        yield from self._slow(3, cancel=False)
        yield from self._slow(5, cancel=True)
        if n % 4 == 0 and not self.modern:  # (ping is removed in 2026-07-28)
            req = self._req("ping")
            yield C2S, req, "call"
            yield S2C, {"jsonrpc": "2.0", "id": req["id"], "result": {}}, "call"
        if n % 8 == 0:
            yield from self._tools_list(n)
        if n % 8 == 4:
            yield from self._mrtr(n) if self.modern else self._server_request(n)

    def _slow(self, steps: int, cancel: bool) -> Iterator[Step]:
        token = self.next_id + 1
        req = self._req(
            "tools/call", {"name": "slow", "arguments": {"steps": steps}, "_meta": {"progressToken": token}}
        )
        yield C2S, req, "stream"
        for i in range(1, 2 if cancel else steps + 1):
            yield (
                S2C,
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {
                        "progressToken": token,
                        "progress": i,
                        "total": steps,
                        "message": f"step {i}/{steps}",
                    },
                },
                "on",
            )
        if cancel:
            yield (
                C2S,
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": req["id"], "reason": "caller cancelled"},
                },
                "cut",
            )
            return
        yield (
            S2C,
            self._res(
                req,
                {
                    "content": [{"type": "text", "text": f"done after {steps} steps"}],
                    "isError": False,
                    "structuredContent": {"result": f"done after {steps} steps"},
                },
            ),
            "on",
        )

    def _tools_list(self, n: int) -> Iterator[Step]:
        req = self._req("tools/list")
        yield C2S, req, "call"
        cursor = f"page2-{n}"
        yield S2C, self._res(req, {"tools": TOOLS[:3], "nextCursor": cursor}), "call"
        req = self._req("tools/list", {"cursor": cursor})
        yield C2S, req, "call"
        yield S2C, self._res(req, {"tools": TOOLS[3:]}), "call"

    def _mrtr(self, n: int) -> Iterator[Step]:
        args = {"env": f"stage-{n}"}
        req = self._req("tools/call", {"name": "deploy", "arguments": args})
        yield C2S, req, "call"
        state = f"rs-{n}"
        yield (
            S2C,
            {
                "jsonrpc": "2.0",
                "id": req["id"],
                "result": {
                    "resultType": "input_required",
                    "requestState": state,
                    "inputRequests": {
                        "confirm": {
                            "method": "elicitation/create",
                            "params": {
                                "message": f"Deploy to stage-{n}?",
                                "requestedSchema": {"type": "object", "properties": {}},
                            },
                        }
                    },
                    "_meta": SERVER_META,
                },
            },
            "call",
        )
        req = self._req(
            "tools/call",
            {
                "name": "deploy",
                "arguments": args,
                "requestState": state,
                "inputResponses": {"confirm": {"action": "accept", "content": {}}},
            },
        )
        yield C2S, req, "call"
        yield (
            S2C,
            self._res(
                req, {"content": [{"type": "text", "text": f"deployed to stage-{n}"}], "isError": False}
            ),
            "call",
        )

    def _server_request(self, n: int) -> Iterator[Step]:
        self.server_id += 1
        yield S2C, {"jsonrpc": "2.0", "id": self.server_id, "method": "roots/list"}, "get"
        yield (
            C2S,
            {
                "jsonrpc": "2.0",
                "id": self.server_id,
                "result": {"roots": [{"uri": f"file:///work/project-{n}", "name": f"project {n}"}]},
            },
            "reply",
        )
        uri = f"fixture://items/{n}"
        req = self._req("resources/subscribe", {"uri": uri})
        yield C2S, req, "call"
        yield S2C, self._res(req, {}), "call"
        yield (
            S2C,
            {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}},
            "get",
        )
        req = self._req("resources/unsubscribe", {"uri": uri})
        yield C2S, req, "call"
        yield S2C, self._res(req, {}), "call"


def steps(modern: bool, messages: int) -> Iterator[Step]:
    """At least MESSAGES messages of one session (whole cycles)."""
    s = Session(modern)
    count = 0
    for step in s.opening():
        count += 1
        yield step
    while count < messages:
        for step in s.cycle_steps():
            count += 1
            yield step


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
            if attr == "extra" and depth < 2:  # the observers' state objects (http, stdio)
                for key, sub in value.items():
                    if key != "shared" and hasattr(type(sub), "__slots__"):
                        state_sizes(sub, f"{path}[{key}]", depth + 1, out)
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
