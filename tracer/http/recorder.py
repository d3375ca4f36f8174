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

Connections (`Record.conn`, what pairing keys on): a request and its answers always share one;
sessions by their `Mcp-Session-Id`, session-less traffic by the client's TCP connection (see
tracer.http.conns). Each HTTP+SSE stream is its own connection.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tracer.classify import id_key
from tracer.http.conns import Connections, answers, body_facts, client_ip, has_result
from tracer.http.headers import (
    HTTP,
    HTTP_SSE,
    endpoint_of,
    has_mcp_headers,
    header,
    is_json,
    is_sse,
    join_url,
    looks_jsonrpc,
    split_url,
)
from tracer.http.sse_tee import SseTee
from tracer.model import Direction, Record, RecordType
from tracer.redact import redact_headers, redact_url
from tracer.redact_echo import EchoGuard

MAX_HTTP_BODY = 64 * 1024  # bytes of a non-JSON-RPC body kept in an `http` record

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
    client_id: str = ""  # the client's TCP connection (mitmproxy's client connection id; "": use `client`)
    server: str = ""  # "ip:port" the server was actually reached at ("" when unknown)
    http_version: str = ""  # the request's, as on its request line ("HTTP/1.1", "HTTP/2.0"; "": unknown)


@dataclass(slots=True, eq=False)
class _Flow:
    ex: Exchange
    mcp: bool = False
    conn: str = ""
    transport: str = HTTP
    head_sent: bool = False  # a record of this flow already carried the request headers
    rpc_method: str | None = None  # the JSON-RPC method of the request body
    counted: bool = False  # counted among its connection's exchanges in progress
    rpc_key: tuple | None = None  # the id key of the request its body carries (cancels name it)
    tee: SseTee | None = None
    done: bool = False
    begun: bool = False  # an `initialize` it carries got a result (a session began)
    answered: bool = False  # its request's response came (kept only where Connections.watches)
    held: bytearray | None = None  # parts of a body not teed, for `response` (response_part)


_BODIES = (RecordType.MESSAGE, RecordType.HTTP)


def _cut(rec: Record) -> int:
    """Bytes of REC's body not kept: an SSE event over its cap (`data.cut`), an HTTP body over
    MAX_HTTP_BODY (`http.body_bytes`)."""
    data, http = rec.data, rec.http
    if data and type(data.get("cut")) is int:
        return data["cut"]
    if http and type(http.get("body_bytes")) is int:
        return http["body_bytes"] - len(rec.raw)
    return 0


def _now(t_ns: int) -> int:
    return t_ns or time.time_ns()


_client_ip = client_ip


class HttpRecorder:
    def __init__(self, emit: Emit, *, redact: bool = True):
        self._sink = emit
        self.redact = redact
        # the credential values seen in headers and URLs (bounded): hidden wherever a peer echoes
        # them, in a body, an SSE event or another header (tracer.redact_echo)
        self.echo = EchoGuard()
        self._flows: dict[str, _Flow] = {}
        self.conns = Connections(self._connection_closed)
        self._closed_at = 0  # when the TCP connection being closed closed (0: now)
        self._endpoints: set[str] = set()  # MCP endpoints seen (URL without query)
        self._sse_posts: dict[str, str] = {}  # HTTP+SSE: announced POST URL -> connection
        self._sse_streams: dict[str, tuple[str, str, str]] = {}  # conn -> (client ip, GET URL, POST URL)

    def emit(self, recs: list[Record]) -> object:
        """Records out, with the known credentials hidden in their bytes (a record that had one
        says how many: `data.redacted`)."""
        if self.redact and self.echo.watching:
            for rec in recs:
                if rec.raw and rec.type in _BODIES:
                    raw, n = self.echo.hide(rec.raw, _cut(rec))
                    if n:
                        rec.raw = raw
                        rec.data = {**(rec.data or {}), "redacted": n}
        return self._sink(recs)

    # -- the exchange, step by step --------------------------------------------------------------

    def request(self, ex: Exchange) -> None:
        f = self._flows.get(ex.id)
        if f is None:
            f = self._flows[ex.id] = _Flow(ex)
        if self.redact:  # (before its own body: a client may send the key there too)
            self.echo.learn_exchange(ex.req_headers, ex.url)
        body = ex.req_body or b""
        rpc = looks_jsonrpc(body)
        sse_conn = self._sse_conn_for(ex, rpc)
        known = endpoint_of(ex.url) in self._endpoints
        f.mcp = rpc or sse_conn is not None or has_mcp_headers(ex.req_headers) or known
        if not f.mcp:
            return
        self.assign(f, sse_conn)
        if rpc and f.transport == HTTP:
            self._endpoints.add(endpoint_of(ex.url))
        if body.strip():
            self.emit(
                [
                    Record(
                        RecordType.MESSAGE,
                        dir=Direction.C2S,
                        raw=bytes(body),
                        t_ns=_now(ex.t_ns),
                        transport=f.transport,
                        conn=f.conn,
                        http=self._req_http(f),
                    )
                ]
            )

    def response_headers(self, ex: Exchange) -> SseTee | None:
        """The response head arrived. Returns a tee for an SSE body worth following (an MCP flow's,
        or an unknown GET stream that may turn out to be a legacy HTTP+SSE session)."""
        f = self._flows.get(ex.id)
        if f is None:
            f = self._flows[ex.id] = _Flow(ex)
        headers = ex.resp_headers or []
        if self.redact:  # (a Set-Cookie value; the session id a server assigns)
            self.echo.learn_exchange(headers)
        sid = header(headers, "mcp-session-id")
        if not f.mcp and (sid is not None or header(headers, "mcp-protocol-version") is not None):
            f.mcp = True
            self.assign(f, None)
        if f.mcp and sid is not None:
            self._note_session(f, sid)
        if not is_sse(header(headers, "content-type")):
            return None
        if not f.mcp and ex.method != "GET":
            return None
        f.tee = SseTee(self, f, _now(ex.t_resp_ns))
        return f.tee

    def response_part(self, ex: Exchange, chunk: bytes, t_ns: int = 0) -> None:
        """Part of a buffered SSE body at the time it streamed (a HAR's `_eventSourceMessages`): fed
        to the body's tee then, so its events keep their place among the other exchanges' messages;
        held for `response` when the body is not teed."""
        f = self._flows.get(ex.id)
        if f is None:
            return
        if f.tee is not None:
            if not f.tee.ended:
                f.tee.feed(chunk, t_ns)
        elif f.held is None:
            f.held = bytearray(chunk)
        else:
            f.held += chunk

    def response(self, ex: Exchange, body: bytes | None, t_ns: int = 0, why: str = "") -> None:
        """A whole response body (not teed): a JSON answer, an error page, or a buffered SSE body
        (an importer, or a proxy that did not stream it). `why`: how a buffered SSE body's stream
        ended when that was not the server finishing it (a HAR's `_error`: the client closed it...)."""
        f = self._flows.get(ex.id)
        if f is None:  # never saw its request (or already finished)
            return
        if f.held is not None:
            body, f.held = bytes(f.held) + (body or b""), None
        if f.tee is None:
            self.response_headers(ex)
        if f.tee is not None:
            if not f.tee.ended:  # buffered SSE: replay it through the tee
                why = self.wire_text(why)
                f.tee.feed(body or b"", t_ns)
                f.tee.end((why if why in _STREAM_ENDS else _reason(why)) if why else "end", t_ns)
            self._forget(f, t_ns)
            return
        body = body or b""
        rpc = looks_jsonrpc(body)
        if not f.mcp:
            if not rpc:
                self._forget(f, t_ns)
                return
            f.mcp = True
            self.assign(f, None)
        t = _now(t_ns)
        ok = ex.status is not None and 200 <= ex.status < 300
        if ok and rpc and f.rpc_method == "initialize":
            f.begun = has_result(body)
        if rpc and f.rpc_key is not None and self.conns.watches(f.conn):
            f.answered = answers(body, f.rpc_key)
        if rpc or (ok and body.strip() and is_json(header(ex.resp_headers, "content-type"))):
            self.emit(
                [
                    Record(
                        RecordType.MESSAGE,
                        dir=Direction.S2C,
                        raw=bytes(body),
                        t_ns=t,
                        transport=f.transport,
                        conn=f.conn,
                        http=self.response_http(f, full=True),
                    )
                ]
            )
        else:
            http = self.response_http(f, full=True)
            if len(body) > MAX_HTTP_BODY:
                http["body_bytes"] = len(body)
            self.emit(
                [
                    Record(
                        RecordType.HTTP,
                        raw=bytes(body[:MAX_HTTP_BODY]),
                        t_ns=t,
                        transport=f.transport,
                        conn=f.conn,
                        http=http,
                    )
                ]
            )
        self._forget(f, t_ns)

    def failed(self, ex: Exchange, why: str, t_ns: int = 0) -> None:
        """The exchange broke before it completed (client or server went away, killed)."""
        f = self._flows.get(ex.id)
        if f is None:
            return
        why = self.wire_text(why)  # (mitmproxy's error may quote the server's bytes: a bad header line)
        if f.tee is not None:
            if not f.tee.ended:
                f.tee.end(_reason(why), t_ns)
        elif f.mcp and not f.done:
            http = self.response_http(f, full=True) if ex.status is not None else self._req_http(f, head=True)
            http["error"] = why
            self.emit(
                [Record(RecordType.HTTP, t_ns=_now(t_ns), transport=f.transport, conn=f.conn, http=http)]
            )
        self._forget(f, t_ns)

    # -- connections -----------------------------------------------------------------------------

    def _unique(self, base: str) -> str:
        return self.conns.unique(base)

    def _base(self, ex: Exchange) -> str:
        return self.conns.base(ex.client, ex.url)

    def legacy_stream_name(self, ex: Exchange) -> str:
        """A new connection name for a GET stream that turned out to be a legacy HTTP+SSE session."""
        return self._unique(self._base(ex) + " (HTTP+SSE)")

    def assign(self, f: _Flow, sse_conn: str | None = None) -> None:
        """Give the exchange its connection (an HTTP+SSE session's when SSE_CONN names one)."""
        if f.conn:
            self._count(f)
            return
        ex = f.ex
        if sse_conn is not None:
            f.conn, f.transport = sse_conn, HTTP_SSE
            return
        sid = header(ex.req_headers, "mcp-session-id")
        method, fresh, presumes, rid, cancels = body_facts(ex.req_body)
        f.rpc_method = method
        if sid is not None:
            f.conn = self.conns.for_session(sid, ex.client, ex.url)
            return
        ua = header(ex.req_headers, "user-agent")
        conns = self.conns
        self._closed_at = ex.t_ns  # (a connection ended where sessions met ends at this message)
        f.conn = conns.for_sessionless(
            ex.client_id, ex.client, ex.url, ua, fresh, presumes, method, rid, cancels
        )
        if method == "initialize":
            conns.handshake(f.conn, ex.client, ex.url, ua, rid)
        if conns.notes:
            self._notes(ex)
            conns.settle()
        self._closed_at = 0
        if method is not None:
            f.rpc_key = id_key(rid)
        self._count(f)

    def _notes(self, ex: Exchange) -> None:
        """What tracer.http.tracks says about where a message went, recorded before it."""
        notes, self.conns.notes = self.conns.notes, []
        t = _now(ex.t_ns)
        self.emit([Record(RecordType.EVENT, t_ns=t, transport=HTTP, conn=c, data=d) for c, d in notes])

    def _count(self, f: _Flow) -> None:
        if not f.counted and f.transport == HTTP:
            f.counted = True
            self.conns.started(f.conn, f.rpc_key)

    def _note_session(self, f: _Flow, sid: str) -> None:
        """A response carries Mcp-Session-Id: that session keeps the connection its exchange used
        (the handshake state stays with it)."""
        self.conns.minted(sid, f.conn)

    def client_closed(self, client_id: str, t_ns: int = 0) -> None:
        """The client's TCP connection (CLIENT_ID, else its "ip:port") closed."""
        self._closed_at = t_ns
        self.conns.client_closed(client_id)
        self._closed_at = 0

    def _connection_closed(self, conn: str, client: str) -> None:
        self.emit(
            [
                Record(
                    RecordType.EVENT,
                    t_ns=_now(self._closed_at),
                    transport=HTTP,
                    conn=conn,
                    data={
                        "event": "connection-closed",
                        "why": "the client's TCP connection closed"
                        if client
                        else "its session went on past a point another session shared (session-continued)",
                    },
                )
            ]
        )

    def _sse_conn_for(self, ex: Exchange, rpc: bool) -> str | None:
        """The HTTP+SSE session a request belongs to: a POST to an announced endpoint URI; or, so that
        MCP902 can flag it, a JSON-RPC POST without MCP headers to the stream's or endpoint's path
        from the client of the only open stream there."""
        conn = self._sse_posts.get(ex.url)
        if conn is not None or not rpc or has_mcp_headers(ex.req_headers) or not self._sse_streams:
            return conn
        ip = _client_ip(ex.client)
        origin, path, _ = split_url(ex.url)
        found = [
            c
            for c, (cip, get_url, post_url) in self._sse_streams.items()
            if cip == ip and origin + path in (endpoint_of(get_url), endpoint_of(post_url))
        ]
        return found[0] if len(found) == 1 else None

    def open_sse_session(self, f: _Flow, uri: str) -> str:
        """A GET stream announced its `endpoint`: it is a legacy HTTP+SSE session of its own."""
        if not f.conn:
            f.conn = self.legacy_stream_name(f.ex)
        self.conns.keep(f.conn)  # the stream's session outlives the TCP connection that opened it
        f.transport = HTTP_SSE
        post_url = join_url(f.ex.url, uri)
        self._sse_posts[post_url] = f.conn
        self._sse_streams[f.conn] = (_client_ip(f.ex.client), f.ex.url, post_url)
        return post_url

    def end_sse_session(self, conn: str) -> bool:
        """The GET stream of CONN closed: its HTTP+SSE session is over. Whether it was one."""
        entry = self._sse_streams.pop(conn, None)
        if entry is None:
            return False
        self._sse_posts.pop(entry[2], None)
        return True

    def _forget(self, f: _Flow, t_ns: int = 0) -> None:
        f.done = True
        self._flows.pop(f.ex.id, None)
        if f.counted:
            f.counted = False
            # (a connection it was the last exchange of ends when it did: an imported file's time)
            self._closed_at = t_ns
            self.conns.finished(f.conn, f.rpc_key, f.answered)
            self._closed_at = 0
        if f.rpc_method == "initialize" and not f.begun and f.conn:
            self.conns.refused(f.conn, bool(f.ex.client_id or f.ex.client))

    # -- the HTTP facts of a record ----------------------------------------------------------------

    def _headers(self, headers: list | None) -> list:
        out = [[k, v] for k, v in (headers or [])]
        if not self.redact:
            return out
        out = redact_headers(out)
        # (a header that echoes a credential, or the session id: an error description quoting it)
        return self.echo.hide_headers(out)

    def wire_text(self, text):
        """A text from the wire a record keeps outside a body and its headers (an SSE event's `id:`
        and name, an error quoting the server) with the known credentials and session ids hidden,
        as they are in bodies and headers."""
        return self.echo.hide_text(text) if self.redact else text

    def record_url(self, url: str) -> str:
        """A URL as records carry it: credentials in its query and userinfo redacted (session ids stay:
        the capture writer hashes them, an importer's analysis needs them)."""
        return redact_url(url) if self.redact else url

    def _req_http(self, f: _Flow, head: bool = True) -> dict:
        ex = f.ex
        http = {"method": ex.method, "url": self.record_url(ex.url), "flow": ex.id}
        if head:
            http["req_headers"] = hs = self._headers(ex.req_headers)
            http["request_t_ns"] = _now(ex.t_ns)
            ct = header(hs, "content-type")  # (as stored: a known value it repeats hidden there)
            if ct is not None:
                http["content_type"] = ct
            if ex.http_version:
                http["http_version"] = ex.http_version
            f.head_sent = True
        return http

    def response_http(self, f: _Flow, full: bool) -> dict:
        """A response-side record: the status always; response headers on the first record of the
        response (full); the request headers too when no record of this flow carried them yet."""
        ex = f.ex
        http = {"method": ex.method, "url": self.record_url(ex.url), "status": ex.status, "flow": ex.id}
        if not f.head_sent:
            http["req_headers"] = self._headers(ex.req_headers)
            http["request_t_ns"] = _now(ex.t_ns)  # a GET's first record comes with its answer
            if ex.http_version:
                http["http_version"] = ex.http_version
            f.head_sent = True
        if full:
            http["resp_headers"] = hs = self._headers(ex.resp_headers)
            if ex.server:
                http["server"] = ex.server
            ct = header(hs, "content-type")  # (as stored: a known value it repeats hidden there)
            if ct is not None:
                http["content_type"] = ct
        return http


_STREAM_ENDS = (
    "end",
    "client-closed",
    "server-closed",
    "capture-stopped",
)  # stream-closed reasons as recorded


def _reason(why: str) -> str:
    low = why.lower()
    if "client" in low:
        return "client-closed"
    if "server" in low:
        return "server-closed"
    return f"error: {why}"
