"""What the HTTP rules (MCP7xx, MCP901-MCP904) know beyond one record.

The HTTP door (tracer.http.recorder) writes each exchange as records sharing `http["flow"]`: the
request's `c2s` message (or, for a GET or DELETE, the first response-side record) carries the
request headers; the first response-side record (a JSON answer, a `stream-open` event, an `http`
record) carries the status and response headers; SSE events follow, then `stream-closed`.
`observe` runs once per record of an HTTP connection, before the rules (see
`tracer.catalog.registry.observer`), and keeps its facts in `session.extra["http"]`: per flow (what
was asked, how it was answered, the stream's progress) and per session (the Mcp-Session-Id, its
termination, event ids, the HTTP+SSE endpoint). The rules only read them; `current` holds what the
observer concluded about the record being analysed.
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tracer.catalog.registry import observer
from tracer.classify import id_key
from tracer.http.endpoint_rounds import endpoint_fact
from tracer.http.headers import pairs
from tracer.http.tools import header_problem
from tracer.model import Analysed, Direction, Era, Kind, Record, RecordType
from tracer.session import BoundedMap, Session

KEY = "http"
HTTP_TRANSPORTS = ("http", "http+sse")
FLOW_CAP = 2_048  # exchanges whose facts are kept (the ones used last: each holds its headers)
RECENT_CAP = 1024  # server messages remembered to find one broadcast on two streams (MCP713)
EVENT_IDS_CAP = 4_096  # SSE event ids remembered to find one repeated on another stream (MCP715)
BROADCAST_WINDOW_NS = 1_000_000_000  # the same message on two streams within this is a broadcast
RECOGNISED_MODERN = {400: (-32020, -32021, -32022), 404: (-32601,)}
ENDPOINTS = "http-endpoints"  # key of the analysis-wide endpoint facts in `session.extra["shared"]`
ENDPOINTS_CAP = 1024
LISTERS = 4  # the connections that listed an endpoint's tools last
ENDPOINT_REQUESTS_CAP = 4096  # the newest modern request ids an endpoint saw, on any connection


@dataclass(slots=True, eq=False)
class FlowFacts:
    """One HTTP exchange as far as the records so far show it."""

    id: str
    method: str = ""
    url: str = ""
    req_headers: Any = None
    req_map: dict[str, str] = field(default_factory=dict)  # lowercased name -> first value
    first_seq: int = 0
    t_request: int = 0  # when the request was sent (a GET's first record only comes with its answer)
    body_kind: Kind | None = None  # the JSON-RPC body the client sent (None: no body)
    rpc_method: str | None = None
    idkey: tuple | None = None
    progress_token: tuple | None = None
    era: Era = Era.UNKNOWN
    header_problem: str | None = None  # modern request headers that fail validation (MCP746)
    status: int | None = None
    resp_headers: Any = None
    resp_map: dict[str, str] = field(default_factory=dict)
    content_type: str | None = None
    head_seq: int | None = None  # the record that carried the response head
    server: str | None = None  # "ip:port" the server was really reached at (the proxy's connection)
    stream: bool = False
    t_open: int = 0
    events: int = 0  # SSE events (messages, endpoint, data-less events)
    ids_seen: bool = False
    first_event: str | None = None  # "priming", "message", "endpoint", "other"
    answered_seq: int | None = None  # the final response to the request, on this flow
    t_answered: int = 0
    closed: dict | None = None  # the stream-closed event's data
    retry_seen: bool = False


@dataclass(slots=True, eq=False)
class Current:
    """What the observer concluded about the record being analysed (rules read it)."""

    seq: int = -1
    flow: FlowFacts | None = None
    head: bool = False  # this record carries the flow's response head
    first_of_flow: bool = False  # this record carries the flow's request headers
    after_answer: bool = False  # an SSE event after the flow's final response
    broadcast_seq: int | None = None  # the same message went out on another stream (MCP713)
    repeated_id_seq: int | None = None  # the SSE event id was used on another stream (MCP715)
    reconnect_gap_ms: float | None = None  # a resumption GET this long after the last close (MCP717)
    retry_ms: int | None = None


@dataclass(slots=True, eq=False)
class HttpState:
    flows: BoundedMap = field(default_factory=lambda: BoundedMap(FLOW_CAP))
    session_id: str | None = None  # the first Mcp-Session-Id the server sent
    session_seq: int | None = None
    session_t_ns: int = 0
    session_with_initialize: bool = False
    # session id -> (seq, t_ns) of the DELETE answered 2xx or the 404 that ended it / of a 404 for it
    terminated: dict[str, tuple[int, int]] = field(default_factory=dict)
    not_found: dict[str, tuple[int, int]] = field(default_factory=dict)
    endpoint: str | None = None  # HTTP+SSE: the announced POST URL
    endpoint_seq: int | None = None
    event_ids: BoundedMap = field(
        default_factory=lambda: BoundedMap(EVENT_IDS_CAP)
    )  # SSE id -> (stream, seq)
    recent: BoundedMap = field(
        default_factory=lambda: BoundedMap(RECENT_CAP)
    )  # digest -> (stream, t_ns, seq)
    retry_ms: int | None = None  # the last SSE retry the server announced
    last_close_ns: int | None = None  # when the last stream the server ended closed
    modern_rejection: tuple[int, int, int] | None = None  # (seq, status, code): MCP754
    stream_ids: bool = False  # the server attaches SSE event ids (it is resumable)
    current: Current = field(default_factory=Current)


@dataclass(slots=True, eq=False)
class EndpointFacts:
    """What every connection to one modern (stateless) endpoint shares: Streamable HTTP 2026-07-28
    has no session, so a tool list fetched on one TCP connection (or with another User-Agent)
    describes the server the others talk to, and a deprecated feature is noted once per server."""

    listers: deque = field(default_factory=lambda: deque(maxlen=LISTERS))  # Tracking, newest first
    deprecated: set[str] = field(default_factory=set)  # MCP905: features already reported
    # id key -> seq of the newest modern requests: a cancel POSTed on another TCP connection (the
    # request's own is busy streaming its answer) names one of these (MCP502)
    requests: BoundedMap = field(default_factory=lambda: BoundedMap(ENDPOINT_REQUESTS_CAP))


def _endpoint(s: Session, url: str | None, create: bool) -> EndpointFacts | None:
    return endpoint_fact(s, url, ENDPOINTS, EndpointFacts, create, ENDPOINTS_CAP)


def endpoint_tool(s: Session, facts: FlowFacts | None, name: Any) -> dict | None:
    """The tool NAME as a modern request over HTTP may rely on: from the newest complete
    `tools/list` any connection got from the same endpoint, else from this session's own."""
    ep = _endpoint(s, facts.url if facts is not None else None, False)
    for track in ep.listers if ep is not None else ():
        if track.tools is not None or "tools/list" in track.chains:
            return track.tool(name)
    return s.track.tool(name)


def endpoint_request(s: Session, rec: Record, idkey: tuple) -> int | None:
    """The seq of a recent modern request with id IDKEY sent to REC's endpoint on any connection."""
    cur = current(rec, s)
    facts = cur.flow if cur is not None else None
    ep = _endpoint(s, facts.url if facts is not None else None, False)
    return ep.requests.get(idkey) if ep is not None else None


def state(s: Session) -> HttpState | None:
    return s.extra.get(KEY)


def current(rec: Record, s: Session) -> Current | None:
    """The observer's conclusions about REC, or None outside HTTP."""
    st = s.extra.get(KEY)
    if st is None or st.current.seq != rec.seq or st.current.flow is None:
        return None  # (a record without a flow id, hand-made or hostile, has no conclusions to read)
    return st.current


def header_map(headers: Any) -> dict[str, str]:
    """Lowercased header names to their first value (looked up many times per record)."""
    out: dict[str, str] = {}
    for k, v in pairs(headers):
        out.setdefault(k.lower(), v)
    return out


def req_header(facts: FlowFacts | None, name: str) -> str | None:
    """NAME must be lowercase."""
    return facts.req_map.get(name) if facts is not None else None


def resp_header(facts: FlowFacts | None, name: str) -> str | None:
    """NAME must be lowercase."""
    return facts.resp_map.get(name) if facts is not None else None


def _token(m: Analysed) -> tuple | None:
    meta = m.meta
    return id_key(meta.get("progressToken")) if meta is not None else None


def _flow(st: HttpState, rec: Record) -> FlowFacts | None:
    http = rec.http
    fid = http.get("flow") if http else None
    if fid is None:
        return None
    flows = st.flows
    facts = flows.get(fid)
    if facts is None:
        facts = FlowFacts(fid, method=http.get("method") or "", url=http.get("url") or "", first_seq=rec.seq)
        flows.put(fid, facts)
    elif len(flows) >= FLOW_CAP // 2:
        # the window is of the flows used last: a GET stream open all session long keeps its facts
        flows.move_to_end(fid)
    return facts


@observer(HTTP_TRANSPORTS)
def observe(rec: Record, m: Analysed | None, s: Session) -> None:
    st = s.extra.get(KEY)
    if st is None:
        st = s.extra[KEY] = HttpState()
    cur = st.current = Current(seq=rec.seq)
    facts = _flow(st, rec)
    if facts is None:
        return
    cur.flow = facts
    http = rec.http
    if "req_headers" in http and facts.req_headers is None:
        facts.req_headers = http["req_headers"]
        facts.req_map = header_map(facts.req_headers)
        facts.t_request = http.get("request_t_ns") or rec.t_ns
        cur.first_of_flow = True
        _request_head(rec, facts, st, cur)
    if (
        rec.type is RecordType.MESSAGE
        and rec.dir is Direction.C2S
        and m is not None
        and facts.body_kind is None
    ):
        facts.body_kind = m.kind
        facts.rpc_method = m.method
        facts.idkey = m.idkey
        facts.era = m.era
        facts.progress_token = _token(m) if m.kind is Kind.REQUEST else None
        if m.kind is Kind.REQUEST and m.era is Era.MODERN and rec.transport == "http":
            tool = endpoint_tool(s, facts, (m.params or {}).get("name")) if m.method == "tools/call" else None
            facts.header_problem = header_problem(m, facts.req_headers, tool)
            if facts.req_map.get("mcp-session-id") is None:
                _stateless_request(s, facts, m)
    if "resp_headers" in http and facts.head_seq is None:
        facts.head_seq = rec.seq
        facts.status = http.get("status")
        facts.resp_headers = http["resp_headers"]
        facts.resp_map = header_map(facts.resp_headers)
        facts.content_type = http.get("content_type")
        server = http.get("server")
        facts.server = server if type(server) is str else None
        cur.head = True
        _response_head(rec, facts, st)
    if rec.type is RecordType.EVENT:
        _event(rec, facts, st, cur, s)
    elif rec.type is RecordType.HTTP and "client" in str(http.get("error", "")).lower():
        _cancelled_by_client(rec, facts, s)  # a JSON answer the client did not wait for
    elif rec.type is RecordType.MESSAGE and rec.dir is Direction.S2C:
        _server_message(rec, m, facts, st, cur)


def _stateless_request(s: Session, facts: FlowFacts, m: Analysed) -> None:
    """A modern request without a session: its connection joins its endpoint's shared facts."""
    ep = _endpoint(s, facts.url, True)
    if ep is None:
        return
    if s.track.deprecated is not ep.deprecated:
        ep.deprecated |= s.track.deprecated
        s.track.deprecated = ep.deprecated
    if m.idkey is not None:
        ep.requests.put(m.idkey, m.rec.seq)
    if m.method == "tools/list":
        if s.track in ep.listers:
            ep.listers.remove(s.track)
        ep.listers.appendleft(s.track)


def _request_head(rec: Record, facts: FlowFacts, st: HttpState, cur: Current) -> None:
    resuming = facts.method == "GET" and facts.req_map.get("last-event-id") is not None
    if resuming and st.last_close_ns is not None:
        cur.reconnect_gap_ms = (rec.t_ns - st.last_close_ns) / 1e6
        cur.retry_ms = st.retry_ms


def _response_head(rec: Record, facts: FlowFacts, st: HttpState) -> None:
    sid = facts.resp_map.get("mcp-session-id")
    if sid is not None and st.session_id is None:
        st.session_id = sid
        st.session_seq = rec.seq
        st.session_t_ns = rec.t_ns
        st.session_with_initialize = facts.rpc_method == "initialize"
    asked = facts.req_map.get("mcp-session-id")
    status = facts.status
    if asked is not None and status == 404:
        st.not_found.setdefault(asked, (rec.seq, rec.t_ns))
        st.terminated.setdefault(asked, (rec.seq, rec.t_ns))
    if asked is not None and facts.method == "DELETE" and status is not None and 200 <= status < 300:
        st.terminated.setdefault(asked, (rec.seq, rec.t_ns))


def _cancelled_by_client(rec: Record, facts: FlowFacts, s: Session) -> None:
    """Modern Streamable HTTP: "Closing the SSE response stream MUST be treated by the server as
    cancellation of that request" (streamable-http.mdx:L235-240). The request is over: it leaves the
    pending table (so it is not "never answered", and its id and progress token are free again)
    and is marked cancelled. Legacy streams are not: there a disconnection "SHOULD NOT be
    interpreted as the client cancelling its request"."""
    if facts.era is not Era.MODERN or facts.body_kind is not Kind.REQUEST or facts.answered_seq is not None:
        return
    key = (Direction.C2S, facts.idkey)
    req = s.pending.get(key)
    if req is None or req.seq != facts.first_seq:
        return
    del s.pending[key]
    req.cancelled_seq = rec.seq
    req.cancelled_t_ns = rec.t_ns
    s.remember_answered(key, req)
    tok = facts.progress_token
    entry = s.track.progress.get((Direction.C2S, tok)) if tok is not None else None
    if entry is not None and entry.req_seq == req.seq:
        del s.track.progress[(Direction.C2S, tok)]
        entry.done_seq = rec.seq
        s.track.progress_done.put((Direction.C2S, tok), entry)
    listen = s.track.listens.get(facts.idkey) if facts.rpc_method == "subscriptions/listen" else None
    if listen is not None and listen.ended_seq is None:
        listen.ended_seq = rec.seq


def _event(rec: Record, facts: FlowFacts, st: HttpState, cur: Current, s: Session) -> None:
    data = rec.data or {}
    name = data.get("event")
    if name == "stream-open":
        facts.stream = True
        facts.t_open = rec.t_ns
    elif name == "stream-closed":
        facts.closed = data
        if data.get("reason") in ("end", "server-closed"):
            st.last_close_ns = rec.t_ns
        elif data.get("reason") == "client-closed":
            _cancelled_by_client(rec, facts, s)
    elif name in ("sse-event", "endpoint"):
        facts.events += 1
        sse = rec.sse or {}
        if facts.events == 1:
            if name == "endpoint":
                facts.first_event = "endpoint"
            elif sse.get("id") is not None:
                facts.first_event = "priming"
            else:
                facts.first_event = "other"
        if name == "endpoint" and st.endpoint is None:
            st.endpoint = data.get("url")
            st.endpoint_seq = rec.seq
        _sse_fields(rec, facts, st, cur)
        if facts.answered_seq is not None:
            cur.after_answer = True


def _sse_fields(rec: Record, facts: FlowFacts, st: HttpState, cur: Current) -> None:
    sse = rec.sse or {}
    eid = sse.get("id")
    if eid is not None and eid != "":
        facts.ids_seen = True
        st.stream_ids = True
        seen = st.event_ids.get(eid)
        resumed = facts.method == "GET" and facts.req_map.get("last-event-id") is not None
        if seen is not None and seen[0] != facts.id and not resumed:
            cur.repeated_id_seq = seen[1]
        st.event_ids.put(eid, (facts.id, rec.seq))
    if sse.get("retry") is not None:
        facts.retry_seen = True
        st.retry_ms = sse["retry"]


def _server_message(rec: Record, m: Analysed | None, facts: FlowFacts, st: HttpState, cur: Current) -> None:
    if rec.sse is not None:
        facts.events += 1
        if facts.events == 1:
            facts.first_event = "message"
        if facts.answered_seq is not None:
            cur.after_answer = True
        _sse_fields(rec, facts, st, cur)
        digest = hashlib.blake2b(rec.raw, digest_size=12).digest()
        seen = st.recent.get(digest)
        resumed = facts.method == "GET" and facts.req_map.get("last-event-id") is not None
        if (
            seen is not None
            and seen[0] != facts.id
            and rec.t_ns - seen[1] <= BROADCAST_WINDOW_NS
            and not resumed
        ):
            cur.broadcast_seq = seen[2]
        st.recent.put(digest, (facts.id, rec.t_ns, rec.seq))
    if m is None:
        return
    if (
        m.kind in (Kind.RESULT, Kind.ERROR)
        and facts.idkey is not None
        and m.idkey == facts.idkey
        and facts.answered_seq is None
    ):
        facts.answered_seq = rec.seq
        facts.t_answered = rec.t_ns
    if m.kind is Kind.ERROR and facts.era is Era.MODERN and st.modern_rejection is None:
        err = m.error or {}
        code = err.get("code")
        status = facts.status
        if status in RECOGNISED_MODERN and code in RECOGNISED_MODERN[status]:
            st.modern_rejection = (rec.seq, status, code)
