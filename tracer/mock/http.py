"""Serve a capture over Streamable HTTP (both eras) on a loopback port, with the stdlib only.

- POST carries one JSON-RPC message (or a legacy batch). A request is answered with
  `application/json`, or with `text/event-stream` when the recorded server sent something before its
  answer (progress, log messages, its own requests) or never answered (the stream stays open until
  the host closes it: that is how it cancels). Notifications and responses get 202.
- Legacy: `initialize` opens a session and its answer carries a fresh `Mcp-Session-Id`; later POSTs
  name it; GET opens the session's server stream (kept open, it carries what the recorded server
  sent after an answer); DELETE ends the session. Requests without a session id share one
  stateless session (the modern era has no sessions, so a modern request's session id is ignored).
  A legacy request naming a session the mock does not know (never minted, ended, or forgotten) gets
  404, as the spec lets a server: the host then starts a new session.
- Bounded, whatever hosts send: at most MAX_SESSIONS sessions (an idle one is forgotten after
  IDLE_S, the least recently used idle one when the table is full; 503 when every one is busy),
  request bodies held at once are bounded in total (503 past BODY_BUDGET), and a request the mock
  cannot handle costs one -32603 answer, never the server.
- Recorded HTTP statuses are replayed (a recorded 400 stays a 400). An unmatched request gets 404
  with -32601 when the method was never recorded and the request is modern, else 200 with the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import OrderedDict

from tracer.classify import classify_raw, id_key
from tracer.http.origin import host_of
from tracer.http.wire import (
    LAST_CHUNK,
    REASONS,
    BodiesTooLarge,
    BodyBudget,
    HttpError,
    Request,
    encode_chunk,
    encode_head,
    encode_response,
    read_request,
)
from tracer.mock.engine import (
    EMPTY_BATCH,
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    MockServer,
    MockSession,
    Reply,
    error_message,
    internal_error,
)
from tracer.model import Kind
from tracer.protocol import META_PROTOCOL_VERSION
from tracer.replay.matcher import METHOD_NOT_FOUND

SESSION_HEADER = "Mcp-Session-Id"
MAX_SESSIONS = 1000
IDLE_S = 600.0  # a legacy session nobody used for this long is forgotten (its id then gets 404)
BODY_BUDGET = 256 * 1024 * 1024  # request bodies held at once, all connections together
STREAM_QUEUE = 1000  # messages waiting for a GET stream whose host does not read them
JSON = [("Content-Type", "application/json")]
SSE = [
    ("Content-Type", "text/event-stream"),
    ("Cache-Control", "no-cache, no-transform"),
    ("X-Accel-Buffering", "no"),
    ("Transfer-Encoding", "chunked"),
    ("Connection", "close"),
]


def sse_event(data: bytes) -> bytes:
    return b"event: message\r\ndata: " + data.replace(b"\n", b"\ndata: ") + b"\r\n\r\n"


class _Session:
    def __init__(self, mock: MockSession, sid: str | None):
        self.mock = mock
        self.sid = sid
        self.get_streams: list[asyncio.Queue[bytes | None]] = []
        self.busy = 0  # requests of this session being handled
        self.last_used = 0.0

    @property
    def idle(self) -> bool:
        return (
            not self.busy and not self.get_streams and not any(not t.done() for t in self.mock.tasks.values())
        )


class SessionsFull(Exception):
    """Every session is in use and the table is full."""


class MockHttpServer:
    def __init__(
        self,
        server: MockServer,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        max_sessions: int = MAX_SESSIONS,
        idle_s: float = IDLE_S,
        body_budget: int = BODY_BUDGET,
    ):
        self.server = server
        self.host = host
        self.port = port
        self.sessions: OrderedDict[str, _Session] = OrderedDict()  # least recently used first
        self.max_sessions = max_sessions
        self.idle_s = idle_s
        self.bodies = BodyBudget(body_budget)
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
            await _end(s)
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
                    req = await read_request(reader, self.bodies)
                except HttpError as exc:
                    # the rest of a refused body is still on the connection: answer, then close it
                    status = 503 if isinstance(exc, BodiesTooLarge) else 400
                    writer.write(
                        encode_response(
                            status,
                            [("Content-Type", "text/plain"), ("Connection", "close")]
                            + ([("Retry-After", "1")] if status == 503 else []),
                            f"{'busy' if status == 503 else 'bad HTTP request'}: {exc}\n".encode(),
                        )
                    )
                    await writer.drain()
                    return
                if req is None:
                    return
                try:
                    keep = await self._dispatch(req, reader, writer)
                finally:
                    self.bodies.give(req.held)
                if not keep or not req.keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, OSError):
            return
        except asyncio.CancelledError:
            return
        except Exception as exc:  # a bug must cost this connection one answer, not a traceback
            self.server.stats["errors"] += 1
            self.server.log(f"cannot answer an HTTP request: {exc!r}")
            with contextlib.suppress(Exception):
                writer.write(
                    encode_response(500, [*JSON, ("Connection", "close")], internal_error(None, exc))
                )
                await writer.drain()
            return
        finally:
            if task is not None:
                self._conns.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _dispatch(
        self, req: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
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
                await _end(s)
            writer.write(encode_response(200 if s is not None else 404, []))
            await writer.drain()
            return True
        writer.write(encode_response(405, [("Allow", "GET, POST, DELETE")]))
        await writer.drain()
        return True

    def _session_for(self, req: Request, modern: bool) -> _Session | None:
        """The session a request belongs to; None for a legacy request naming an unknown session."""
        sid = req.headers.get(SESSION_HEADER)
        if not sid or modern:  # 2026-07-28 has no sessions: a modern request's id is ignored
            return self.stateless
        return self._use(sid)

    def _use(self, sid: str | None) -> _Session | None:
        s = self.sessions.get(sid) if sid else None
        if s is not None:
            self.sessions.move_to_end(sid)
            s.last_used = asyncio.get_running_loop().time()
        return s

    async def _new_session(self) -> _Session:
        """A session for an `initialize`, making room first: idle sessions past their time go, then,
        when the table is still full, the least recently used idle one. SessionsFull if none can go."""
        now = asyncio.get_running_loop().time()
        stale = [sid for sid, s in self.sessions.items() if s.idle and now - s.last_used > self.idle_s]
        if len(self.sessions) - len(stale) >= self.max_sessions:
            spare = next((sid for sid, s in self.sessions.items() if s.idle and sid not in stale), None)
            if spare is None:
                raise SessionsFull
            stale.append(spare)
        for sid in stale:
            await _end(self.sessions.pop(sid))
        sid = uuid.uuid4().hex
        s = self.sessions[sid] = _Session(self.server.session(), sid)
        s.last_used = now
        return s

    # -- GET: the legacy server stream -------------------------------------------------------------

    async def _get(self, req: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        sid = req.headers.get(SESSION_HEADER)
        s = self._use(sid)
        if s is None:  # no session: no server stream (405); a session we do not know: 404
            writer.write(encode_response(404 if sid else 405, [] if sid else [("Allow", "POST")]))
            await writer.drain()
            return True
        q: asyncio.Queue[bytes | None] = asyncio.Queue(STREAM_QUEUE)
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
            try:
                s = await self._new_session()
            except SessionsFull:
                body = error_message(
                    c.obj.get("id"),
                    {
                        "code": INTERNAL_ERROR,
                        "message": f"all {self.max_sessions} sessions are in use; retry later",
                    },
                )
                writer.write(encode_response(503, [*JSON, ("Retry-After", "1")], body))
                await writer.drain()
                return True
        else:
            s = self._session_for(req, _is_modern(c.obj))
        if s is None:
            body = error_message(
                c.obj.get("id") if c.kind is Kind.REQUEST else None,
                {"code": INVALID_REQUEST, "message": "Session not found: send initialize to start one"},
            )
            writer.write(encode_response(404, JSON, body))
            await writer.drain()
            return True
        s.busy += 1
        try:
            return await self._post_in(s, c, req, reader, writer)
        finally:
            s.busy -= 1
            s.last_used = asyncio.get_running_loop().time()

    async def _post_in(
        self, s: _Session, c, req: Request, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        if c.kind is Kind.REQUEST:
            reply = s.mock.decide(c.obj)
            extra = [(SESSION_HEADER, s.sid)] if c.method == "initialize" and s.sid else []
            return await self._answer(s, reply, reader, writer, extra)
        if c.kind is Kind.RESULT or c.kind is Kind.ERROR:
            s.mock.on_response(c)
        elif c.kind is Kind.NOTIFICATION:
            s.mock.on_notification(c)
        elif c.kind is Kind.BATCH and not c.members:  # (JSON-RPC 2.0: one error, not an array)
            body = self.server.refused(INVALID_REQUEST, EMPTY_BATCH)
            writer.write(encode_response(400, JSON, body))
            await writer.drain()
            return True
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
            body = self.server.refused(PARSE_ERROR, f"Parse error: {c.reason}")
            writer.write(encode_response(400, JSON, body))
            await writer.drain()
            return True
        writer.write(encode_response(202, []))
        await writer.drain()
        return True

    async def _answer(
        self,
        s: _Session,
        reply: Reply,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        extra: list[tuple[str, str]],
    ) -> bool:
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
            if (
                not work.cancelled()
            ):  # else notifications/cancelled (legacy): end the stream without an answer
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
            if s.get_streams and not s.get_streams[0].full():
                s.get_streams[0].put_nowait(data)
            else:  # no stream, or a host that does not read its stream: not held without end
                self.dropped_after += 1

        return after


async def _end(s: _Session) -> None:
    for q in s.get_streams:
        while q.full():  # the end of the stream gets through even when the host stopped reading
            q.get_nowait()
        q.put_nowait(None)
    await s.mock.close()


def _is_modern(obj) -> bool:
    params = obj.get("params") if type(obj) is dict else None
    meta = params.get("_meta") if type(params) is dict else None
    return type(meta) is dict and META_PROTOCOL_VERSION in meta


def _local_origin(origin: str) -> bool:
    host = host_of(origin)  # (an Origin that does not parse, "http://[::1", is no local one: 403)
    return host in ("localhost", "127.0.0.1", "::1") or host.endswith(".localhost")


def _same_host(origin: str, listen_host: str) -> bool:
    return host_of(origin) == listen_host


def _status(reply: Reply) -> int:
    if reply.error is not None and reply.exchange is None:
        params = reply.caller.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        modern = isinstance(meta, dict) and META_PROTOCOL_VERSION in meta
        return 404 if modern and reply.error.get("code") == METHOD_NOT_FOUND else 200
    return reply.recorded_status or 200
