"""Session facts beyond the handshake: capabilities from `server/discover`, the last `tools/list`, list
pagination, progress tokens, log level, subscriptions, MRTR rounds, elicitation ids, HTTP flows.

The analyser is the only writer (`apply`, called from `Analyser._apply` after the rules have read
the session); rules read `session.track` and the pure helpers here. Every table that grows with
the traffic is a `BoundedMap`, so memory stays flat on long captures.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from tracer.classify import id_key
from tracer.http.endpoint_rounds import endpoint_rounds
from tracer.model import Analysed, Direction, Era, Kind
from tracer.session import FLOW_REQUESTS_CAP, BoundedMap, PendingRequest, Session

MISSING: Any = object()  # a member that is absent (as opposed to present with a null value)

MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
PAGINATED_METHODS = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "tasks/list"}
)
_ANSWERED = ("paired", "after-cancel")  # tracer.pairing.PairStatus values that answer a request
# The window of each table below, in entries: progress tokens (active ones are a handful; a cancelled
# request's stays until 1,024 newer ones came), finished tokens, cursors, listens, MRTR rounds and
# URL elicitations. Each is used again within seconds on real traffic, and each table fills early in
# a long session, so memory stays flat (tests/test_bounded_state.py, tests/bench/bench_memory.py).
TRACK_CAP = 1_024


def token_key(value: Any) -> tuple | None:
    """A progress token with its JSON type (`1` and `"1"` are different tokens), or None."""
    if type(value) is bool:
        return None
    return id_key(value)


def flow_of(m: Analysed) -> Any:
    """The HTTP exchange a message travelled in (the POST it was the body of, or whose SSE
    response stream carried it), or None outside HTTP."""
    http = m.rec.http
    return http.get("flow") if http else None


def is_input_required(result: dict | None) -> bool:
    return result is not None and result.get("resultType") == "input_required"


def retry_key(method: str | None, params: dict | None) -> tuple | None:
    """What identifies "the same request" across MRTR rounds: method plus name/uri plus arguments
    (RULES.md MCP329's inferred correlation)."""
    if method not in MRTR_METHODS or params is None:
        return None
    target = params.get("uri") if method == "resources/read" else params.get("name")
    if type(target) is not str:
        return None
    args = params.get("arguments")
    return (method, target, canonical(args) if args is not None else "")


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def member(base: str, key: Any) -> str:
    """A JSON path to `base[key]`: `$.a.b` for plain names, `$.a["x:y"]` for any other key."""
    key = str(key)
    return f"{base}.{key}" if _IDENT.fullmatch(key) else f"{base}[{json.dumps(key)}]"


def canonical(value: Any) -> str:
    """A stable text form of a JSON value (sorted keys) for equality across messages."""
    import orjson

    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # integers beyond 64 bits
        return json.dumps(value, sort_keys=True, separators=(",", ":"))


@dataclass(slots=True, eq=False)
class Round:
    """One MRTR round that ended in an `InputRequiredResult` (the server asked for input)."""

    op_seq: int  # seq of the first request of the operation
    op_t_ns: int  # when the first request was sent
    number: int  # 1 for the first request, 2 for its first retry...
    req_seq: int  # the request this round's InputRequiredResult answered
    req_idkey: tuple
    result_seq: int  # the InputRequiredResult
    method: str
    input_requests: dict | None  # the `inputRequests` map as sent (None when absent)
    state: Any  # `requestState` as sent (MISSING when absent)


@dataclass(slots=True, eq=False)
class ProgressEntry:
    req_seq: int
    dir: Direction  # who sent the request (and the token)
    flow: Any
    task: bool  # the request was task-augmented (L4): progress may outlive the response
    last: float | None = None
    last_seq: int | None = None
    done_seq: int | None = None  # the final response


@dataclass(slots=True, eq=False)
class Listen:
    """A `subscriptions/listen` request and what the server did with it."""

    seq: int
    idkey: tuple
    filter: dict | None
    flow: Any
    ack_seq: int | None = None
    ack_filter: dict | None = None
    ended_seq: int | None = None


@dataclass(slots=True, eq=False)
class ListChain:
    """The pages of one paginated list (`cursor`/`nextCursor` chain) seen so far."""

    method: str
    start_seq: int
    scope: Any  # cacheScope of the first page (MISSING when absent)
    next_cursor: str | None = None
    names: list[str] = field(default_factory=list)  # tools/list: tool names in order
    tools: dict[str, dict] = field(default_factory=dict)
    # resources/list: the resources' uris; resources/templates/list: the uriTemplates (None: too many)
    uris: set[str] | None = field(default_factory=set)


@dataclass(slots=True, eq=False)
class Tracking:
    discover_caps: dict | None = None  # capabilities of the last server/discover result
    discover_seq: int | None = None
    discover_missing_seq: int | None = None  # server/discover answered -32601
    modern_results: int = 0  # results to modern requests other than server/discover
    tools: dict[str, dict] | None = None  # name -> Tool, from the last complete tools/list
    tools_order: tuple[str, ...] | None = None
    # from the last complete resources/list and resources/templates/list (None: not seen, or too long)
    resources: frozenset[str] | None = None
    templates: tuple[str, ...] | None = None
    chains: dict[str, ListChain] = field(default_factory=dict)
    cursors: BoundedMap = field(default_factory=lambda: BoundedMap(TRACK_CAP))  # (method, cursor) -> seq
    progress: BoundedMap = field(
        default_factory=lambda: BoundedMap(TRACK_CAP)
    )  # (dir, token) -> active entry
    progress_done: BoundedMap = field(
        default_factory=lambda: BoundedMap(TRACK_CAP)
    )  # (dir, token) -> finished
    log_level: str | None = None  # legacy logging/setLevel (accepted)
    resource_subs: set[str] = field(default_factory=set)  # legacy resources/subscribe
    listens: BoundedMap = field(default_factory=lambda: BoundedMap(TRACK_CAP))  # idkey -> Listen
    rounds: BoundedMap = field(default_factory=lambda: BoundedMap(TRACK_CAP))  # retry_key -> latest Round
    # (method, requestState) -> Round
    rounds_by_state: BoundedMap = field(default_factory=lambda: BoundedMap(TRACK_CAP))
    elicitations: BoundedMap = field(
        default_factory=lambda: BoundedMap(TRACK_CAP)
    )  # URL elicitationId -> seq
    # HTTP flow -> PendingRequest it carried
    flows: BoundedMap = field(default_factory=lambda: BoundedMap(FLOW_REQUESTS_CAP))
    deprecated: set[str] = field(default_factory=set)  # MCP905: features already reported

    def tool(self, name: Any) -> dict | None:
        """The tool of that name from the last tools/list (the pages of a list still being read
        count too)."""
        if type(name) is not str:  # a peer's `name` of another type names no tool (and is no key)
            return None
        chain = self.chains.get("tools/list")
        if chain is not None and name in chain.tools:
            return chain.tools[name]
        return self.tools.get(name) if self.tools is not None else None

    def chain_for(self, method: str, cursor: Any) -> ListChain | None:
        """The chain a list request with this cursor continues, or None (a first page)."""
        if cursor is None:
            return None
        chain = self.chains.get(method)
        if chain is not None and chain.next_cursor is not None and chain.next_cursor == cursor:
            return chain
        return None


# -- capabilities ------------------------------------------------------------------------------


def server_caps(m: Analysed, s: Session) -> dict | None:
    """The server's declared capabilities as far as this message's era knows them: legacy from
    the InitializeResult, modern from the last `server/discover` result. None: not observed."""
    if m.era is Era.MODERN:
        return s.track.discover_caps
    init = s.init
    if init is not None and init.result_seq is not None:
        return init.server_caps if init.server_caps is not None else {}
    return None


def client_caps(m: Analysed, s: Session) -> dict | None:
    """Legacy: the client's `initialize` capabilities (None when no initialize was captured)."""
    init = s.init
    if init is not None:
        return init.client_caps if init.client_caps is not None else {}
    return None


def request_client_caps(req: PendingRequest | None) -> dict | None:
    """Modern: the per-request `clientCapabilities` of a request."""
    if req is None:
        return None
    meta = req.meta
    if meta is None:
        return None
    caps = meta.get("io.modelcontextprotocol/clientCapabilities")
    return caps if type(caps) is dict else None


# -- deprecated features (MCP905) --------------------------------------------------------------

_DEPRECATED_INPUTS = {"sampling/createMessage": "Sampling", "roots/list": "Roots"}


def deprecated_uses(m: Analysed) -> list[tuple[str, str, str]]:
    """(feature, JSON path, what) for each 2026-07-28 deprecated feature this modern message uses:
    Roots, Sampling and Logging (SEP-2577) and sampling's includeContext thisServer/allServers."""
    if m.era is not Era.MODERN:
        return []
    kind = m.kind
    if kind is Kind.REQUEST:
        meta = m.meta
        if meta is not None and "io.modelcontextprotocol/logLevel" in meta:
            return [("Logging", "$.params._meta", "the request asks for log messages (logLevel)")]
        return []
    if kind is Kind.NOTIFICATION:
        if m.method == "notifications/message":
            return [("Logging", "$.method", "the server sends log messages")]
        return []
    r = m.result if kind is Kind.RESULT else None
    reqs = r.get("inputRequests") if r is not None and r.get("resultType") == "input_required" else None
    out = []
    for key, value in reqs.items() if type(reqs) is dict else ():
        method = value.get("method") if type(value) is dict else None
        feature = _DEPRECATED_INPUTS.get(method) if type(method) is str else None
        if feature is None:
            continue
        path = member("$.result.inputRequests", key)
        out.append((feature, path, f"the server asks for {method}"))
        params = value.get("params")
        ctx = params.get("includeContext") if type(params) is dict else None
        if ctx in ("thisServer", "allServers"):
            out.append(
                ("includeContext", path + ".params.includeContext", f"sampling with includeContext {ctx!r}")
            )
    return out


# -- the analyser's update ---------------------------------------------------------------------


def apply(m: Analysed, s: Session) -> None:
    """Record what this message established. Called once per message, after the rules ran."""
    kind = m.kind
    if m.era is Era.MODERN:
        for use in deprecated_uses(m):
            s.track.deprecated.add(use[0])
    if kind is Kind.REQUEST:
        _request(m, s, s.track)
    elif kind is Kind.NOTIFICATION:
        _notification(m, s, s.track)
    elif kind is Kind.RESULT or kind is Kind.ERROR:
        req = m.request
        if req is not None and m.pair_status in _ANSWERED:
            _response(m, s, s.track, req)


def _request(m: Analysed, s: Session, t: Tracking) -> None:
    params = m.params
    direction = m.rec.dir
    http = m.rec.http  # (flow_of, inlined: this runs on every request)
    flow = http.get("flow") if http else None
    if flow is not None and direction is Direction.C2S and m.idkey is not None:
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
    if len(t.flows) >= FLOW_REQUESTS_CAP // 2:
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
    if m.kind is Kind.ERROR:
        err = m.error
        code = err.get("code") if err else None
        if method == "server/discover" and code == -32601:
            t.discover_missing_seq = m.seq
        elif code == -32042 and err is not None:
            _note_elicitations(err.get("data"), m.seq, t)
        return
    if result is None:
        return
    if req.era is Era.MODERN and method != "server/discover":
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
    ep = endpoint_rounds(m, s, req.era, True)  # stateless HTTP: a retry may come on another connection
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


def listen_of(m: Analysed, t: Tracking) -> Listen | None:
    """The listen a server notification names in `_meta` subscriptionId (value and type)."""
    meta = m.meta
    if meta is None:
        return None
    key = id_key(meta.get("io.modelcontextprotocol/subscriptionId"))
    return t.listens.get(key) if key is not None else None


# -- MRTR linking (called by tracer.pairing.register_request, before the rules) ----------------


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
        ep = endpoint_rounds(m, s, m.era, False)  # stateless HTTP: a round on another connection
        if ep is not None:
            rnd = ep.by_state.get((m.method, state)) if type(state) is str else None
            rnd = rnd or (ep.rounds.get(key) if key is not None else None)
    if rnd is None:
        return
    req.retry_of = rnd
    req.op_seq = rnd.op_seq
    m.op_seq = rnd.op_seq
