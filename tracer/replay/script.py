"""Turn a recorded conversation into the host's script: what to send, in which order, after what.

Every message the host sent becomes a step (its own answers to server requests excepted: those are
given when the new server asks). Before a step, the replayer waits for what the recorded host had
seen before sending it: the answers that had arrived, and the progress notifications of requests
still running (a host that cancels after the first progress notification is re-driven the same
way). A host that did not wait (concurrent requests) is not made to wait.

MRTR: a request carrying `requestState` / `inputResponses` is linked to the round it retries (same
method, same tool / prompt / resource, answered with `resultType: input_required`), so the replayer
can send the state the *new* server returned. A legacy session whose capture starts after the
handshake gets a synthesised `initialize` (the new server would refuse everything without it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracer import __version__
from tracer.model import Analysed, Direction, Era, Kind
from tracer.protocol import LEGACY_VERSIONS
from tracer.replay.recording import Conversation, Exchange, describe_request
from tracer.safejson import wire_exact

DEFAULT_LEGACY_VERSION = "2025-11-25"


@dataclass(eq=False)
class Step:
    kind: str  # "request", "notification", "batch" (sent as recorded), "raw" (not JSON-RPC: sent as recorded)
    raw: bytes
    obj: Any = None
    msg: Analysed | None = None
    exchanges: list[Exchange] = field(default_factory=list)  # the request(s) this step sends
    waits: list[Wait] = field(default_factory=list)
    retry_of: Step | None = None  # MRTR: the round this request retries
    synthetic: bool = False
    index: int = 0

    @property
    def exchange(self) -> Exchange | None:
        return self.exchanges[0] if self.kind == "request" and self.exchanges else None

    @property
    def method(self) -> str:
        return (self.obj.get("method") if type(self.obj) is dict else None) or ""

    def label(self) -> str:
        params = self.obj.get("params") if type(self.obj) is dict else None
        return describe_request(self.method, params if type(params) is dict else None)


@dataclass(frozen=True, eq=False)
class Wait:
    """Before a step: wait for the answer to `step`'s request, or (progress > 0) for that many of its
    progress notifications (an answer also ends that wait)."""

    step: Step
    exchange: Exchange
    progress: int = 0


@dataclass(eq=False)
class Plan:
    conversation: Conversation
    steps: list[Step]
    notes: list[str] = field(default_factory=list)

    @property
    def requests(self) -> list[Step]:
        return [s for s in self.steps if s.kind in ("request", "batch")]


def plan(conv: Conversation) -> Plan:
    steps: list[Step] = []
    notes: list[str] = []
    by_request = {id(ex.request): ex for ex in conv.host_requests}
    answer_of = {id(ex.answer): ex for ex in conv.host_requests if ex.answer is not None}
    step_of: dict[int, Step] = {}  # id(exchange) -> the step that sends it
    progress_owner: dict[int, Exchange] = {}  # id(progress notification) -> the request it reports on
    for ex in conv.host_requests:
        for item in ex.during:
            if isinstance(item, Analysed) and item.method == "notifications/progress":
                progress_owner[id(item)] = ex
    waits: list[Wait] = []
    seen_progress: dict[int, int] = {}

    if conv.era is Era.LEGACY and not conv.legacy and conv.host_requests:
        init, note = _synthesised_handshake(conv)
        steps.extend(init)
        notes.append(note)
        waits.append(Wait(init[0], init[0].exchanges[0]))

    closes = sorted(conv.closed_streams, key=lambda c: c[0])
    for m in _with_closes(conv.messages, closes):
        if isinstance(m, Exchange):  # the host closed this request's stream: replay it as a cancellation
            step = _cancel_step(m)
            step.waits = waits
            waits = []
            step.index = len(steps)
            steps.append(step)
            continue
        if m.rec.dir is Direction.C2S:
            step = _step_for(m, by_request)
            if step is None:
                continue
            for ex in step.exchanges:
                step_of[id(ex)] = step
            step.waits = waits
            waits = []
            step.index = len(steps)
            steps.append(step)
            continue
        # server -> host: what the host will have seen before its next message
        for one in (m.members or ()) if m.kind is Kind.BATCH else (m,):
            if one.kind in (Kind.RESULT, Kind.ERROR):
                ex = answer_of.get(id(one))
                # An answer to a request the host had already cancelled is not something it waited for.
                if ex is not None and id(ex) in step_of and not ex.answered_after_cancel:
                    waits.append(Wait(step_of[id(ex)], ex))
            elif one.kind is Kind.NOTIFICATION and id(one) in progress_owner:
                ex = progress_owner[id(one)]
                if id(ex) in step_of:
                    seen_progress[id(ex)] = seen_progress.get(id(ex), 0) + 1
                    waits.append(Wait(step_of[id(ex)], ex, progress=seen_progress[id(ex)]))
    _link_retries(steps)
    return Plan(conv, steps, notes)


def _with_closes(messages: list[Analysed], closes: list[tuple[int, Exchange]]):
    """The messages in order, with each closed stream's exchange placed where the stream closed."""
    i = 0
    for m in messages:
        while i < len(closes) and closes[i][0] < m.seq:
            yield closes[i][1]
            i += 1
        yield m
    for _, ex in closes[i:]:
        yield ex


def _cancel_step(ex: Exchange) -> Step:
    """A recorded closed stream becomes `notifications/cancelled`: the stdio and legacy way to say it; the
    HTTP peer turns it back into a closed stream for a modern request."""

    obj = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": ex.request.id, "reason": "the host closed the request's stream (recorded)"},
    }
    return Step("notification", wire_exact.dumps(obj), obj, None, synthetic=True)


def _step_for(m: Analysed, by_request: dict[int, Exchange]) -> Step | None:
    raw = m.rec.raw
    if m.kind is Kind.REQUEST:
        ex = by_request.get(id(m))
        return Step("request", raw, m.obj, m, [ex] if ex else [])
    if m.kind is Kind.NOTIFICATION:
        return Step("notification", raw, m.obj, m)
    if m.kind is Kind.BATCH:
        members = m.members or ()
        exs = [by_request[id(x)] for x in members if x.kind is Kind.REQUEST and id(x) in by_request]
        if members and all(x.kind in (Kind.RESULT, Kind.ERROR) for x in members):
            return None  # the host's batched answers to server requests: given when asked
        return Step("batch", raw, m.obj, m, exs)
    if m.kind in (Kind.RESULT, Kind.ERROR):
        return None  # the host's answer to a server request: given when the new server asks
    return Step("raw", raw, m.obj, m)


def _link_retries(steps: list[Step]) -> None:
    open_rounds: list[Step] = []
    for step in steps:
        if step.kind != "request" or step.exchange is None:
            continue
        params = step.obj.get("params") if type(step.obj) is dict else None
        if type(params) is dict and ("requestState" in params or "inputResponses" in params):
            target = _subject(step.method, params)
            for earlier in reversed(open_rounds):
                ep = earlier.obj.get("params") or {}
                if earlier.method == step.method and _subject(earlier.method, ep) == target:
                    step.retry_of = earlier
                    open_rounds.remove(earlier)
                    break
        if step.exchange.input_required:
            open_rounds.append(step)


def _subject(method: str, params: dict) -> tuple:
    """What a retry must repeat: the tool / prompt / resource and its arguments."""
    return (
        method,
        params.get("name"),
        params.get("uri"),
        repr(params.get("arguments")) if params.get("arguments") is not None else None,
    )


def _synthesised_handshake(conv: Conversation) -> tuple[list[Step], str]:
    version = next((m.version for m in conv.messages if m.version in LEGACY_VERSIONS), DEFAULT_LEGACY_VERSION)

    req = {
        "jsonrpc": "2.0",
        "id": "mcptrace-replay-init",
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "mcptrace-replay", "version": __version__},
        },
    }
    note_obj = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    from tracer.classify import classify_raw
    from tracer.model import Record, RecordType

    raw = wire_exact.dumps(req)
    c = classify_raw(raw)
    fake = Analysed(
        Record(RecordType.MESSAGE, dir=Direction.C2S, raw=raw, conn=conv.conn),
        c.kind,
        c.obj,
        c.method,
        c.id,
        c.idkey,
    )
    ex = Exchange(fake, conn=conv.conn)
    first = Step("request", raw, req, fake, [ex], synthetic=True)
    second = Step("notification", wire_exact.dumps(note_obj), note_obj, None, synthetic=True)
    second.waits = [Wait(first, ex)]
    note = (
        f"connection {conv.conn}: the capture has no initialize handshake (it starts mid-session); "
        f"replay opens one itself (protocol version {version})"
    )
    return [first, second], note
