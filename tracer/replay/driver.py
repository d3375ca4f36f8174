"""Re-drive one conversation against a server: send the host's steps, answer the server, collect answers.

Ids: the recorded ids are sent as they were (progress tokens and cancellations keep pointing at the
right request) unless one is still awaiting an answer in the new run, in which case the request gets
a fresh id and later references to it are rewritten. The server's requests are answered from the
recording with the *new* server's id. MRTR retries carry the `requestState` the new server returned
and the recorded `inputResponses`, re-keyed to the new server's `inputRequests`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from tracer.classify import Classified, classify_raw, id_key
from tracer.model import Kind
from tracer.replay.diff import Difference, Ignores, diff
from tracer.replay.matcher import Matcher, MatchMode
from tracer.replay.peers import Peer
from tracer.replay.recording import Exchange
from tracer.replay.script import Plan, Step, Wait
from tracer.safejson import Unserializable, wire_exact


def _wire(obj: Any, fallback: bytes) -> bytes:
    """`obj` as the bytes to send, exactly as captured (lone surrogates as escapes, big integers
    kept: tracer.safejson.wire_exact); a value too deep for any encoder goes as `fallback`, the bytes
    captured for it."""
    try:
        return wire_exact.dumps(obj)
    except Unserializable:
        return fallback


@dataclass(eq=False)
class Sent:
    """What became of one recorded request in the new run."""

    step: Step
    exchange: Exchange
    id: Any = None
    sent: bool = False
    skipped: str | None = None  # why it was deliberately not sent (an MRTR retry that was not needed)
    unsent: str | None = None  # why it could not be sent (the server had gone away)
    sent_at: float = 0.0
    answer: Any = None  # the new answer (parsed)
    answered_at: float = 0.0
    progress: int = 0

    @property
    def answered(self) -> bool:
        return self.answer is not None


@dataclass(eq=False)
class ServerAsk:
    """A request the new server made, and how the replayer answered it."""

    method: str
    params: Any
    outcome: str  # "answered", "differs" (answered with the closest recorded one), "not recorded"
    recorded: Exchange | None = None
    differences: list[Difference] = field(default_factory=list)
    note: str = ""


@dataclass(eq=False)
class RunResult:
    plan: Plan
    sent: list[Sent]
    asks: list[ServerAsk]
    unasked: list[Exchange]  # recorded server requests the new server never made
    problems: list[str]
    no_answer_reason: dict[tuple, str]
    stray: int = 0  # answers to nothing we sent


class Replayer:
    def __init__(
        self, plan: Plan, peer: Peer, *, timeout: float = 10.0, server_requests: list[Exchange] | None = None
    ):
        self.plan = plan
        self.peer = peer
        self.timeout = timeout
        recorded_asks = server_requests if server_requests is not None else plan.conversation.server_requests
        self.asks_matcher = Matcher(recorded_asks, MatchMode.PARAMS, what="server request")
        self.recorded_asks = recorded_asks
        self.used_asks: set[int] = set()
        self.sent: dict[int, Sent] = {}  # id(step exchange) -> Sent
        self.pending: dict[tuple, Sent] = {}  # new id -> Sent awaiting its answer
        self.by_token: dict[tuple, Sent] = {}
        self.recorded_to_new: dict[tuple, Any] = {}  # recorded request id -> id sent in this run
        self.asks: list[ServerAsk] = []
        self.cond = asyncio.Condition()
        self.closed = False
        self.stray = 0
        self._tasks: set[asyncio.Task] = set()
        self._next_free = 0
        for step in plan.steps:
            for ex in step.exchanges:
                self.sent[id(ex)] = Sent(step, ex)
                rid = ex.request.id
                if type(rid) is int:
                    self._next_free = max(self._next_free, rid)

    # -- the run ---------------------------------------------------------------------------------

    async def run(self) -> RunResult:
        reader = asyncio.create_task(self._read())
        try:
            for step in self.plan.steps:
                if self.closed:
                    self._skip_rest(step)
                    continue
                await self._wait(step.waits)
                await self._send(step)
            await self._drain()
        finally:
            await self.peer.close()
            await reader
            for t in list(self._tasks):
                t.cancel()
        unasked = [ex for ex in self.recorded_asks if id(ex) not in self.used_asks]
        return RunResult(
            self.plan,
            list(self.sent.values()),
            self.asks,
            unasked,
            self.peer.problems,
            self.peer.no_answer_reason,
            self.stray,
        )

    def _skip_rest(self, step: Step) -> None:
        for ex in step.exchanges:
            s = self.sent[id(ex)]
            if not s.sent and s.skipped is None:
                s.unsent = "not sent: the server had gone away"

    async def _wait(self, waits: list[Wait]) -> None:
        for w in waits:
            s = self.sent.get(id(w.exchange))
            if s is None or not s.sent:
                continue

            def ready(s: Sent = s, w: Wait = w) -> bool:
                return (
                    self.closed
                    or s.answered
                    or (w.progress > 0 and s.progress >= w.progress)
                    or id_key(s.id) in self.peer.no_answer_reason
                )

            remaining = s.sent_at + self.timeout - time.monotonic()
            if remaining <= 0:
                continue
            async with self.cond:
                try:
                    await asyncio.wait_for(self.cond.wait_for(ready), remaining)
                except TimeoutError:
                    pass

    async def _drain(self) -> None:
        """After the last step: wait for every answer still due (cancelled requests are not due)."""
        for s in self.sent.values():
            if s.sent and not s.answered and not s.exchange.cancelled:
                await self._wait([Wait(s.step, s.exchange)])

    # -- sending ---------------------------------------------------------------------------------

    async def _send(self, step: Step) -> None:
        if step.kind == "request":
            ex = step.exchange
            if ex is None:
                await self.peer.send(step.raw, step.obj)
                return
            s = self.sent[id(ex)]
            obj, data = step.obj, step.raw
            if step.retry_of is not None:
                built = self._retry(step)
                if built is None:
                    return
                obj, data = built, _wire(built, step.raw)
            new_id, renamed = self._fresh_id(ex.request.id)
            if renamed:
                obj = {**obj, "id": new_id}
                data = _wire(obj, data)
            self._register(s, new_id, obj)
            await self.peer.send(data, obj)
        elif step.kind == "batch":
            members = step.obj if type(step.obj) is list else []
            for ex in step.exchanges:
                self._register(self.sent[id(ex)], ex.request.id, ex.request.obj)
            await self.peer.send(step.raw, members)
        elif step.kind == "notification":
            obj, data = self._rewrite_notification(step)
            await self.peer.send(data, obj)
        else:
            await self.peer.send(step.raw, None)

    def _register(self, s: Sent, new_id: Any, obj: Any) -> None:
        s.id = new_id
        s.sent = True
        s.sent_at = time.monotonic()
        self.pending[id_key(new_id)] = s
        self.recorded_to_new[s.exchange.request.idkey] = new_id
        params = obj.get("params") if type(obj) is dict else None
        meta = params.get("_meta") if type(params) is dict else None
        token = meta.get("progressToken") if type(meta) is dict else None
        if id_key(token) is not None:
            self.by_token[id_key(token)] = s

    def _fresh_id(self, recorded: Any) -> tuple[Any, bool]:
        """The recorded id, unless a request with it is still awaiting its answer in this run
        (a capture that reused an id while pending): then a fresh one of the same JSON type."""
        key = id_key(recorded)
        if key is None or key not in self.pending:
            return recorded, False
        self._next_free += 1
        return (self._next_free if type(recorded) is int else f"{recorded}-replay-{self._next_free}"), True

    def _rewrite_notification(self, step: Step) -> tuple[Any, bytes]:
        obj = step.obj
        if step.method == "notifications/cancelled" and type(obj) is dict:
            params = obj.get("params")
            if type(params) is dict:
                key = id_key(params.get("requestId"))
                new = self.recorded_to_new.get(key) if key is not None else None
                if new is not None and id_key(new) != key:
                    obj = {**obj, "params": {**params, "requestId": new}}
                    return obj, _wire(obj, step.raw)
        return obj, step.raw

    def _retry(self, step: Step) -> dict | None:
        """The retry of an MRTR round, built on what the new server answered that round."""
        prev = self.sent[id(step.retry_of.exchange)] if step.retry_of and step.retry_of.exchange else None
        s = self.sent[id(step.exchange)]
        if prev is None or not prev.answered:
            s.skipped = "the round it retries got no answer from the new server"
            return None
        res = prev.answer.get("result") if type(prev.answer) is dict else None
        if type(res) is not dict or res.get("resultType") != "input_required":
            s.skipped = "the new server completed the round this request retries (no input was required)"
            return None
        params = dict(step.obj.get("params") or {})
        if "requestState" in res:
            params["requestState"] = res["requestState"]
        else:
            params.pop("requestState", None)
        wanted = res.get("inputRequests")
        if type(wanted) is dict:
            params["inputResponses"] = self._input_responses(step, wanted)
        return {**step.obj, "params": params}

    def _input_responses(self, step: Step, wanted: dict) -> dict:
        """Answer the new server's inputRequests from the recorded retries (same request, any key)."""
        recorded_pairs: list[tuple[Any, Any]] = []  # (recorded input request, recorded response)
        for st in self.plan.steps:
            if st.retry_of is None or st.retry_of.exchange is None or st.retry_of.exchange.answer is None:
                continue
            asked = (st.retry_of.exchange.answer.result or {}).get("inputRequests") or {}
            given = ((st.obj or {}).get("params") or {}).get("inputResponses") or {}
            for k, req in asked.items():
                if k in given:
                    recorded_pairs.append((req, given[k]))
        mine = ((step.obj or {}).get("params") or {}).get("inputResponses") or {}
        out = {}
        for key, req in wanted.items():
            hit = next((resp for r, resp in recorded_pairs if _same_input(r, req)), None)
            if hit is None and key in mine:
                hit = mine[key]
            if hit is not None:
                out[key] = hit
        return out

    # -- receiving -------------------------------------------------------------------------------

    async def _read(self) -> None:
        while (raw := await self.peer.incoming.get()) is not None:
            if not raw:  # the peer gave up on a request (an HTTP error, a failed POST): re-check the waits
                async with self.cond:
                    self.cond.notify_all()
                continue
            c = classify_raw(raw)
            for one in (c.members or ()) if c.kind is Kind.BATCH else (c,):
                self._incoming(one)
            async with self.cond:
                self.cond.notify_all()
        self.closed = True
        async with self.cond:
            self.cond.notify_all()

    def _incoming(self, c: Classified) -> None:
        if c.kind is Kind.RESULT or c.kind is Kind.ERROR:
            s = self.pending.pop(c.idkey, None) if c.idkey is not None else None
            if s is None:
                self.stray += 1
                return
            s.answer = c.obj
            s.answered_at = time.monotonic()
        elif c.kind is Kind.NOTIFICATION and c.method == "notifications/progress":
            params = c.obj.get("params") if type(c.obj) is dict else None
            token = id_key(params.get("progressToken")) if type(params) is dict else None
            s = self.by_token.get(token) if token is not None else None
            if s is not None:
                s.progress += 1
        elif c.kind is Kind.REQUEST:
            task = asyncio.create_task(self._answer_server(c))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _answer_server(self, c: Classified) -> None:
        params = c.obj.get("params")
        m = self.asks_matcher.match(c.method or "", params)
        ask = ServerAsk(c.method or "", params, "answered")
        reply: dict[str, Any]
        if m.ok and m.exchange is not None and m.exchange.answer is not None:
            ask.recorded = m.exchange
            reply = _with_id(m.exchange.answer.obj, c.id)
        elif c.method == "ping":
            reply = {"jsonrpc": "2.0", "id": c.id, "result": {}}
            ask.note = "not recorded; answered with an empty result"
        else:
            near = self.asks_matcher.closest(c.method or "", params)
            if near is not None and near[0].method == c.method and near[0].answer is not None:
                ask.outcome = "differs"
                ask.recorded = near[0]
                ask.differences = near[1]
                reply = _with_id(near[0].answer.obj, c.id)
                ask.note = "answered with the closest recorded one"
            else:
                ask.outcome = "not recorded"
                ask.note = m.message
                reply = {"jsonrpc": "2.0", "id": c.id, "error": m.error()}
        if ask.recorded is not None:
            self.used_asks.add(id(ask.recorded))
        self.asks.append(ask)
        await self.peer.send(_wire(reply, b""), reply)


def _with_id(obj: Any, new_id: Any) -> dict[str, Any]:
    out = dict(obj) if type(obj) is dict else {"jsonrpc": "2.0"}
    out["id"] = new_id
    return out


def _same_input(a: Any, b: Any) -> bool:
    if type(a) is not dict or type(b) is not dict:
        return a == b
    return a.get("method") == b.get("method") and not diff(
        {k: v for k, v in (a.get("params") or {}).items() if k != "_meta"},
        {k: v for k, v in (b.get("params") or {}).items() if k != "_meta"},
        Ignores(defaults=False),
    )
