"""Serve a capture over Streamable HTTP (both eras) on a loopback port, with the stdlib only.

- POST carries one JSON-RPC message (or a legacy batch). A request is answered with
  `application/json`, or with `text/event-stream` when the recorded server sent something before its
  answer (progress, log messages, its own requests) or never answered (the stream stays open until
  the host closes it: that is how it cancels). Notifications and responses get 202.
- Legacy: `initialize` opens a session and its answer carries a fresh `Mcp-Session-Id`; later POSTs
  name it; GET opens the session's server stream (kept open, it carries what the recorded server
  sent after an answer); DELETE ends the session. Requests without a session id share one
  stateless session (the modern era has no sessions).
- Recorded HTTP statuses are replayed (a recorded 400 stays a 400). An unmatched request gets 404
  with -32601 when the method was never recorded and the request is modern, else 200 with the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from urllib.parse import urlsplit

from tracer.classify import classify_raw, id_key
from tracer.http.wire import (
    LAST_CHUNK,
    REASONS,
    HttpError,
    Request,
    encode_chunk,
    encode_head,
    encode_response,
    read_request,
)
from tracer.mock.engine import PARSE_ERROR, MockServer, MockSession, Reply, error_message
from tracer.mock.matcher import METHOD_NOT_FOUND
from tracer.model import Kind
from tracer.protocol import META_PROTOCOL_VERSION

SESSION_HEADER = "Mcp-Session-Id"
JSON = [("Content-Type", "application/json")]
SSE = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache, no-transform"),
       ("X-Accel-Buffering", "no"), ("Transfer-Encoding", "chunked"), ("Connection", "close")]


def sse_event(data: bytes) -> bytes:
    return b"event: message\r\ndata: " + data.replace(b"\n", b"\ndata: ") + b"\r\n\r\n"


class _Session:
    def __init__(self, mock: MockSession, sid: str | None):
        self.mock = mock
        self.sid = sid
        self.get_streams: list[asyncio.Queue[bytes | None]] = []


class MockHttpServer:
    def __init__(self, server: MockServer, host: str = "127.0.0.1", port: int = 0):
        self.server = server
        self.host = host
        self.port = port
        self.sessions: dict[str, _Session] = {}
        self.stateless = _Session(server.session(), None)
        self._srv: asyncio.Server | None = None
        self._conns: set[asyncio.Task] = set()
        self.dropped_after = 0

    async def start(self) -> tuple[str, int]:
        self._srv = await asyncio.start_server(self._connection, self.host, self.port, limit=1 << 20)
        sock = self._srv.sockets[0].getsockname()
        self.port = sock[1]
        return sock[0], sock[1]

    async def serve_forever(self) -> None:
        assert self._srv is not None
        async with self._srv:
            await self._srv.serve_forever()

    async def close(self) -> None:
        if self._srv is not None:
            self._srv.close()
        for s in [self.stateless, *self.sessions.values()]:
            for q in s.get_streams:
                q.put_nowait(None)
            await s.mock.close()
        for t in list(self._conns):
            t.cancel()

    # -- connections -----------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._conns.add(task)
        try:
            while True:
                try:
                    req = await read_request(reader)
                except HttpError as exc:
                    writer.write(encode_response(400, [("Content-Type", "text/plain"), ("Connection", "close")],
                                                 f"bad HTTP request: {exc}\n".encode()))
                    await writer.drain()
                    return
                if req is None:
                    return
                keep = await self._dispatch(req, reader, writer)
                if not keep or not req.keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            return
        except asyncio.CancelledError:
            return
        finally:
            if task is not None:
                self._conns.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _dispatch(self, req: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        origin = req.headers.get("origin")
        if origin is not None and not _local_origin(origin) and not _same_host(origin, self.host):
            # DNS rebinding guard (the spec's MUST for Streamable HTTP servers): a web page elsewhere
            # must not drive a local server through the user's browser.
            body = error_message(None, {"code": -32600, "message": f"Origin {origin} is not allowed"})
            writer.write(encode_response(403, JSON, body))
            await writer.drain()
            return True
        if req.method == "POST":
            return await self._post(req, reader, writer)
        if req.method == "GET":
            return await self._get(req, reader, writer)
        if req.method == "DELETE":
            sid = req.headers.get(SESSION_HEADER)
            s = self.sessions.pop(sid, None) if sid else None
            if s is not None:
                for q in s.get_streams:
                    q.put_nowait(None)
                await s.mock.close()
            writer.write(encode_response(200 if s is not None else 404, []))
            await writer.drain()
            return True
        writer.write(encode_response(405, [("Allow", "GET, POST, DELETE")]))
        await writer.drain()
        return True

    def _session_for(self, req: Request) -> _Session:
        sid = req.headers.get(SESSION_HEADER)
        if not sid:
            return self.stateless
        s = self.sessions.get(sid)
        if s is None:  # a session we do not know (the mock restarted?): serve it anyway
            s = self.sessions[sid] = _Session(self.server.session(), sid)
        return s

    # -- GET: the legacy server stream -------------------------------------------------------------

    async def _get(self, req: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        sid = req.headers.get(SESSION_HEADER)
        s = self.sessions.get(sid) if sid else None
        if s is None:
            writer.write(encode_response(405, [("Allow", "POST")]))
            await writer.drain()
            return True
        q: asyncio.Queue[bytes | None] = asyncio.Queue()
        s.get_streams.append(q)
        writer.write(encode_head("HTTP/1.1 200 OK", SSE))
        await writer.drain()
        closed = asyncio.create_task(reader.read(1))  # the host closes the connection to end the stream
        try:
            while True:
                item = asyncio.create_task(q.get())
                done, _ = await asyncio.wait({item, closed}, return_when=asyncio.FIRST_COMPLETED)
                if item not in done:
                    item.cancel()
                    return False
                data = item.result()
                if data is None:
                    writer.write(LAST_CHUNK)
                    await writer.drain()
                    return False
                writer.write(encode_chunk(sse_event(data)))
                await writer.drain()
        finally:
            closed.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await closed
            if q in s.get_streams:
                s.get_streams.remove(q)

    # -- POST ------------------------------------------------------------------------------------

    async def _post(self, req: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        c = classify_raw(req.body)
        if c.kind is Kind.REQUEST and c.method == "initialize":
            sid = uuid.uuid4().hex
            s = self.sessions[sid] = _Session(self.server.session(), sid)
        else:
            s = self._session_for(req)
        if c.kind is Kind.REQUEST:
            reply = s.mock.decide(c.obj)
            extra = [(SESSION_HEADER, s.sid)] if c.method == "initialize" and s.sid else []
            return await self._answer(s, reply, reader, writer, extra)
        if c.kind is Kind.RESULT or c.kind is Kind.ERROR:
            s.mock.on_response(c)
        elif c.kind is Kind.NOTIFICATION:
            s.mock.on_notification(c)
        elif c.kind is Kind.BATCH:
            out: list[bytes] = []

            async def collect(data: bytes) -> None:
                out.append(data)

            await s.mock.receive(req.body, collect)
            # Only the array of answers goes back; notifications have no place in a batch response.
            body = next((d for d in reversed(out) if d.startswith(b"[")), b"")
            writer.write(encode_response(200 if body else 202, JSON if body else [], body))
            await writer.drain()
            return True
        else:
            self.server.stats["invalid"] += 1
            body = error_message(None, {"code": PARSE_ERROR, "message": f"Parse error: {c.reason}"})
            writer.write(encode_response(400, JSON, body))
            await writer.drain()
            return True
        writer.write(encode_response(202, []))
        await writer.drain()
        return True

    async def _answer(self, s: _Session, reply: Reply, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      extra: list[tuple[str, str]]) -> bool:
        after = self._after_emitter(s)
        if not reply.streams and not reply.recorded_sse:
            out: list[bytes] = []

            async def collect(data: bytes) -> None:
                out.append(data)

            await s.mock.perform(reply, collect, after, emit_answer=collect)
            status = _status(reply)
            writer.write(encode_response(status, JSON + extra, out[0] if out else b""))
            await writer.drain()
            return True
        status = _status(reply)
        writer.write(encode_head(f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}", SSE + extra))
        await writer.drain()

        async def emit(data: bytes) -> None:
            writer.write(encode_chunk(sse_event(data)))
            await writer.drain()

        work = asyncio.create_task(s.mock.perform(reply, emit, after))
        key = id_key(reply.id)
        if key is not None:
            s.mock.tasks[key] = work
        # A streamed answer ends the connection (Connection: close): watching it for the host's
        # close (its way to cancel) would otherwise race with the next request on a kept-alive one.
        closed = asyncio.create_task(reader.read(1))
        try:
            done, _ = await asyncio.wait({work, closed}, return_when=asyncio.FIRST_COMPLETED)
            if work not in done:  # the host closed the stream: that is a cancellation
                work.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await work
                return False
            if not work.cancelled():  # else notifications/cancelled (legacy): end the stream without an answer
                work.result()
            writer.write(LAST_CHUNK)
            await writer.drain()
            return False
        finally:
            closed.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await closed
            if key is not None and s.mock.tasks.get(key) is work:
                del s.mock.tasks[key]

    def _after_emitter(self, s: _Session):
        async def after(data: bytes) -> None:
            if s.get_streams:
                s.get_streams[0].put_nowait(data)
            else:
                self.dropped_after += 1

        return after


def _local_origin(origin: str) -> bool:
    host = urlsplit(origin).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1") or host.endswith(".localhost")


def _same_host(origin: str, listen_host: str) -> bool:
    return (urlsplit(origin).hostname or "") == listen_host


def _status(reply: Reply) -> int:
    if reply.error is not None and reply.exchange is None:
        params = reply.caller.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        modern = isinstance(meta, dict) and META_PROTOCOL_VERSION in meta
        return 404 if modern and reply.error.get("code") == METHOD_NOT_FOUND else 200
    return reply.recorded_status or 200
