"""What a capture says happened, arranged for replay and mock: conversations of paired exchanges.

A conversation is one session of one connection, as the analyser delimits it (lint's sessions): a
new one starts when the capture says the connection closed, or at a new capture header, which does
not end a tee's own session (two tees appending to one file at once: tracer.analyser.tee_session). In it, every request becomes an `Exchange` with its
answer and the messages the answering side sent while it was pending (`during`) or right after
answering it (`after`): notifications, and requests of its own (legacy sampling, roots, elicitation).
The mock serves the server's side from this; the replayer re-sends the host's side and answers the
server's requests from it.

Which pending request a server message belongs to: a progress notification by its token; on HTTP
by the POST whose response stream carried it; otherwise the latest request still pending. A
message sent while nothing was pending follows the latest answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from tracer.analyser import Analyser, RuleSet
from tracer.capture import ReadProblem
from tracer.classify import id_key
from tracer.events import SessionClosed
from tracer.model import Analysed, Direction, Era, Kind, Record, RecordType
from tracer.pairing import PairStatus
from tracer.protocol import META_PROTOCOL_VERSION

_PAIRED = (PairStatus.PAIRED, PairStatus.AFTER_CANCEL)


@dataclass(eq=False)
class Exchange:
    """A request, its answer, and what the answering side sent around it."""

    request: Analysed
    answer: Analysed | None = None
    cancelled: bool = False
    cancel_seq: int | None = None  # the requester's notifications/cancelled (None: a closed stream, or none)
    # Notifications (Analysed) and requests (Exchange) from the answering side, in wire order.
    during: list[Analysed | Exchange] = field(default_factory=list)
    after: list[Analysed | Exchange] = field(default_factory=list)
    parent: Exchange | None = None  # the host request a server request was made for
    conn: str = "0"

    @property
    def seq(self) -> int:
        return self.request.seq

    @property
    def method(self) -> str:
        return self.request.method or ""

    @property
    def params(self) -> dict | None:
        return self.request.params

    @property
    def progress_token(self) -> Any:
        meta = self.request.meta
        return meta.get("progressToken") if meta else None

    @property
    def line(self) -> int:
        return self.request.rec.line

    @property
    def answered_after_cancel(self) -> bool:
        """The answer came only once the requester had cancelled (a server acknowledging the cancel)."""
        return self.cancel_seq is not None and self.answer is not None and self.answer.seq > self.cancel_seq

    @property
    def input_required(self) -> bool:
        """The answer is an MRTR InputRequiredResult (the host retries with inputResponses)."""
        res = self.answer.result if self.answer is not None else None
        return res is not None and res.get("resultType") == "input_required"

    def label(self) -> str:
        return describe_request(self.method, self.params)


@dataclass(eq=False)
class Conversation:
    conn: str
    transport: str = "stdio"
    messages: list[Analysed] = field(default_factory=list)
    host_requests: list[Exchange] = field(default_factory=list)
    server_requests: list[Exchange] = field(default_factory=list)
    leading: list[Analysed | Exchange] = field(default_factory=list)  # server messages before any answer
    # (seq, exchange): the host closed the request's SSE stream before an answer (Streamable HTTP's cancel)
    closed_streams: list[tuple[int, Exchange]] = field(default_factory=list)
    index: int = 0
    bucket: str = ""  # HTTP: "legacy" or "modern" part of a recorded connection
    session: int = 1  # the how-manieth session of its connection name in the input (2: `conn#2`)

    def rename(self, conn: str) -> None:
        self.conn = conn
        for ex in (*self.host_requests, *self.server_requests):
            ex.conn = conn

    @property
    def legacy(self) -> bool:
        return any(ex.method == "initialize" for ex in self.host_requests)

    @property
    def era(self) -> Era:
        if self.legacy:
            return Era.LEGACY
        eras = {m.era for m in self.messages}
        if Era.MODERN in eras:
            return Era.MODERN
        return Era.LEGACY if Era.LEGACY in eras else Era.UNKNOWN

    @property
    def http(self) -> bool:
        return any(m.rec.http for m in self.messages)


@dataclass(eq=False)
class Recording:
    source: str
    format: str
    conversations: list[Conversation] = field(default_factory=list)
    problems: list[ReadProblem] = field(default_factory=list)
    header: dict | None = None

    def host_requests(self) -> list[Exchange]:
        return sorted((ex for c in self.conversations for ex in c.host_requests), key=lambda e: e.seq)

    def server_requests(self) -> list[Exchange]:
        return sorted((ex for c in self.conversations for ex in c.server_requests), key=lambda e: e.seq)

    def unanswered(self) -> list[Exchange]:
        """Host requests the recorded server never answered (cancelled ones excepted)."""
        return [ex for ex in self.host_requests() if ex.answer is None and not ex.cancelled]

    @property
    def message_count(self) -> int:
        return sum(len(c.messages) for c in self.conversations)


def is_modern(params: Any) -> bool:
    """A request of the 2026-07-28 era carries its protocol version in `params._meta`."""
    meta = params.get("_meta") if type(params) is dict else None
    return type(meta) is dict and META_PROTOCOL_VERSION in meta


def describe_request(method: str, params: dict | None) -> str:
    """`tools/call add`, `resources/read fixture://x`, `initialize`: what a person calls a request."""
    if params:
        name = params.get("name")
        if type(name) is str:
            return f"{method} {name}"
        uri = params.get("uri")
        if type(uri) is str:
            return f"{method} {uri}"
    return method


def _flow(m: Analysed) -> Any:
    http = m.rec.http
    return http.get("flow") if http else None


class _Builder:
    """Builds the conversations of one input, one message at a time.

    On HTTP one recorded connection may hold a legacy session and stateless modern requests (a
    recorder keys session-less traffic by client; a dual-era host probes, then falls back). They are
    kept apart (a legacy session must be replayed on its own connection, modern requests need none),
    by each request's era and, for what the server sent, by the request it belongs to.
    """

    def __init__(self) -> None:
        self.convs: list[Conversation] = []
        self.open: dict[tuple[str, str], Conversation] = {}
        self.state: dict[int, _ConvState] = {}
        self.req_bucket: dict[tuple, str] = {}  # (conn, seq, idkey) -> bucket
        self.flow_bucket: dict[tuple, str] = {}  # (conn, flow) -> bucket
        # sessions of each connection name so far: a name that comes back after a close (a later
        # recording appended to the file) is another session, named `conn#2` as the analyser does
        self.sessions: dict[str, int] = {}

    def conv(self, rec: Record, bucket: str) -> tuple[Conversation, _ConvState]:
        key = (rec.conn, bucket)
        c = self.open.get(key)
        if c is None:
            c = Conversation(rec.conn, transport=rec.transport, index=len(self.convs))
            c.bucket = bucket
            c.session = self.sessions.setdefault(rec.conn, 1)
            self.convs.append(c)
            self.open[key] = c
            self.state[id(c)] = _ConvState()
        return c, self.state[id(c)]

    def close(self, conn: str | None = None) -> None:
        ended = set()
        for key in list(self.open):
            if conn is None or key[0] == conn:
                del self.open[key]
                ended.add(key[0])
        for name in ended:  # its next message starts the next session of that name
            self.sessions[name] += 1

    def bucket(self, m: Analysed) -> str:
        rec = m.rec
        if not rec.http:
            return ""  # stdio and logs: one session per connection
        conn = rec.conn
        one = m.members[0] if m.kind is Kind.BATCH and m.members else m
        flow = _flow(m)
        if rec.dir is Direction.C2S and one.kind in (Kind.REQUEST, Kind.NOTIFICATION):
            b = "modern" if is_modern(one.params) else "legacy"
            if one.kind is Kind.REQUEST:
                self.req_bucket[(conn, one.seq, one.idkey)] = b
            if flow is not None:
                self.flow_bucket[(conn, flow)] = b
            return b
        req = one.request if one.kind in (Kind.RESULT, Kind.ERROR) else None
        if rec.dir is Direction.S2C and flow is not None and (conn, flow) in self.flow_bucket:
            b = self.flow_bucket[(conn, flow)]  # the answer stream of that POST
        elif req is not None and (conn, req.seq, req.idkey) in self.req_bucket:
            return self.req_bucket[(conn, req.seq, req.idkey)]
        else:
            b = "legacy" if (conn, "legacy") in self.open else "modern"
        if one.kind is Kind.REQUEST:  # a server request: its answer from the host follows it
            self.req_bucket[(conn, one.seq, one.idkey)] = b
        return b

    def stream_closed(self, rec: Record) -> None:
        """The host closed a request's SSE stream before its answer: on Streamable HTTP that is how it
        cancels (2026-07-28) or gives up on it; either way no answer was coming."""
        data = rec.data or {}
        if not str(data.get("reason", "")).startswith("client"):
            return
        stream = data.get("stream") or (rec.http or {}).get("flow")
        for (conn, _), c in self.open.items():
            if conn != rec.conn:
                continue
            for ex in self.state[id(c)].pending_host.values():
                if stream is not None and _flow(ex.request) == stream and not ex.cancelled:
                    ex.cancelled = True
                    c.closed_streams.append((rec.seq, ex))

    def message(self, m: Analysed) -> None:
        c, st = self.conv(m.rec, self.bucket(m))
        c.messages.append(m)
        for one in m.members if m.kind is Kind.BATCH and m.members else (m,):
            st.one(c, one)

    def finish(self) -> list[Conversation]:
        convs = [c for c in self.convs if c.messages]
        by_session: dict[tuple[str, int], list[Conversation]] = {}
        for c in convs:
            by_session.setdefault((c.conn, c.session), []).append(c)
        for (conn, n), group in by_session.items():
            name = conn if n == 1 else f"{conn}#{n}"
            several = len({c.bucket for c in group}) > 1  # name the parts apart: "conn [modern]"
            for c in group:
                if several and c.bucket == "modern":
                    c.rename(f"{name} [modern]")
                elif n > 1:
                    c.rename(name)
        return convs


@dataclass
class _ConvState:
    exchanges: dict[tuple, Exchange] = field(default_factory=dict)  # (seq, idkey) -> exchange
    pending_host: dict[tuple, Exchange] = field(default_factory=dict)
    last_answered: Exchange | None = None

    def one(self, c: Conversation, m: Analysed) -> None:
        kind, direction = m.kind, m.rec.dir
        if kind is Kind.REQUEST:
            ex = Exchange(m, conn=c.conn)
            self.exchanges[(m.seq, m.idkey)] = ex
            if direction is Direction.C2S:
                c.host_requests.append(ex)
                self.pending_host[(m.seq, m.idkey)] = ex
            else:
                c.server_requests.append(ex)
                self.attribute(c, m, ex)
        elif kind is Kind.NOTIFICATION:
            if direction is Direction.C2S:
                if m.method == "notifications/cancelled":
                    self.cancel(m)
            else:
                self.attribute(c, m, m)
        elif kind is Kind.RESULT or kind is Kind.ERROR:
            ex = self.answered_on_its_stream(m)
            if ex is None:
                req = m.request
                if req is None or m.pair_status not in _PAIRED:
                    return
                ex = self.exchanges.get((req.seq, req.idkey))
            if ex is None or ex.answer is not None:
                return
            ex.answer = m
            if ex.request.rec.dir is Direction.C2S:
                self.pending_host.pop((ex.seq, ex.request.idkey), None)
                self.last_answered = ex

    def answered_on_its_stream(self, m: Analysed) -> Exchange | None:
        """HTTP: an answer travels on the response of the POST that carried its request, which says
        which request it answers even when two clients' ids collide on one recorded connection."""
        flow = _flow(m)
        if flow is None or m.rec.dir is not Direction.S2C:
            return None
        for ex in self.pending_host.values():
            if _flow(ex.request) == flow and ex.request.idkey == m.idkey:
                return ex
        return None

    def cancel(self, m: Analysed) -> None:
        params = m.params or {}
        key = id_key(params.get("requestId"))
        if key is None:
            return
        for ex in reversed(list(self.pending_host.values())):
            if ex.request.idkey == key:
                ex.cancelled = True
                ex.cancel_seq = m.seq
                return

    def attribute(self, c: Conversation, m: Analysed, item: Analysed | Exchange) -> None:
        owner = self.owner(m)
        if owner is not None:
            owner.during.append(item)
        elif self.last_answered is not None:
            owner = self.last_answered
            owner.after.append(item)
        else:
            c.leading.append(item)
        if isinstance(item, Exchange):
            item.parent = owner

    def owner(self, m: Analysed) -> Exchange | None:
        pending = list(self.pending_host.values())
        if m.kind is Kind.NOTIFICATION and m.method == "notifications/progress":
            token = (m.params or {}).get("progressToken")
            if token is not None:
                for ex in reversed(pending):
                    if ex.progress_token == token and type(ex.progress_token) is type(token):
                        return ex
        flow = _flow(m)
        if flow is not None:
            for ex in reversed(pending):
                if _flow(ex.request) == flow:
                    return ex
            return None  # another stream (the legacy GET stream): not tied to a pending request
        return pending[-1] if pending else None


def build(records: Iterable[Record | ReadProblem], source: str = "", fmt: str = "") -> Recording:
    """Analyse the records (pairing and eras only, no rules) and arrange them into conversations."""
    rec_out = Recording(source, fmt)
    analyser = Analyser(RuleSet([]))
    b = _Builder()
    for item in records:
        if isinstance(item, ReadProblem):
            rec_out.problems.append(item)
            continue
        if item.type is RecordType.HEADER and rec_out.header is None:
            rec_out.header = item.data
        a = analyser.feed(item)  # (no rules: a message's Analysed, else the sessions it ended)
        if a.__class__ is Analysed:
            b.message(a)
            continue
        if item.type is RecordType.EVENT and item.data and item.data.get("event") == "stream-closed":
            b.stream_closed(item)
        # a conversation ends where the analyser ends its session (one writer: a close event, a
        # new recording's header but not for a tee's own session, a server started again)
        for ev in a:
            if ev.__class__ is SessionClosed:
                b.close(ev.session.conn)
    rec_out.conversations = b.finish()
    return rec_out


def load(path: str, fmt: str | None = None) -> Recording:
    """Read any input `lint` reads. Raises tracer.inputs.InputError when it cannot be read at all."""
    from tracer.inputs import open_input

    inp = open_input(path, fmt=fmt)
    return build(inp.records, path, inp.format.name)
