"""The server end of a replay: a subprocess over stdio, or a Streamable HTTP endpoint.

A peer sends the host's messages, puts every framed message the server sends on `incoming` (None
once the server is gone), and hands a copy of everything that crossed to a `Tap`, which writes the
new capture. The stdio peer relays through pipes itself; the HTTP peer uses one connection per POST
(like a host's HTTP client pool would), follows the legacy session id and protocol-version header,
and derives the modern per-request headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) from
each body.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import Any

import orjson

from tracer.capture import CaptureWriter
from tracer.classify import id_key
from tracer.framing import LineFramer, SseParser
from tracer.http.wire import HttpError, Url, iter_body, open_request
from tracer.model import Direction, Record, RecordType
from tracer.protocol import META_PROTOCOL_VERSION
from tracer.redact import PROCESS_HASHER, redact_argv, redact_url
from tracer.redact_echo import MIN_ECHOED, EchoGuard

_HEADERS = ("req_headers", "resp_headers")
GRACE_S = 2.0  # after closing the server's stdin: how long it gets to exit before SIGTERM, then SIGKILL


class PeerError(Exception):
    """The server cannot be reached at all (command not found, connection refused...)."""


class Tap:
    """Writes what crosses to the new capture (or nowhere). The credentials the server was given
    (`writer.stderr_secrets`, as the tee's: tracer.cli.replay sets them) are hidden wherever the
    server or the host's recorded messages repeat them, as the tee and the proxy hide them."""

    def __init__(self, writer: CaptureWriter | None, conn: str, transport: str):
        self.writer = writer
        self.conn = conn
        self.transport = transport
        self._guard = EchoGuard()  # (the proxy's recorder's own: the same forms, the same hiding)
        secrets = getattr(writer, "stderr_secrets", ())
        self._guard.learn(s.decode("utf-8", "surrogateescape") for s in secrets)

    def learn_session(self, sid: str) -> None:
        """A session id the server assigned: whoever holds it can act in the session, so it is
        hidden where repeated (its own header keeps the writer's keyed hash)."""
        if self.writer is not None and self.writer.redact and len(sid) >= MIN_ECHOED:
            self._guard.learn_sessions([sid])

    def message(self, direction: Direction, raw: bytes, cut: int = 0, **facts: Any) -> None:
        if self.writer is not None:
            self.writer.write(self._hidden(Record(RecordType.MESSAGE, dir=direction, raw=raw, **facts), cut))

    def record(self, rtype: RecordType, cut: int = 0, **facts: Any) -> None:
        if self.writer is not None:
            self.writer.write(self._hidden(Record(rtype, **facts), cut))

    def _hidden(self, rec: Record, cut: int) -> Record:
        rec.transport, rec.conn = self.transport, self.conn
        if cut:
            rec.data = {**(rec.data or {}), "cut": cut}
        guard = self._guard
        if guard.watching and rec.raw:
            rec.raw, n = guard.hide(rec.raw, cut)
            if n:  # (the stored bytes are not the wire's: say so)
                rec.data = {**(rec.data or {}), "redacted": n}
        if guard.watching and rec.http:  # (a header repeating one: a gateway's trace of the session)
            hs = {k: guard.hide_headers(rec.http[k]) for k in _HEADERS if rec.http.get(k)}
            rec.http = {**rec.http, **hs}  # (a copy: the SSE events of one answer share their facts)
        return rec


class Peer:
    label = ""

    def __init__(self, tap: Tap):
        self.tap = tap
        self.incoming: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.problems: list[str] = []  # what went wrong on the wire, for the report
        self.no_answer_reason: dict[tuple, str] = {}  # request id -> why no answer can come

    async def start(self) -> None: ...

    async def send(self, data: bytes, obj: Any) -> None: ...

    async def close(self) -> None: ...


# -- stdio -----------------------------------------------------------------------------------------


class StdioPeer(Peer):
    def __init__(self, command: list[str], tap: Tap):
        super().__init__(tap)
        self.command = command
        self.label = " ".join(redact_argv(command))
        self.proc: asyncio.subprocess.Process | None = None
        self._readers: list[asyncio.Task] = []
        self._out_offset = 0
        self.exit_code: int | None = None
        self._closing = False
        self._ended_early = False

    async def start(self) -> None:
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except FileNotFoundError:
            raise PeerError(f"cannot start {self.command[0]!r}: command not found") from None
        except PermissionError:
            raise PeerError(f"cannot start {self.command[0]!r}: permission denied") from None
        except OSError as exc:
            raise PeerError(f"cannot start {self.command[0]!r}: {exc.strerror or exc}") from None
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._readers = [
            asyncio.create_task(self._read_stdout(self.proc.stdout)),
            asyncio.create_task(self._read_stderr(self.proc.stderr)),
        ]

    async def _read_stdout(self, stream: asyncio.StreamReader) -> None:
        framer = LineFramer()
        try:
            while chunk := await stream.read(65536):
                for frame in framer.feed(chunk):
                    self._frame(frame)
            tail = framer.finish()
            if tail is not None:
                self._frame(tail)
        finally:
            if not self._closing:
                self._ended_early = True
            self.incoming.put_nowait(None)

    def _frame(self, frame) -> None:
        if not frame.data.strip():
            return
        self.tap.message(Direction.S2C, frame.data, frame.cut, offset=frame.offset, eol=frame.eol)
        self.incoming.put_nowait(frame.data)

    async def _read_stderr(self, stream: asyncio.StreamReader) -> None:
        framer = LineFramer()
        while chunk := await stream.read(65536):
            for frame in framer.feed(chunk):
                self.tap.record(RecordType.STDERR, frame.cut, raw=frame.data, offset=frame.offset)
        tail = framer.finish()
        if tail is not None:
            self.tap.record(RecordType.STDERR, tail.cut, raw=tail.data, offset=tail.offset, eol=False)

    async def send(self, data: bytes, obj: Any) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.tap.message(Direction.C2S, data, offset=self._out_offset)
        self._out_offset += len(data) + 1
        try:
            self.proc.stdin.write(data + b"\n")
            await self.proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            if "the server closed its stdin" not in self.problems:
                self.problems.append("the server closed its stdin")

    async def close(self) -> None:
        proc = self.proc
        if proc is None:
            return
        self._closing = True
        if proc.stdin is not None and not proc.stdin.is_closing():
            with contextlib.suppress(OSError):
                proc.stdin.close()
        for sig in (None, "terminate", "kill"):
            if sig is not None and proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    getattr(proc, sig)()
            try:
                await asyncio.wait_for(proc.wait(), GRACE_S)
                break
            except TimeoutError:
                continue
        for t in self._readers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(t, GRACE_S)
        self.exit_code = proc.returncode
        self.tap.record(RecordType.EVENT, data={"event": "exit", "code": proc.returncode})
        if self._ended_early:
            self.problems.append(
                f"the server closed its output before the replay was over (exit code {proc.returncode})"
            )


# -- Streamable HTTP -------------------------------------------------------------------------------

_NAMED = frozenset({"tools/call", "resources/read", "prompts/get"})


def header_value(value: str) -> str:
    """A header-safe value, or the spec's Base64 sentinel form for anything else."""
    if value and value == value.strip() and all(0x20 <= ord(ch) <= 0x7E for ch in value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _sendable(name: str, value: str) -> bool:
    """Whether NAME: VALUE can go in an HTTP/1.1 head as they are (RFC 9110 field-name token,
    field-value of visible characters, spaces, tabs and obs-text): a method, version or recorded
    header taken from a capture may hold a line break, a control character or a lone surrogate."""
    return (
        type(name) is str
        and type(value) is str
        and bool(name)
        and all(c in _TOKEN for c in name)
        and all(c == "\t" or 0x20 <= ord(c) <= 0x7E or 0x80 <= ord(c) <= 0xFF for c in value)
    )


class HttpPeer(Peer):
    def __init__(
        self, url: str, tap: Tap, *, headers: list[tuple[str, str]] | None = None, timeout: float = 10.0
    ):
        super().__init__(tap)
        self.url = Url.parse(url)
        self.label = redact_url(url, PROCESS_HASHER)
        self.extra = headers or []
        self.timeout = timeout
        self.session_id: str | None = None
        self.legacy_version: str | None = None
        self._flows = 0
        self._posts: set[asyncio.Task] = set()
        self._inflight: dict[tuple, tuple[asyncio.Task, bool]] = {}  # request id -> (POST task, modern)
        self.recorded_param_headers: dict[tuple, list[tuple[str, str]]] = {}
        self._answered: set[tuple] = set()

    def headers_for(self, obj: Any) -> list[tuple[str, str]]:
        hs = [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")]
        params = obj.get("params") if type(obj) is dict else None
        meta = params.get("_meta") if type(params) is dict else None
        version = meta.get(META_PROTOCOL_VERSION) if type(meta) is dict else None
        method = obj.get("method") if type(obj) is dict else None
        if type(version) is str:
            hs.append(("MCP-Protocol-Version", version))
            if type(method) is str:
                hs.append(("Mcp-Method", method))
                name = params.get("uri") if method == "resources/read" else params.get("name")
                if method in _NAMED and type(name) is str:
                    hs.append(("Mcp-Name", header_value(name)))
        else:
            if self.session_id:
                hs.append(("Mcp-Session-Id", self.session_id))
            if self.legacy_version and method != "initialize":
                hs.append(("MCP-Protocol-Version", self.legacy_version))
        if type(obj) is dict and (key := id_key(obj.get("id"))) is not None:
            hs.extend(self.recorded_param_headers.get(key, ()))
        # (a hostile capture's method, version or header: never a crash, never a header it injects)
        sendable = []
        for k, v in hs:
            if _sendable(k, v):
                sendable.append((k, v))
            else:
                self.problems.append(f"header {k[:40]!a} not sent: its value cannot be an HTTP header value")
        return sendable + self.extra

    async def start(self) -> None:
        try:
            reader_writer = await asyncio.wait_for(
                asyncio.open_connection(self.url.host, self.url.port), self.timeout
            )
        except (OSError, TimeoutError) as exc:
            reason = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
            raise PeerError(f"cannot connect to {self.label}: {reason}") from None
        reader_writer[1].close()

    async def send(self, data: bytes, obj: Any) -> None:
        method = obj.get("method") if type(obj) is dict else None
        is_request = type(obj) is dict and method is not None and "id" in obj
        params = obj.get("params") if type(obj) is dict else None
        meta = params.get("_meta") if type(params) is dict else None
        modern = type(meta) is dict and META_PROTOCOL_VERSION in meta
        if method == "notifications/cancelled" and type(params) is dict:
            target = self._inflight.get(id_key(params.get("requestId")))
            if target is not None and target[1]:
                # Modern Streamable HTTP cancels by closing the request's stream, never by a message.
                target[0].cancel()  # its POST records the closed stream
                return
        task = asyncio.create_task(self._post(data, obj, is_request))
        self._posts.add(task)
        task.add_done_callback(self._posts.discard)
        if is_request:
            self._inflight[id_key(obj["id"])] = (task, modern)

    async def _post(self, data: bytes, obj: Any, is_request: bool) -> None:
        self._flows += 1
        flow = f"replay-{self._flows}"
        headers = self.headers_for(obj)
        http: dict[str, Any] = {
            "method": "POST",
            "url": self.url.text,
            "req_headers": [list(h) for h in headers],
            "flow": flow,
        }
        self.tap.message(Direction.C2S, data, http=http)
        rid = id_key(obj.get("id")) if is_request else None
        writer = None
        try:
            head, reader, writer = await open_request(self.url, "POST", headers, data, timeout=self.timeout)
            facts = {
                "method": "POST",
                "url": self.url.text,
                "status": head.status,
                "resp_headers": head.headers.as_pairs(),
                "content_type": head.content_type,
                "flow": flow,
            }
            if type(obj) is dict and obj.get("method") == "initialize" and head.headers.get("mcp-session-id"):
                self.session_id = head.headers.get("mcp-session-id")
                self.tap.learn_session(self.session_id)
            if head.content_type == "text/event-stream":
                await self._sse(reader, head, facts, flow, obj)
                if rid is not None and rid not in self._answered:
                    self.no_answer_reason[rid] = "the server ended the SSE stream without an answer"
                    self.incoming.put_nowait(b"")
                return
            body = b"".join([c async for c in iter_body(reader, head.headers, until_close=True)])
            if body.strip() and head.content_type in ("application/json", ""):
                self._deliver(body, facts, obj)
            else:
                self.tap.record(RecordType.HTTP, http=facts, raw=body)
                if rid is not None and head.status >= 300:
                    self.no_answer_reason[rid] = f"HTTP {head.status} {head.reason}".strip()
                    self.incoming.put_nowait(b"")
        except asyncio.CancelledError:
            # We closed the stream ourselves (a modern cancellation, or the end of the replay).
            self.tap.record(
                RecordType.EVENT,
                http={"method": "POST", "url": self.url.text, "flow": flow},
                data={"event": "stream-closed", "stream": flow, "reason": "client-closed"},
            )
            raise
        except (OSError, HttpError, TimeoutError, asyncio.IncompleteReadError) as exc:
            reason = "timed out" if isinstance(exc, TimeoutError) else str(exc) or type(exc).__name__
            self.problems.append(f"POST {self.url.text} failed: {reason}")
            if rid is not None:
                self.no_answer_reason[rid] = f"the POST failed: {reason}"
                self.incoming.put_nowait(b"")
        finally:
            if writer is not None:
                writer.close()
            if rid is not None and self._inflight.get(rid, (None,))[0] is asyncio.current_task():
                del self._inflight[rid]

    async def _sse(self, reader: asyncio.StreamReader, head, facts: dict, flow: str, obj: Any) -> None:
        parser = SseParser()
        async for chunk in iter_body(reader, head.headers, until_close=True):
            for ev in parser.feed(chunk):
                if ev.has_data and ev.data.strip():
                    sse = {"id": ev.id, "event": ev.event, "stream": flow, "retry": ev.retry}
                    self._deliver(
                        ev.data.encode("utf-8"),
                        facts,
                        obj,
                        sse={k: v for k, v in sse.items() if v is not None},
                    )

    def _deliver(self, body: bytes, facts: dict, sent: Any, sse: dict | None = None) -> None:
        self.tap.message(Direction.S2C, body, http=facts, sse=sse)
        with contextlib.suppress(orjson.JSONDecodeError):
            got = orjson.loads(body)
            for one in got if type(got) is list else [got]:
                if type(one) is dict and "method" not in one and id_key(one.get("id")) is not None:
                    self._answered.add(id_key(one.get("id")))
        if type(sent) is dict and sent.get("method") == "initialize":
            self._learn_version(body)
        self.incoming.put_nowait(body)

    def _learn_version(self, body: bytes) -> None:
        with contextlib.suppress(orjson.JSONDecodeError):
            obj = orjson.loads(body)
            res = obj.get("result") if type(obj) is dict else None
            pv = res.get("protocolVersion") if type(res) is dict else None
            if type(pv) is str:
                self.legacy_version = pv

    async def close(self) -> None:
        for task in list(self._posts):
            task.cancel()
        for task in list(self._posts):
            with contextlib.suppress(BaseException):
                await task
        if self.session_id:
            headers = [("Mcp-Session-Id", self.session_id)] + (
                [("MCP-Protocol-Version", self.legacy_version)] if self.legacy_version else []
            )
            with contextlib.suppress(OSError, HttpError, TimeoutError, asyncio.IncompleteReadError):
                head, _reader, writer = await open_request(
                    self.url, "DELETE", headers + self.extra, timeout=self.timeout
                )
                writer.close()
                self.tap.record(
                    RecordType.HTTP,
                    http={
                        "method": "DELETE",
                        "url": self.url.text,
                        "status": head.status,
                        "req_headers": [list(h) for h in headers],
                    },
                )
        self.tap.record(RecordType.EVENT, data={"event": "closed"})
        self.incoming.put_nowait(None)
