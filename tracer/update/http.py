"""The HTTP updater: what each record of an HTTP connection shows about its exchange, its session
and its endpoint, kept in `Session.http` and `Session.shared` (types in tracer.state.http). Runs
once per record, before the rules (they read it through tracer.http.state)."""

from __future__ import annotations

import hashlib

from tracer.classify import id_key
from tracer.http.state import SERVER_ENDS, UNFINISHED_REASON, endpoint_tool, header_map
from tracer.http.tools import header_problem
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_ERROR as _KIND_ERROR
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import REC_EVENT as _REC_EVENT
from tracer.model import REC_HTTP as _REC_HTTP
from tracer.model import REC_MESSAGE as _REC_MESSAGE
from tracer.model import Analysed, Record
from tracer.session import Session
from tracer.state.http import Current, FlowFacts, HttpState
from tracer.update.pairing import remember_answered
from tracer.update.shared import endpoint_facts_of

BROADCAST_WINDOW_NS = 1_000_000_000  # the same message on two streams within this is a broadcast
RECOGNISED_MODERN = {400: (-32020, -32021, -32022), 404: (-32601,)}


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
    elif len(flows) >= flows.cap // 2:
        # the window is of the flows used last: a GET stream open all session long keeps its facts
        flows.move_to_end(fid)
    return facts


def observe(rec: Record, m: Analysed | None, s: Session) -> None:
    st = s.http
    if st is None:
        st = s.http = HttpState()
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
    if rec.type is _REC_MESSAGE and rec.dir is _DIR_C2S and m is not None and facts.body_kind is None:
        facts.body_kind = m.kind
        facts.rpc_method = m.method
        facts.idkey = m.idkey
        facts.era = m.era
        facts.progress_token = _token(m) if m.kind is _KIND_REQUEST else None
        if m.kind is _KIND_REQUEST and m.era is _ERA_MODERN and rec.transport == "http":
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
    if rec.type is _REC_EVENT:
        _event(rec, facts, st, cur, s)
    elif rec.type is _REC_HTTP and "client" in str(http.get("error", "")).lower():
        _cancelled_by_client(rec, facts, s)  # a JSON answer the client did not wait for
    elif rec.type is _REC_MESSAGE and rec.dir is _DIR_S2C:
        _server_message(rec, m, facts, st, cur)


def _stateless_request(s: Session, facts: FlowFacts, m: Analysed) -> None:
    """A modern request without a session: its connection joins its endpoint's shared facts."""
    ep = endpoint_facts_of(s.shared, facts.url)
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


def _maybe_cancelled_by_client(facts: FlowFacts, s: Session) -> None:
    """A modern request's stream broke and the capture does not say who broke it (mitmproxy's HAR
    of a stream the client gave up on: tracer.http.state.UNFINISHED). The client may have closed
    it, which cancels the request: not "never answered" (MCP211), as the flow file of the same
    traffic, which says the client disconnected, does not say either."""
    if facts.era is not _ERA_MODERN or facts.body_kind is not _KIND_REQUEST or facts.answered_seq is not None:
        return
    req = s.pending.get((_DIR_C2S, facts.idkey))
    if req is not None and req.seq == facts.first_seq:
        req.maybe_cancelled = True


def _cancelled_by_client(rec: Record, facts: FlowFacts, s: Session) -> None:
    """Modern Streamable HTTP: "Closing the SSE response stream MUST be treated by the server as
    cancellation of that request" (streamable-http.mdx:L235-240). The request is over: it leaves the
    pending table (so it is not "never answered", and its id and progress token are free again)
    and is marked cancelled. Legacy streams are not: there a disconnection "SHOULD NOT be
    interpreted as the client cancelling its request"."""
    if facts.era is not _ERA_MODERN or facts.body_kind is not _KIND_REQUEST or facts.answered_seq is not None:
        return
    key = (_DIR_C2S, facts.idkey)
    req = s.pending.get(key)
    if req is None or req.seq != facts.first_seq:
        return
    del s.pending[key]
    req.cancelled_seq = rec.seq
    req.cancelled_t_ns = rec.t_ns
    remember_answered(s, key, req)
    tok = facts.progress_token
    entry = s.track.progress.get((_DIR_C2S, tok)) if tok is not None else None
    if entry is not None and entry.req_seq == req.seq:
        del s.track.progress[(_DIR_C2S, tok)]
        entry.done_seq = rec.seq
        s.track.progress_done.put((_DIR_C2S, tok), entry)
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
        if data.get("reason") in SERVER_ENDS:
            st.last_close_ns = rec.t_ns
        elif data.get("reason") == "client-closed":
            _cancelled_by_client(rec, facts, s)
        elif data.get("reason") == UNFINISHED_REASON:  # (only that: another error says who it was)
            _maybe_cancelled_by_client(facts, s)
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


def _still_open(st: HttpState, flow_id: str) -> bool:
    """Whether the stream an earlier copy of a notification went out on could still carry this
    one. A broadcast is one message on streams connected at once: a POST stream whose request was
    answered (or that closed) is done, so the same bytes on a later stream are a new notification
    (the official SDKs' `ctx.info("step 1")` in two tool calls one after the other is
    byte-identical; a notification has no id to tell them apart). A request or a response has one:
    its copy is the same message however late. A flow no longer remembered counts as open."""
    facts = st.flows.get(flow_id)
    return facts is None or (facts.closed is None and facts.answered_seq is None)


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
            and (m is None or m.kind is not _KIND_NOTIFICATION or _still_open(st, seen[0]))
        ):
            cur.broadcast_seq = seen[2]
        st.recent.put(digest, (facts.id, rec.t_ns, rec.seq))
    if m is None:
        return
    if (
        m.kind in (_KIND_RESULT, _KIND_ERROR)
        and facts.idkey is not None
        and m.idkey == facts.idkey
        and facts.answered_seq is None
    ):
        facts.answered_seq = rec.seq
        facts.t_answered = rec.t_ns
    if m.kind is _KIND_ERROR and facts.era is _ERA_MODERN and st.modern_rejection is None:
        err = m.error or {}
        code = err.get("code")
        status = facts.status
        if status in RECOGNISED_MODERN and code in RECOGNISED_MODERN[status]:
            st.modern_rejection = (rec.seq, status, code)
