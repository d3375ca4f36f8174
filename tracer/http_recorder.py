"""The HTTP door's logic: HTTP exchanges in, capture records out.

Shared by the mitmproxy addon (live), the `.mitm` importer and the HAR importer (offline), so the
three give the same envelopes for the same traffic. Pure: it knows nothing of mitmproxy. A caller
describes each exchange with an `Exchange` and calls, in wire order:

    rec.request(ex)                       the request and its body are complete
    tee = rec.response_headers(ex)        the response head arrived; an SSE response gets a tee
    tee.feed(chunk) ... tee.end("end")    an SSE body, chunk by chunk, as it streams
    rec.response(ex, body)                a body that was not teed is complete
    rec.failed(ex, why)                   the exchange broke (connection lost, killed)

What is recorded (capture format v1):
- a request whose body is JSON-RPC (or that carries MCP headers, or goes to a known MCP endpoint)
  becomes a `c2s` message with the HTTP method, URL and request headers;
- its JSON answer becomes an `s2c` message (status, response headers); an SSE answer becomes a
  `stream-open` event, one `s2c` message per event carrying data (with the SSE id and event name),
  an `sse-event` event for events without data (priming, retry), and a `stream-closed` event with
  the event count and the time to the first event;
- an answer without a JSON-RPC body (202, 401, 404, 405, a GET answered 405, a DELETE) becomes an
  `http` record;
- the legacy HTTP+SSE transport (2024-11-05) is followed: a GET stream whose first event is
  `endpoint` opens a session, POSTs to the announced URI join it, and closing the stream closes it.

Connections (`Record.conn`, what pairing keys on): a request and its answers always share one.
Traffic without a session id shares a per-client key (client address, User-Agent and endpoint), so
a modern client's concurrent POSTs pair within one session; when the `initialize` answer mints an
`Mcp-Session-Id`, that session keeps the connection it started on (the handshake state stays with
it) and later session-less traffic of that client gets a new one. Each HTTP+SSE stream is its own
connection.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin

import orjson

from tracer.framing import SseEvent, SseParser
from tracer.http_headers import (
    authority_path,
    endpoint_of,
    has_mcp_headers,
    header,
    is_json,
    is_sse,
    looks_jsonrpc,
    split_url,
)
from tracer.model import Direction, Record, RecordType
from tracer.redact import redact_headers

HTTP = "http"
HTTP_SSE = "http+sse"
MAX_HTTP_BODY = 64 * 1024  # bytes of a non-JSON-RPC body kept in an `http` record
UNDECIDED_EVENTS = 8  # events an unknown SSE stream may carry before it is judged not MCP
UNDECIDED_BYTES = 256 * 1024

Emit = Callable[[list[Record]], object]


@dataclass(slots=True, eq=False)
class Exchange:
    """One HTTP request/response, as much of it as is known so far."""

    id: str
    client: str  # "ip:port" of the client ("" when unknown, e.g. a HAR file)
    method: str
    url: str
    req_headers: list = field(default_factory=list)
    req_body: bytes | None = None
    t_ns: int = 0  # when the request was complete (0: now)
    status: int | None = None
    resp_headers: list | None = None
    t_resp_ns: int = 0  # when the response head arrived (0: now)


@dataclass(slots=True, eq=False)
class _Flow:
    ex: Exchange
    mcp: bool = False
    conn: str = ""
    transport: str = HTTP
    head_sent: bool = False  # a record of this flow already carried the request headers
    rpc_method: str | None = None  # the JSON-RPC method of the request body
    tee: SseTee | None = None
    done: bool = False


def _now(t_ns: int) -> int:
    return t_ns or time.time_ns()


def _client_ip(client: str) -> str:
    if not client:
        return ""
    host = client.rsplit(":", 1)[0] if client.count(":") == 1 or client.startswith("[") else client
    return host.strip("[]")


def _rpc_method(body: bytes | None) -> str | None:
    try:
        obj = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return None
    if type(obj) is dict and type(obj.get("method")) is str:
        return obj["method"]
    return None


class HttpRecorder:
    def __init__(self, emit: Emit, *, redact: bool = True):
        self.emit = emit
        self.redact = redact
        self._flows: dict[str, _Flow] = {}
        self._names: set[str] = set()
        self._fresh: dict[tuple, str] = {}  # client key -> connection for session-less traffic
        self._sid_conn: dict[str, str] = {}  # Mcp-Session-Id -> connection
        self._endpoints: set[str] = set()  # MCP endpoints seen (URL without query)
        self._sse_posts: dict[str, str] = {}  # HTTP+SSE: announced POST URL -> connection
        self._sse_streams: dict[str, tuple[str, str, str]] = {}  # conn -> (client ip, GET URL, POST URL)

    # -- the exchange, step by step --------------------------------------------------------------

    def request(self, ex: Exchange) -> None:
        f = self._flows.get(ex.id)
        if f is None:
            f = self._flows[ex.id] = _Flow(ex)
        body = ex.req_body or b""
        rpc = looks_jsonrpc(body)
        sse_conn = self._sse_conn_for(ex, rpc)
        known = endpoint_of(ex.url) in self._endpoints
        f.mcp = rpc or sse_conn is not None or has_mcp_headers(ex.req_headers) or known
        if not f.mcp:
            return
        self._assign(f, sse_conn)
        if rpc and f.transport == HTTP:
            self._endpoints.add(endpoint_of(ex.url))
        if body.strip():
            f.rpc_method = _rpc_method(body)
            self.emit([Record(RecordType.MESSAGE, dir=Direction.C2S, raw=bytes(body), t_ns=_now(ex.t_ns),
                              transport=f.transport, conn=f.conn, http=self._req_http(f))])

    def response_headers(self, ex: Exchange) -> SseTee | None:
        """The response head arrived. Returns a tee for an SSE body worth following (an MCP flow's,
        or an unknown GET stream that may turn out to be a legacy HTTP+SSE session)."""
        f = self._flows.get(ex.id)
        if f is None:
            f = self._flows[ex.id] = _Flow(ex)
        headers = ex.resp_headers or []
        sid = header(headers, "mcp-session-id")
        if not f.mcp and (sid is not None or header(headers, "mcp-protocol-version") is not None):
            f.mcp = True
            self._assign(f, None)
        if f.mcp and sid is not None:
            self._note_session(f, sid)
        if not is_sse(header(headers, "content-type")):
            return None
        if not f.mcp and ex.method != "GET":
            return None
        f.tee = SseTee(self, f, _now(ex.t_resp_ns))
        return f.tee

    def response(self, ex: Exchange, body: bytes | None, t_ns: int = 0) -> None:
        """A whole response body (not teed): a JSON answer, an error page, or a buffered SSE body
        (an importer, or a proxy that did not stream it)."""
        f = self._flows.get(ex.id)
        if f is None:  # never saw its request (or already finished)
            return
        if f.tee is None:
            self.response_headers(ex)
        if f.tee is not None:
            if not f.tee.ended:  # buffered SSE: replay it through the tee
                f.tee.feed(body or b"", t_ns)
                f.tee.end("end", t_ns)
            self._forget(f)
            return
        body = body or b""
        rpc = looks_jsonrpc(body)
        if not f.mcp:
            if not rpc:
                self._forget(f)
                return
            f.mcp = True
            self._assign(f, None)
        t = _now(t_ns)
        ok = ex.status is not None and 200 <= ex.status < 300
        if rpc or (ok and body.strip() and is_json(header(ex.resp_headers, "content-type"))):
            self.emit([Record(RecordType.MESSAGE, dir=Direction.S2C, raw=bytes(body), t_ns=t,
                              transport=f.transport, conn=f.conn, http=self._resp_http(f, full=True))])
        else:
            http = self._resp_http(f, full=True)
            if len(body) > MAX_HTTP_BODY:
                http["body_bytes"] = len(body)
            self.emit([Record(RecordType.HTTP, raw=bytes(body[:MAX_HTTP_BODY]), t_ns=t,
                              transport=f.transport, conn=f.conn, http=http)])
        self._forget(f)

    def failed(self, ex: Exchange, why: str, t_ns: int = 0) -> None:
        """The exchange broke before it completed (client or server went away, killed)."""
        f = self._flows.get(ex.id)
        if f is None:
            return
        if f.tee is not None:
            if not f.tee.ended:
                f.tee.end(_reason(why), t_ns)
        elif f.mcp and not f.done:
            http = self._resp_http(f, full=True) if ex.status is not None else self._req_http(f, head=True)
            http["error"] = why
            self.emit([Record(RecordType.HTTP, t_ns=_now(t_ns), transport=f.transport, conn=f.conn, http=http)])
        self._forget(f)

    # -- connections -----------------------------------------------------------------------------

    def _unique(self, base: str) -> str:
        name, n = base, 1
        while name in self._names:
            n += 1
            name = f"{base}#{n}"
        self._names.add(name)
        return name

    def _base(self, ex: Exchange) -> str:
        ip = _client_ip(ex.client)
        return f"{ip or 'client'}→{authority_path(ex.url)}"

    def _assign(self, f: _Flow, sse_conn: str | None) -> None:
        if f.conn:
            return
        ex = f.ex
        if sse_conn is not None:
            f.conn, f.transport = sse_conn, HTTP_SSE
            return
        sid = header(ex.req_headers, "mcp-session-id")
        if sid is not None:
            conn = self._sid_conn.get(sid)
            if conn is None:  # a session that began before the capture did
                conn = self._sid_conn[sid] = self._unique(f"{self._base(ex)} session {sid[:12]}")
            f.conn = conn
            return
        key = (_client_ip(ex.client), header(ex.req_headers, "user-agent"), endpoint_of(ex.url))
        conn = self._fresh.get(key)
        if conn is None:
            conn = self._fresh[key] = self._unique(self._base(ex))
        f.conn = conn

    def _note_session(self, f: _Flow, sid: str) -> None:
        """A response carries Mcp-Session-Id. The answer to `initialize` mints a session: it keeps
        the connection the handshake used, and the client's next session-less traffic starts anew."""
        if sid in self._sid_conn:
            return
        self._sid_conn[sid] = f.conn
        if f.rpc_method == "initialize":
            ex = f.ex
            key = (_client_ip(ex.client), header(ex.req_headers, "user-agent"), endpoint_of(ex.url))
            if self._fresh.get(key) == f.conn:
                del self._fresh[key]

    def _sse_conn_for(self, ex: Exchange, rpc: bool) -> str | None:
        """The HTTP+SSE session a request belongs to: a POST to an announced endpoint URI; or, so that
        MCP902 can flag it, a JSON-RPC POST without MCP headers to the stream's or endpoint's path
        from the client of the only open stream there."""
        conn = self._sse_posts.get(ex.url)
        if conn is not None or not rpc or has_mcp_headers(ex.req_headers) or not self._sse_streams:
            return conn
        ip = _client_ip(ex.client)
        origin, path, _ = split_url(ex.url)
        found = [c for c, (cip, get_url, post_url) in self._sse_streams.items()
                 if cip == ip and origin + path in (endpoint_of(get_url), endpoint_of(post_url))]
        return found[0] if len(found) == 1 else None

    def _open_sse_session(self, f: _Flow, uri: str) -> str:
        """A GET stream announced its `endpoint`: it is a legacy HTTP+SSE session of its own."""
        if not f.conn:
            f.conn = self._unique(self._base(f.ex) + " (HTTP+SSE)")
        f.transport = HTTP_SSE
        post_url = urljoin(f.ex.url, uri)
        self._sse_posts[post_url] = f.conn
        self._sse_streams[f.conn] = (_client_ip(f.ex.client), f.ex.url, post_url)
        return post_url

    def _close_sse_session(self, conn: str) -> None:
        entry = self._sse_streams.pop(conn, None)
        if entry is not None:
            self._sse_posts.pop(entry[2], None)

    def _forget(self, f: _Flow) -> None:
        f.done = True
        self._flows.pop(f.ex.id, None)

    # -- the HTTP facts of a record ----------------------------------------------------------------

    def _headers(self, headers: list | None) -> list:
        out = [[k, v] for k, v in (headers or [])]
        return redact_headers(out) if self.redact else out

    def _req_http(self, f: _Flow, head: bool = True) -> dict:
        ex = f.ex
        http = {"method": ex.method, "url": ex.url, "flow": ex.id}
        if head:
            http["req_headers"] = self._headers(ex.req_headers)
            http["request_t_ns"] = _now(ex.t_ns)
            ct = header(ex.req_headers, "content-type")
            if ct is not None:
                http["content_type"] = ct
            f.head_sent = True
        return http

    def _resp_http(self, f: _Flow, full: bool) -> dict:
        """A response-side record: the status always; response headers on the first record of the
        response (full); the request headers too when no record of this flow carried them yet."""
        ex = f.ex
        http = {"method": ex.method, "url": ex.url, "status": ex.status, "flow": ex.id}
        if not f.head_sent:
            http["req_headers"] = self._headers(ex.req_headers)
            http["request_t_ns"] = _now(ex.t_ns)  # a GET's first record comes with its answer
            f.head_sent = True
        if full:
            http["resp_headers"] = self._headers(ex.resp_headers)
            ct = header(ex.resp_headers, "content-type")
            if ct is not None:
                http["content_type"] = ct
        return http


def _reason(why: str) -> str:
    low = why.lower()
    if "client" in low:
        return "client-closed"
    if "server" in low:
        return "server-closed"
    return f"error: {why}"


class SseTee:
    """Follows one SSE response body. `feed` takes a copy of each chunk as it is forwarded and
    emits the records of the events it completes; the chunk itself is never touched."""

    __slots__ = (
        "ended",
        "events",
        "first_ns",
        "flow",
        "held",
        "messages",
        "opened_ns",
        "parser",
        "rec",
        "retry_seen",
        "seen",
        "state",
        "stream",
    )

    def __init__(self, rec: HttpRecorder, flow: _Flow, opened_ns: int):
        self.rec = rec
        self.flow = flow
        self.parser = SseParser()
        self.opened_ns = opened_ns
        self.first_ns: int | None = None
        self.events = 0
        self.messages = 0
        self.seen = 0  # bytes
        self.held: list[tuple[SseEvent, int]] = []  # events of a stream not yet known to be MCP
        self.ended = False
        self.stream = flow.ex.id
        self.retry_seen = False
        self.state = "mcp" if flow.mcp else "undecided"
        if flow.mcp:
            rec.emit([self._open_record(opened_ns)])

    def feed(self, chunk: bytes, t_ns: int = 0) -> None:
        if self.state == "ignored" or not chunk:
            return
        self.seen += len(chunk)
        events = self.parser.feed(chunk)
        if not events:
            if self.state == "undecided" and self.seen > UNDECIDED_BYTES:
                self._ignore()
            return
        t = _now(t_ns)
        out: list[Record] = []
        if self.state == "undecided":
            self.held.extend((ev, t) for ev in events)
            if not self._decide(out):
                self.rec.emit(out)
                return
            events, held = [], self.held
            self.held = []
            for ev, et in held:
                self._event(ev, et, out)
        for ev in events:
            self._event(ev, t, out)
        if out:
            self.rec.emit(out)

    def _decide(self, out: list[Record]) -> bool:
        """An unknown GET stream: MCP once an `endpoint` event or a JSON-RPC event shows up."""
        for ev, _t in self.held:
            if ev.event == "endpoint" or (ev.has_data and looks_jsonrpc(ev.data)):
                f = self.flow
                f.mcp = True
                if ev.event == "endpoint" and not f.conn:
                    f.conn = self.rec._unique(self.rec._base(f.ex) + " (HTTP+SSE)")
                    f.transport = HTTP_SSE
                self.rec._assign(f, None)
                self.state = "mcp"
                out.append(self._open_record(self.opened_ns))
                return True
        if len(self.held) > UNDECIDED_EVENTS or self.seen > UNDECIDED_BYTES:
            self._ignore()
        return False

    def _ignore(self) -> None:
        self.state = "ignored"
        self.held = []
        self.parser = SseParser()

    def _event(self, ev: SseEvent, t: int, out: list[Record]) -> None:
        f = self.flow
        self.events += 1
        if self.first_ns is None:
            self.first_ns = t
        sse = {"stream": self.stream, "event": ev.event}
        if ev.id is not None:
            sse["id"] = ev.id
        if ev.retry is not None:
            sse["retry"] = ev.retry
            self.retry_seen = True
        http = self.rec._resp_http(f, full=False)
        if ev.event == "endpoint":
            post_url = self.rec._open_sse_session(f, ev.data)
            out.append(Record(RecordType.EVENT, t_ns=t, transport=f.transport, conn=f.conn, http=http, sse=sse,
                              data={"event": "endpoint", "uri": ev.data, "url": post_url,
                                    "stream": self.stream, "first": self.events == 1}))
            return
        if ev.has_data and ev.data != "":
            self.messages += 1
            out.append(Record(RecordType.MESSAGE, dir=Direction.S2C, raw=ev.data.encode("utf-8", "surrogatepass"),
                              t_ns=t, transport=f.transport, conn=f.conn, http=http, sse=sse))
            return
        # no data: a priming event (id, empty data), a retry announcement, a bare id
        out.append(Record(RecordType.EVENT, t_ns=t, transport=f.transport, conn=f.conn, http=http, sse=sse,
                          data={"event": "sse-event", "stream": self.stream, "id": ev.id,
                                "retry": ev.retry, "name": ev.event}))

    def _open_record(self, t: int) -> Record:
        f = self.flow
        return Record(RecordType.EVENT, t_ns=t, transport=f.transport, conn=f.conn,
                      http=self.rec._resp_http(f, full=True),
                      data={"event": "stream-open", "stream": self.stream})

    def end(self, reason: str = "end", t_ns: int = 0) -> None:
        """The stream ended: "end" (the server finished the body), "client-closed", "server-closed"
        or "error: ..."."""
        if self.ended:
            return
        self.ended = True
        if self.state != "mcp":
            return
        f = self.flow
        t = _now(t_ns)
        tail = self.parser.finish()  # an event cut off without its blank line is discarded (WHATWG)
        data = {"event": "stream-closed", "stream": self.stream, "reason": reason, "events": self.events,
                "messages": self.messages, "duration_ms": round((t - self.opened_ns) / 1e6, 3),
                "first_event_ms": (round((self.first_ns - self.opened_ns) / 1e6, 3)
                                   if self.first_ns is not None else None)}
        if tail is not None:
            data["unterminated"] = tail.data[:200]
        if self.retry_seen:
            data["retry_seen"] = True
        recs = [Record(RecordType.EVENT, t_ns=t, transport=f.transport, conn=f.conn,
                       http=self.rec._resp_http(f, full=False), data=data)]
        if f.transport == HTTP_SSE and f.ex.method == "GET" and f.conn in self.rec._sse_streams:
            # the HTTP+SSE session lives as long as its GET stream
            self.rec._close_sse_session(f.conn)
            recs.append(Record(RecordType.EVENT, t_ns=t, transport=f.transport, conn=f.conn,
                               data={"event": "closed", "why": "HTTP+SSE stream closed"}))
        self.rec.emit(recs)


# -- offline: flow files and HAR --------------------------------------------------------------------

REQUEST, HEAD, END, FAILED = 0, 1, 2, 3


@dataclass(slots=True)
class Step:
    """One moment of a recorded exchange, for importers that read whole exchanges (a flow file, a
    HAR) and must put them back in wire order."""

    t_ns: int
    what: int  # REQUEST, HEAD, END or FAILED (also the tie-break for steps at the same time)
    index: int  # the exchange's position in the file (1-based): findings point at it
    ex: Exchange
    body: bytes | None = None  # END: the response body
    why: str = ""  # FAILED: what went wrong


def replay(steps: list[Step], source: str, *, redact: bool = True):
    """Records of recorded exchanges, in wire order (sorted by time), numbered from 1."""
    out: list[Record] = []
    recorder = HttpRecorder(out.extend, redact=redact)
    seq = 0
    for step in sorted(steps, key=lambda s: (s.t_ns, s.what, s.index)):
        ex = step.ex
        if step.what == REQUEST:
            recorder.request(ex)
        elif step.what == HEAD:
            recorder.response_headers(ex)
        elif step.what == END:
            recorder.response(ex, step.body, step.t_ns)
        else:
            recorder.failed(ex, step.why, step.t_ns)
        for rec in out:
            seq += 1
            rec.seq = seq
            rec.line = step.index
            rec.source = source
            yield rec
        out.clear()
