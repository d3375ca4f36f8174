"""The tracking writer: session facts beyond the handshake (capabilities from `server/discover`, the
last `tools/list`, list pagination, progress tokens, log level, subscriptions, MRTR rounds,
elicitation ids, HTTP flows), in `Session.track` (tracer.state.tracking). `apply` runs once per
message after the rules read the session; `link_retry` when a request is registered, before them.
"""

from __future__ import annotations

from typing import Any

from tracer.classify import id_key
from tracer.http.endpoint_rounds import endpoint_rounds
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_ERROR as _KIND_ERROR
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed
from tracer.session import PendingRequest, Session
from tracer.state.tracking import MISSING, ListChain, Listen, ProgressEntry, Round, Tracking
from tracer.tracking import PAGINATED_METHODS, deprecated_uses, flow_of, listen_of, retry_key, token_key
from tracer.update.shared import endpoint_rounds_of

_ANSWERED = ("paired", "after-cancel")  # tracer.pairing.PairStatus values that answer a request


def apply(m: Analysed, s: Session) -> None:
    """Record what this message established. Called once per message, after the rules ran."""
    kind = m.kind
    if m.era is _ERA_MODERN:
        for use in deprecated_uses(m):
            s.track.deprecated.add(use[0])
    if kind is _KIND_REQUEST:
        _request(m, s, s.track)
    elif kind is _KIND_NOTIFICATION:
        _notification(m, s, s.track)
    elif kind is _KIND_RESULT or kind is _KIND_ERROR:
        req = m.request
        if req is not None and m.pair_status in _ANSWERED:
            _response(m, s, s.track, req)


def _request(m: Analysed, s: Session, t: Tracking) -> None:
    params = m.params
    direction = m.rec.dir
    http = m.rec.http  # (flow_of, inlined: this runs on every request)
    flow = http.get("flow") if http else None
    if flow is not None and direction is _DIR_C2S and m.idkey is not None:
        req = s.pending.get((direction, m.idkey))
        if req is not None:
            t.flows.put(flow, req)
    if params is None:
        return
    meta = params.get("_meta")
    if type(meta) is dict and "progressToken" in meta:
        tok = token_key(meta["progressToken"])
        if tok is not None and (direction, tok) not in t.progress:
            t.progress.put((direction, tok), ProgressEntry(m.seq, direction, flow, "task" in params))
    method = m.method
    if method == "subscriptions/listen" and m.idkey is not None:
        filt = params.get("notifications")
        t.listens.put(m.idkey, Listen(m.seq, m.idkey, filt if type(filt) is dict else None, flow))
    elif method == "resources/subscribe":
        uri = params.get("uri")
        if type(uri) is str:
            t.resource_subs.add(uri)
    elif method == "resources/unsubscribe":
        uri = params.get("uri")
        if type(uri) is str:  # (an array is no uri, and no set member)
            t.resource_subs.discard(uri)
    elif method == "elicitation/create" and params.get("mode") == "url":
        eid = params.get("elicitationId")
        if type(eid) is str:
            t.elicitations.put(eid, m.seq)


def _notification(m: Analysed, s: Session, t: Tracking) -> None:
    method = m.method
    params = m.params
    if len(t.flows) >= t.flows.cap // 2:
        # the window is of the exchanges used last: a listen stream open all session long keeps its request
        flow = flow_of(m)
        if flow is not None and flow in t.flows:
            t.flows.move_to_end(flow)
    if params is None:
        return
    if method == "notifications/progress":
        tok = token_key(params.get("progressToken"))
        entry = t.progress.get((m.rec.dir.other, tok)) if tok is not None and m.rec.dir else None
        p = params.get("progress")
        if entry is not None and type(p) in (int, float):
            entry.last = p
            entry.last_seq = m.seq
    elif method == "notifications/subscriptions/acknowledged":
        listen = listen_of(m, t)
        if listen is not None and listen.ack_seq is None:
            filt = params.get("notifications")
            listen.ack_seq = m.seq
            listen.ack_filter = filt if type(filt) is dict else None
    elif method == "notifications/cancelled":
        key = id_key(params.get("requestId"))
        listen = t.listens.get(key) if key is not None else None
        if listen is not None and listen.ended_seq is None:
            listen.ended_seq = m.seq


def _response(m: Analysed, s: Session, t: Tracking, req: PendingRequest) -> None:
    method = req.method
    result = m.result
    meta = req.meta
    if meta is not None and "progressToken" in meta:
        tok = token_key(meta["progressToken"])
        entry = t.progress.get((req.dir, tok)) if tok is not None else None
        if entry is not None and entry.req_seq == req.seq:
            del t.progress[(req.dir, tok)]
            entry.done_seq = m.seq
            t.progress_done.put((req.dir, tok), entry)
    if m.kind is _KIND_ERROR:
        err = m.error
        code = err.get("code") if err else None
        if method == "server/discover" and code == -32601:
            t.discover_missing_seq = m.seq
        elif code == -32042 and err is not None:
            _note_elicitations(err.get("data"), m.seq, t)
        return
    if result is None:
        return
    if req.era is _ERA_MODERN and method != "server/discover":
        t.modern_results += 1
    if result.get("resultType") == "input_required":  # (is_input_required, inlined: every result)
        _open_round(m, t, req, result, s)
        return
    if method == "server/discover":
        caps = result.get("capabilities")
        t.discover_caps = caps if type(caps) is dict else {}
        t.discover_seq = m.seq
    elif method in PAGINATED_METHODS:
        _page(m, t, req, method, result)
    elif method == "logging/setLevel":
        level = (req.params or {}).get("level")
        t.log_level = level if type(level) is str else None
    elif method == "subscriptions/listen":
        listen = t.listens.get(req.idkey)
        if listen is not None and listen.ended_seq is None:
            listen.ended_seq = m.seq


def _note_elicitations(data: Any, seq: int, t: Tracking) -> None:
    items = data.get("elicitations") if type(data) is dict else None
    for e in items if type(items) is list else ():
        eid = e.get("elicitationId") if type(e) is dict else None
        if type(eid) is str:
            t.elicitations.put(eid, seq)


def _open_round(m: Analysed, t: Tracking, req: PendingRequest, result: dict, s: Session) -> None:
    key = retry_key(req.method, req.params)
    if key is None:
        return
    prev = req.retry_of
    inputs = result.get("inputRequests")
    rnd = Round(
        op_seq=prev.op_seq if prev is not None else req.seq,
        op_t_ns=prev.op_t_ns if prev is not None else req.t_ns,
        number=prev.number + 1 if prev is not None else 1,
        req_seq=req.seq,
        req_idkey=req.idkey,
        result_seq=m.seq,
        method=req.method,
        input_requests=inputs if type(inputs) is dict else None,
        state=result.get("requestState", MISSING),
    )
    t.rounds.put(key, rnd)
    if type(rnd.state) is str:
        t.rounds_by_state.put((req.method, rnd.state), rnd)
    ep = endpoint_rounds_of(m, s, req.era)  # stateless HTTP: a retry may come on another connection
    if ep is not None:
        ep.rounds.put(key, rnd)
        if type(rnd.state) is str:
            ep.by_state.put((req.method, rnd.state), rnd)


def _page(m: Analysed, t: Tracking, req: PendingRequest, method: str, result: dict) -> None:
    params = req.params or {}
    chain = t.chain_for(method, params.get("cursor"))
    if chain is None:
        chain = t.chains[method] = ListChain(method, m.seq, result.get("cacheScope", MISSING))
    nc = result.get("nextCursor")
    chain.next_cursor = nc if type(nc) is str else None
    if chain.next_cursor is not None:
        t.cursors.put((method, nc), m.seq)
    if method == "resources/list" or method == "resources/templates/list":
        _resource_page(t, chain, method, result)
        return
    if method != "tools/list":
        return
    tools = result.get("tools")
    for tool in tools if type(tools) is list else ():
        name = tool.get("name") if type(tool) is dict else None
        if type(name) is str:
            chain.names.append(name)
            chain.tools[name] = tool
    if chain.next_cursor is None:
        t.tools = chain.tools
        t.tools_order = tuple(chain.names)


RESOURCE_LIST_CAP = 10_000  # uris or templates a session remembers from one list (memory stays bounded)


def _resource_page(t: Tracking, chain: ListChain, method: str, result: dict) -> None:
    items = result.get("resources" if method == "resources/list" else "resourceTemplates")
    field_name = "uri" if method == "resources/list" else "uriTemplate"
    for item in items if type(items) is list else ():
        value = item.get(field_name) if type(item) is dict else None
        if type(value) is str and chain.uris is not None:
            chain.uris.add(value)
            if len(chain.uris) > RESOURCE_LIST_CAP:
                chain.uris = None  # too many to judge by: the rules that read the list stay silent
    if chain.next_cursor is not None:
        return
    if method == "resources/list":
        t.resources = frozenset(chain.uris) if chain.uris is not None else None
    else:
        t.templates = tuple(sorted(chain.uris)) if chain.uris is not None else None


# -- MRTR linking (called by tracer.update.pairing.register_request, before the rules) ---------


def link_retry(m: Analysed, s: Session, req: PendingRequest) -> None:
    """A request carrying `inputResponses` / `requestState` is the retry of an earlier round that
    asked for input: link it (and its future response) to the operation's first round."""
    params = req.params
    if params is None or ("inputResponses" not in params and "requestState" not in params):
        return
    t = s.track
    rnd = None
    state = params.get("requestState")
    if type(state) is str:
        rnd = t.rounds_by_state.get((m.method, state))
    key = retry_key(m.method, params) if rnd is None else None
    if key is not None:
        rnd = t.rounds.get(key)
    if rnd is None:
        ep = endpoint_rounds(m, s, m.era)  # stateless HTTP: a round on another connection
        if ep is not None:
            rnd = ep.by_state.get((m.method, state)) if type(state) is str else None
            rnd = rnd or (ep.rounds.get(key) if key is not None else None)
    if rnd is None:
        return
    req.retry_of = rnd
    req.op_seq = rnd.op_seq
    m.op_seq = rnd.op_seq
