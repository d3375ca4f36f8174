"""The mock's behaviour, apart from any transport: what to send for each message a host sends.

For a request that matches a recorded one it sends, in recorded order, what the recorded server
sent while the request was pending (notifications; in the legacy era its own requests, whose answers
it waits for), then the recorded answer carrying the caller's id, then what followed that answer.
Progress notifications carry the caller's progress token (and are left out when the caller asked
for none). A request with no match gets a JSON-RPC error naming the closest recorded request.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from tracer.classify import Classified, classify_raw, id_key
from tracer.model import Analysed, Kind
from tracer.replay.matcher import Matcher, MatchMode, method_text
from tracer.replay.recording import Exchange, Recording
from tracer.safejson import Unserializable, loads, wire_exact

Emit = Callable[[bytes], Awaitable[None]]
NO_ANSWER = -32603
INTERNAL_ERROR = -32603
MAX_PENDING = 10_000  # requests of one session in progress at once (a silent one waits for its cancel)
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
EMPTY_BATCH = "Invalid Request: an empty batch"  # (JSON-RPC 2.0: one error, not an array)
_dumps = wire_exact.dumps  # answers echo the caller's id and values exactly as sent
compact = wire_exact.compact


def error_message(req_id: Any, error: dict[str, Any]) -> bytes:
    try:
        return _dumps({"jsonrpc": "2.0", "id": req_id, "error": error})
    except Unserializable:  # the caller's values in `data` (or its id) cannot be written: say less
        short = {"code": error.get("code"), "message": compact(error.get("message"), 500)}
        try:
            return _dumps({"jsonrpc": "2.0", "id": req_id, "error": short})
        except Unserializable:
            return _dumps({"jsonrpc": "2.0", "id": None, "error": short})


def internal_error(req_id: Any, exc: BaseException) -> bytes:
    return error_message(
        req_id, {"code": INTERNAL_ERROR, "message": f"the mock cannot answer this request: {exc}"}
    )


@dataclass
class Reply:
    """What the mock will do for one incoming request (decided before anything is sent)."""

    caller: dict[str, Any]
    exchange: Exchange | None = None
    error: dict[str, Any] | None = None
    silent: bool = False  # the recorded server never answered (the host cancelled): send no answer

    @property
    def id(self) -> Any:
        return self.caller.get("id")

    @property
    def before(self) -> list[Analysed | Exchange]:
        return self.exchange.during if self.exchange is not None and self.error is None else []

    @property
    def after(self) -> list[Analysed | Exchange]:
        return self.exchange.after if self.exchange is not None and self.error is None else []

    @property
    def streams(self) -> bool:
        """Something is sent before the answer (or instead of one): HTTP must answer with SSE."""
        waits = self.exchange is not None and self.error is None and self.exchange.answered_after_cancel
        return bool(self.before) or self.silent or waits

    @property
    def recorded_status(self) -> int | None:
        ans = self.exchange.answer if self.exchange is not None else None
        http = ans.rec.http if ans is not None else None
        status = http.get("status") if http else None
        return status if type(status) is int else None

    @property
    def recorded_sse(self) -> bool:
        ans = self.exchange.answer if self.exchange is not None else None
        return bool(ans is not None and ans.rec.sse)


@dataclass
class MockServer:
    """What every served session shares: the recording, the mode, the counters for the summary."""

    recording: Recording
    mode: MatchMode = MatchMode.PARAMS
    timeout: float = 30.0  # how long to wait for the host's answer to a recorded server request
    log: Callable[[str], None] = lambda line: None
    stats: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.host_exchanges = self.recording.host_requests()

    def session(self) -> MockSession:
        self.stats["sessions"] += 1
        return MockSession(self)

    def refused(self, code: int, message: str, said: str | None = None) -> bytes:
        """The error answer (id null) to what is no request to serve (a parse error, an invalid
        request), counted as invalid, and logged when SAID: one place for both doors."""
        self.stats["invalid"] += 1
        if said is not None:
            self.log(said)
        return error_message(None, {"code": code, "message": message})

    @property
    def ok(self) -> bool:
        """No request went unmatched and the capture was whole (readable, every request answered)."""
        return not self.stats["unmatched"] and not self.recording.problems and not self.recording.unanswered()


class MockSession:
    """One host connection (a stdio pipe, a legacy HTTP session, or all stateless HTTP requests)."""

    def __init__(self, server: MockServer):
        self.server = server
        self.matcher = Matcher(server.host_exchanges, server.mode)
        self._next_id = 0
        self._waiting: dict[tuple, asyncio.Future] = {}
        self._cancel_events: dict[tuple | None, asyncio.Event] = {}
        self.tasks: dict[tuple, asyncio.Task] = {}
        self.parked: set[asyncio.Task] = set()
        self.parked_changed = asyncio.Event()

    # -- deciding --------------------------------------------------------------------------------

    def decide(self, obj: dict[str, Any]) -> Reply:
        """What to do for one request. Whatever the host sent, the answer is a Reply: a request the
        mock cannot handle gets a -32603 error, and the mock serves the next one."""
        try:
            return self._decide(obj)
        except Exception as exc:  # one bad request costs one error answer, never the server
            self.server.stats["errors"] += 1
            self.server.log(f"cannot handle a {compact(obj.get('method'), 60)} request: {exc!r}")
            return Reply(
                obj, error={"code": INTERNAL_ERROR, "message": f"the mock cannot answer this request: {exc}"}
            )

    def _decide(self, obj: dict[str, Any]) -> Reply:
        method = obj.get("method")
        params = obj.get("params")
        m = self.matcher.match(method, params)
        stats = self.server.stats
        if not m.ok:
            if method == "ping" and not self.matcher.known_method("ping"):
                stats["served"] += 1
                return Reply(obj, error=None, exchange=None)
            stats["unmatched"] += 1
            self.server.log(f"no match for {method_text(method)} {compact(_strip_meta(params))}: {m.message}")
            return Reply(obj, error=m.error())
        ex = m.exchange
        assert ex is not None
        stats["served"] += 1
        if ex.answer is None:
            if ex.cancelled:
                return Reply(obj, ex, silent=True)
            stats["no_answer"] += 1
            msg = (
                f"the recording has no answer for this {ex.method} request (capture line {ex.line}): "
                f"the capture ends before the server answered"
            )
            self.server.log(msg)
            return Reply(obj, ex, error={"code": NO_ANSWER, "message": msg})
        return Reply(obj, ex)

    # -- performing ------------------------------------------------------------------------------

    def answer_bytes(self, reply: Reply) -> bytes | None:
        """The answer with the caller's id (the recorded bytes themselves when the ids agree)."""
        try:
            return self._answer_bytes(reply)
        except Unserializable as exc:
            self.server.stats["errors"] += 1
            return internal_error(reply.id, exc)

    def _answer_bytes(self, reply: Reply) -> bytes | None:
        if reply.error is not None:
            return error_message(reply.id, reply.error)
        if reply.exchange is None:  # an unrecorded ping
            return _dumps({"jsonrpc": "2.0", "id": reply.id, "result": {}})
        if reply.silent:
            return None
        ans = reply.exchange.answer
        assert ans is not None
        obj = ans.obj
        if (
            ans.batch_seq is None
            and type(obj) is dict
            and id_key(obj.get("id")) == id_key(reply.id)
            and type(obj.get("id")) is type(reply.id)
        ):
            return ans.rec.raw.rstrip(b"\r")
        out = dict(obj)
        out["id"] = reply.id
        return _dumps(out)

    async def perform(
        self, reply: Reply, emit: Emit, emit_after: Emit | None = None, emit_answer: Emit | None = None
    ) -> None:
        """Send everything for one request: before, the answer, after. A silent reply waits to be cancelled.
        If anything fails before the answer went out, the answer is a -32603 error."""
        sent: list[bool] = []

        async def answer(data: bytes) -> None:
            sent.append(True)
            await (emit_answer or emit)(data)

        try:
            await self._perform(reply, emit, emit_after, answer, wait_silent=emit_answer is None)
        except (asyncio.CancelledError, ConnectionError, OSError):
            raise
        except Exception as exc:
            self.server.stats["errors"] += 1
            self.server.log(f"cannot answer a {compact(reply.caller.get('method'), 60)} request: {exc!r}")
            if not sent:
                await (emit_answer or emit)(internal_error(reply.id, exc))

    async def _perform(
        self, reply: Reply, emit: Emit, emit_after: Emit | None, emit_answer: Emit, *, wait_silent: bool
    ) -> None:
        token = _progress_token(reply.caller)
        await self._emit_all(reply.before, emit, token)
        if reply.exchange is not None and reply.exchange.answered_after_cancel and reply.error is None:
            # The recorded server answered only once the host had cancelled (e.g. -32800): do the same.
            key = id_key(reply.id)
            event = self._cancel_events.setdefault(key, asyncio.Event())
            self._park()
            try:
                await asyncio.wait_for(event.wait(), self.server.timeout)
            except TimeoutError:
                pass
            finally:
                self._cancel_events.pop(key, None)
                self._unpark()
        answer = self.answer_bytes(reply)
        if answer is None:
            if wait_silent:
                self._park()  # until the host cancels (notifications/cancelled or a closed stream)
                try:
                    await asyncio.Event().wait()
                finally:
                    self._unpark()
            return
        await emit_answer(answer)
        if reply.after:
            await self._emit_all(reply.after, emit_after or emit, token)

    def _park(self) -> None:
        """This request now waits on the host (a cancel): the end-of-input drain need not wait for it."""
        task = asyncio.current_task()
        if task is not None:
            self.parked.add(task)
        self.parked_changed.set()

    def _unpark(self) -> None:
        task = asyncio.current_task()
        self.parked.discard(task)

    async def drain(self, bound: float) -> None:
        """At end of input: let the requests already read finish, except those waiting on the host."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + bound
        while True:
            running = [t for t in self.tasks.values() if not t.done() and t not in self.parked]
            remaining = deadline - loop.time()
            if not running or remaining <= 0:
                return
            self.parked_changed.clear()
            changed = asyncio.create_task(self.parked_changed.wait())
            await asyncio.wait([*running, changed], timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            changed.cancel()

    async def _emit_all(self, items: list[Analysed | Exchange], emit: Emit, token: Any) -> None:
        for item in items:
            if isinstance(item, Exchange):
                await self._server_request(item, emit)
                continue
            try:
                data = _notification_bytes(item, token)
            except Unserializable as exc:  # the caller's progress token cannot be written: leave it out
                self.server.log(f"a recorded {item.method} left out: {exc}")
                continue
            if data is not None:
                await emit(data)

    async def _server_request(self, ex: Exchange, emit: Emit) -> None:
        """A request the recorded server made (legacy sampling, roots, elicitation): ask, await the answer."""
        self._next_id += 1
        rid = self._next_id
        obj = dict(ex.request.obj)
        obj["id"] = rid
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._waiting[("n", rid)] = fut
        try:
            await emit(_dumps(obj))
            try:
                await asyncio.wait_for(fut, self.server.timeout)
            except TimeoutError:
                self.server.log(
                    f"the host did not answer {ex.method} within {self.server.timeout:g}s; going on"
                )
        finally:
            self._waiting.pop(("n", rid), None)

    # -- incoming messages -----------------------------------------------------------------------

    def on_response(self, c: Classified) -> bool:
        """The host answered one of our requests. False when it answers nothing we asked."""
        fut = self._waiting.get(c.idkey) if c.idkey is not None else None
        if fut is None or fut.done():
            return False
        fut.set_result(c.obj)
        return True

    def on_notification(self, c: Classified) -> None:
        if c.method == "notifications/cancelled":
            params = c.obj.get("params") if type(c.obj) is dict else None
            key = id_key(params.get("requestId")) if type(params) is dict else None
            if key is None:
                return
            event = self._cancel_events.get(key)
            if event is not None:  # the recording answers this cancel: let the answer go out
                event.set()
                return
            task = self.tasks.get(key)
            if task is not None:
                task.cancel()

    async def receive(self, raw: bytes, emit: Emit) -> None:
        """A stream transport (stdio): handle one framed message; requests run as their own tasks."""
        if not raw.strip():
            return
        c = classify_raw(raw)
        if c.kind is Kind.REQUEST:
            self._start(c, self.decide(c.obj), emit)
        elif c.kind is Kind.RESULT or c.kind is Kind.ERROR:
            self.on_response(c)
        elif c.kind is Kind.NOTIFICATION:
            self.on_notification(c)
        elif c.kind is Kind.BATCH:
            await self._batch(c, emit)
        else:
            said = f"not a JSON-RPC message ({c.reason}); answered with a parse error"
            await emit(self.server.refused(PARSE_ERROR, f"Parse error: {c.reason}", said))

    def _start(self, c: Classified, reply: Reply, emit: Emit) -> None:
        if len(self.tasks) >= MAX_PENDING:  # a host that never cancels must not grow the mock without end
            self.server.stats["errors"] += 1
            reply = Reply(
                reply.caller,
                error={
                    "code": INTERNAL_ERROR,
                    "message": f"the mock has {len(self.tasks)} "
                    "requests of this session in progress; cancel or wait for some first",
                },
            )
        task = asyncio.create_task(self.perform(reply, emit))
        key = c.idkey
        if key is not None:
            self.tasks[key] = task
            task.add_done_callback(
                lambda t, k=key: self.tasks.pop(k, None) if self.tasks.get(k) is t else None
            )
        task.add_done_callback(_swallow)

    async def _batch(self, c: Classified, emit: Emit) -> None:
        """A JSON-RPC batch (legacy 2025-03-26): answer every request member in one array."""
        answers: list[Any] = []

        async def collect(data: bytes) -> None:
            answers.append(loads(data))

        if not c.members:  # JSON-RPC 2.0: an empty array is answered with one error, not an array
            said = "an empty batch; answered with an invalid-request error"
            await emit(self.server.refused(INVALID_REQUEST, EMPTY_BATCH, said))
            return
        for mc in c.members:
            if mc.kind is Kind.INVALID:
                # (JSON-RPC 2.0: each member that is not a message gets an error in the answers,
                # so a batch of garbage is heard back from, as a single garbage line is)
                said = f"a batch member is not a JSON-RPC message ({mc.reason}); answered with an error"
                answers.append(
                    loads(self.server.refused(INVALID_REQUEST, f"Invalid Request: {mc.reason}", said))
                )
            elif mc.kind is Kind.REQUEST:
                await self.perform(self.decide(mc.obj), emit, emit_answer=collect)
            elif mc.kind in (Kind.RESULT, Kind.ERROR):
                self.on_response(mc)
            elif mc.kind is Kind.NOTIFICATION:
                self.on_notification(mc)
        if answers:
            await emit(_dumps(answers))

    async def close(self) -> None:
        for task in list(self.tasks.values()):
            task.cancel()
        for fut in self._waiting.values():
            if not fut.done():
                fut.cancel()


def _swallow(task: asyncio.Task) -> None:
    if not task.cancelled():
        exc = task.exception()
        if exc is not None and not isinstance(exc, (ConnectionError, OSError)):
            raise exc


def _strip_meta(params: Any) -> Any:
    if type(params) is dict and "_meta" in params:
        return {k: v for k, v in params.items() if k != "_meta"}
    return params


def _progress_token(caller: dict[str, Any]) -> Any:
    params = caller.get("params")
    meta = params.get("_meta") if type(params) is dict else None
    return meta.get("progressToken") if type(meta) is dict else None


def _notification_bytes(m: Analysed, token: Any) -> bytes | None:
    """A recorded notification as it should go to this caller (None: leave it out)."""
    obj = m.obj
    if type(obj) is not dict:
        return None
    params = obj.get("params")
    if m.method == "notifications/progress" and type(params) is dict and "progressToken" in params:
        if token is None:
            return None  # this caller asked for no progress
        if params["progressToken"] == token and type(params["progressToken"]) is type(token):
            return m.rec.raw.rstrip(b"\r") if m.batch_seq is None else _dumps(obj)
        out = dict(obj)
        out["params"] = {**params, "progressToken": token}
        return _dumps(out)
    return m.rec.raw.rstrip(b"\r") if m.batch_seq is None else _dumps(obj)
