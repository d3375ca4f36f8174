"""Spans from analysed messages: one per request/response pair, with mcptrace's facts attached.

`SpanBuilder` reads what the analyser hands out, in order (messages, the findings of records that
are not messages, the records themselves for connection and SSE stream events) and emits finished
`Span`s. It keeps only what is still open: requests awaiting their answer (as the analyser's pending
table does), MRTR operations still asking for input, one root span per open connection. Nothing
here knows OpenTelemetry's SDK: the otlp-json writer and the live exporter both render these spans.

Ids are derived from the capture (a hash of its identity, the connection and the record's seq), so a
re-export of the same capture gives the same trace and span ids. A request whose
`params._meta.traceparent` is valid joins the host's trace as a child of that span; others are
children of their connection's root span, one trace per connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from tracer.classify import id_key
from tracer.export import mapping as M
from tracer.export.spantypes import Span, SpanEvent, add_event, cap_text, digest, finding_event, id_text
from tracer.export.tracecontext import traceparent, valid_tracestate
from tracer.http.headers import header
from tracer.model import Analysed, Finding, Kind, Record, RecordType
from tracer.safejson import dumps_text

_PAIRED = ("paired", "after-cancel")
_CLOSE_EVENTS = frozenset({"closed", "exit", "session-closed", "connection-closed"})


class SpanBuilder:
    def __init__(
        self,
        emit: Callable[[Span], None],
        *,
        identity: str = "",
        source: str = "",
        include_bodies: bool = False,
    ):
        self.emit = emit
        self.identity = identity  # what makes this capture's ids its own (see tracer.export.identity_of)
        self.source = source
        self.include_bodies = include_bodies
        # (conn, request seq) -> its span, until answered (an appended capture's sessions reuse seqs)
        self.open: dict[tuple[str, int], Span] = {}
        self._by_id: dict[tuple, int] = {}  # (conn, sender dir, idkey) -> seq: what a cancel names
        self._by_token: dict[tuple, int] = {}  # (conn, progress token key) -> seq
        self._by_flow: dict[tuple, int] = {}  # (conn, HTTP flow) -> seq: the POST a stream answers
        self._ops: dict[tuple, Span] = {}  # (conn, op seq) -> MRTR operation span
        self._roots: dict[str, Span] = {}  # conn -> its root span
        self._streams: dict[str, int] = {}  # SSE stream -> when its response head arrived
        self._servers: dict[str, tuple[str | None, int | None]] = {}
        # conn -> the identity of the recording its session began in, for a session a later
        # recording's header left open (two tees appending to one file at once: see keep_identity)
        self._kept: dict[str, str] = {}
        self.spans = 0

    # -- input -------------------------------------------------------------------------------------

    def message(self, m: Analysed) -> None:
        if m.kind is Kind.BATCH:
            for member in m.members or ():
                self._one(member)
            if m.findings:
                self._short(m, "batch", m.findings)
            return
        self._one(m)

    def findings(self, found: list[Finding], t_ns: int, conn: str | None = None) -> None:
        """Findings that came with no message (end of session, an HTTP exchange): on the span of
        the request they name while it is open, else on a short span of their own."""
        loose = []
        for f in found:
            span = self._open_for(conn, f.seq) if f.seq else None
            if span is not None:
                add_event(span, finding_event(f, t_ns))
            else:
                loose.append(f)
        if loose:
            root = self._root(conn, t_ns) if conn is not None else None
            trace = root.trace_id if root is not None else digest(16, self.identity, "capture")
            span = Span(
                trace,
                # named by what it holds, not by how many spans came before it: a live exporter
                # that sends one connection of a shared file, or one started later, gives it the
                # id `mcptrace export` gives for the whole file
                digest(
                    8,
                    self._identity(conn),
                    "findings",
                    conn or "",
                    str(t_ns),
                    *(f"{f.rule}:{f.seq}:{f.message}" for f in loose),
                ),
                root.span_id if root is not None else None,
                "mcptrace.findings",
                t_ns,
                t_ns,
                {M.KIND: "findings", M.CAPTURE_FILE: self.source},
                kind="internal",
            )
            span.events = [finding_event(f, t_ns) for f in loose]
            self._emit(span)

    def record(self, rec: Record) -> None:
        """A record that is not a message: connection and SSE stream events."""
        if rec.type is not RecordType.EVENT or type(rec.data) is not dict:
            return
        event = rec.data.get("event")
        stream = rec.data.get("stream")
        if event == "stream-open" and type(stream) is str:
            if len(self._streams) < 10_000:
                self._streams[stream] = rec.t_ns
        elif event == "stream-closed" and type(stream) is str:
            self._streams.pop(stream, None)
        elif event in _CLOSE_EVENTS:
            self.close(rec.conn, rec.t_ns, M.END_REASON_CLOSED)

    def keep_identity(self, conn: str) -> None:
        """A new recording's header did not end CONN's session (the analyser says which: a tee's own,
        Analyser.keeps_at_header): its spans keep the identity of the recording it began in, as they
        would in a file of its own, until the connection ends."""
        self._kept.setdefault(conn, self.identity)

    def _identity(self, conn: str | None) -> str:
        kept = self._kept
        return kept.get(conn, self.identity) if kept and conn is not None else self.identity

    def close(self, conn: str, t_ns: int, reason: str) -> None:
        """A connection ended: its unanswered requests end here (or at their cancel), then its root."""
        for key in [k for k in self.open if k[0] == conn]:
            self._end_unanswered(self.open.pop(key), t_ns, reason)
        for key in [k for k in self._ops if k[0] == conn]:
            op = self._ops.pop(key)
            op.attrs[M.END_REASON] = reason
            self._emit(op)
        root = self._roots.pop(conn, None)
        if root is not None:
            root.end_ns = max(root.end_ns, t_ns)
            root.attrs[M.END_REASON] = reason
            self._emit(root)
        self._kept.pop(conn, None)

    def finish(self, found: list[Finding], t_ns: int) -> None:
        """End of input: end findings go on their spans, then everything still open ends."""
        self.findings(found, t_ns)
        conns = dict.fromkeys(
            [k[0] for k in self.open] + [k[0] for k in self._ops] + list(self._roots)
        )  # (ordered: output is stable)
        for conn in conns:
            self.close(conn, t_ns, M.END_REASON_END)

    # -- one message -------------------------------------------------------------------------------

    def _one(self, m: Analysed) -> None:
        kind = m.kind
        if kind is Kind.REQUEST:
            self._request(m)
        elif kind is Kind.RESULT or kind is Kind.ERROR:
            req = m.request
            span = (
                self.open.pop((m.rec.conn, req.seq), None)
                if req is not None and m.pair_status in _PAIRED
                else None
            )
            if span is not None:
                self._response(span, m)
            else:
                self._short(m, "response", m.findings)
        elif kind is Kind.NOTIFICATION:
            self._notification(m)
        else:
            self._short(m, "invalid", m.findings)

    def _base_attrs(self, m: Analysed, method: str) -> dict[str, Any]:
        rec = m.rec
        method = cap_text(method)
        attrs: dict[str, Any] = {M.METHOD: method}
        if m.version is not None:
            attrs[M.PROTOCOL_VERSION] = m.version
        obj = m.obj
        if type(obj) is dict and type(obj.get("jsonrpc")) is str and obj["jsonrpc"] != "2.0":
            attrs[M.JSONRPC_VERSION] = cap_text(obj["jsonrpc"])
        params = m.params or {}
        target = M.TARGETS.get(method)
        if target is not None and type(params.get(target[0])) is str:
            attrs[target[1]] = cap_text(params[target[0]])
        if method in M.OPERATIONS:
            attrs[M.OPERATION] = M.OPERATIONS[method]
        if method in M.RESOURCE_METHODS and type(params.get("uri")) is str:
            attrs[M.RESOURCE_URI] = cap_text(params["uri"])
        transport = M.NETWORK_TRANSPORT.get(rec.transport)
        if transport is not None:
            attrs[M.NET_TRANSPORT] = transport
        protocol = M.NETWORK_PROTOCOL.get(rec.transport)
        if protocol is not None:
            attrs[M.NET_PROTOCOL] = protocol
        http = rec.http
        if type(http) is dict:
            version = (
                M.HTTP_VERSIONS.get(http.get("http_version"))
                if type(http.get("http_version")) is str
                else None
            )
            if version is not None:
                attrs[M.NET_PROTOCOL_VERSION] = version
            host, port = self._server(http.get("url"))
            if host:
                attrs[M.SERVER_ADDRESS] = host
                if port is not None:
                    attrs[M.SERVER_PORT] = port
            sid = header(http.get("req_headers"), "mcp-session-id")
            if sid is not None and m.era.value == "legacy":
                attrs[M.SESSION_ID] = cap_text(sid)
        attrs[M.ERA] = m.era.value
        attrs[M.ERA_REASON] = cap_text(m.era_reason)
        if self.source:
            attrs[M.CAPTURE_FILE] = self.source
        attrs[M.CAPTURE_SEQ] = rec.seq
        attrs[M.CONNECTION] = cap_text(rec.conn)
        return attrs

    def _request(self, m: Analysed) -> None:
        rec = m.rec
        method = m.method or ""
        attrs = self._base_attrs(m, method)
        rid = id_text(m.id)
        if rid is not None:
            attrs[M.REQUEST_ID] = rid
        if (
            self.include_bodies
            and method == "tools/call"
            and m.params is not None
            and "arguments" in m.params
        ):
            attrs[M.TOOL_ARGUMENTS] = dumps_text(m.params["arguments"])
        span = self._new_span(m, attrs)
        for f in m.findings:
            add_event(span, finding_event(f, rec.t_ns))
        if m.op_seq is not None and m.op_seq != rec.seq:  # a later round of an MRTR operation
            op = self._ops.get((rec.conn, m.op_seq))
            if op is not None:
                span.trace_id, span.parent_id, span.remote_parent = op.trace_id, op.span_id, False
                span.host_sampled = op.host_sampled
        keys: list[tuple] = []
        if m.idkey is not None and rec.dir is not None:
            keys.append(("id", (rec.conn, rec.dir, m.idkey)))
        meta = m.meta or {}
        token = id_key(meta.get("progressToken"))
        if token is not None:
            keys.append(("token", (rec.conn, token)))
        flow = rec.http.get("flow") if type(rec.http) is dict else None
        if type(flow) is str:
            keys.append(("flow", (rec.conn, flow)))
        for what, key in keys:
            self._index(what)[key] = rec.seq
        span._keys = tuple(keys)
        self.open[(rec.conn, rec.seq)] = span

    def _response(self, span: Span, m: Analysed) -> None:
        rec = m.rec
        self._forget(span)
        span.end_ns = max(span.start_ns, rec.t_ns)
        span.attrs[M.RESPONSE_SEQ] = rec.seq
        span.attrs[M.END_REASON] = M.END_REASON_RESPONSE
        err = m.error
        if err is not None:
            code = err.get("code")
            if type(code) is int:
                span.attrs[M.ERROR_TYPE] = span.attrs[M.STATUS_CODE] = str(code)
            else:
                span.attrs[M.ERROR_TYPE] = "_OTHER"
            span.is_error = True
            msg = err.get("message")
            span.error = cap_text(msg) if type(msg) is str else None
        elif m.kind is Kind.ERROR:
            span.attrs[M.ERROR_TYPE] = "_OTHER"
            span.is_error = True
        result = m.result
        method = span.attrs.get(M.METHOD)
        if result is not None and method == "tools/call":
            if result.get("isError") is True:
                span.attrs[M.ERROR_TYPE] = M.TOOL_ERROR
                span.is_error = True
                span.error = "the tool's result has isError: true"
            if self.include_bodies:
                span.attrs[M.TOOL_RESULT] = dumps_text(result)
        self._sse_event(span, m)
        for f in m.findings:
            add_event(span, finding_event(f, rec.t_ns))
        if m.op_seq is not None:
            self._round(
                span, m, input_required=result is not None and result.get("resultType") == "input_required"
            )
        self._emit(span)

    def _round(self, span: Span, m: Analysed, *, input_required: bool) -> None:
        """An MRTR round ended: it becomes a child of its operation's span, which ends with the round
        that does not ask for more input."""
        conn = m.rec.conn
        key = (conn, m.op_seq)
        op = self._ops.get(key)
        if op is None:
            if len(self._ops) >= 10_000:
                return
            op = self._ops[key] = Span(
                span.trace_id,
                digest(8, self._identity(conn), conn, "op", str(m.op_seq)),
                span.parent_id,
                f"{M.OP_SPAN_NAME} {span.name}",
                span.start_ns,
                span.end_ns,
                {k: v for k, v in span.attrs.items() if k not in (M.RESPONSE_SEQ, M.END_REASON)},
                trace_state=span.trace_state,
                remote_parent=span.remote_parent,
                host_sampled=span.host_sampled,
                kind="internal",
            )
            op.attrs[M.OP_ROUNDS] = 0
        span.trace_id, span.parent_id, span.remote_parent = op.trace_id, op.span_id, False
        span.host_sampled = op.host_sampled
        op.attrs[M.OP_ROUNDS] += 1
        op.end_ns = max(op.end_ns, span.end_ns)
        if not input_required:
            del self._ops[key]
            op.attrs[M.END_REASON] = span.attrs.get(M.END_REASON)
            for k in (M.ERROR_TYPE, M.STATUS_CODE):
                if k in span.attrs:
                    op.attrs[k] = span.attrs[k]
            op.is_error, op.error = span.is_error, span.error
            self._emit(op)

    def _notification(self, m: Analysed) -> None:
        rec = m.rec
        method = m.method or ""
        params = m.params or {}
        seq = None
        if method == "notifications/progress":
            token = id_key(params.get("progressToken"))
            seq = self._by_token.get((rec.conn, token)) if token is not None else None
        elif method == "notifications/cancelled":
            rid = id_key(params.get("requestId"))
            seq = self._by_id.get((rec.conn, rec.dir, rid)) if rid is not None else None
        if seq is None and type(rec.http) is dict and type(rec.http.get("flow")) is str:
            seq = self._by_flow.get((rec.conn, rec.http["flow"]))  # sent on the request's own stream
        span = self.open.get((rec.conn, seq)) if seq is not None else None
        if span is None:
            self._short(m, "notification", m.findings)
            return
        attrs: dict[str, Any] = {M.NOTIFICATION_METHOD: cap_text(method), M.NOTIFICATION_SEQ: rec.seq}
        for name in ("progress", "total"):
            value = params.get(name)
            if type(value) in (int, float):
                attrs[f"mcptrace.{name}"] = value
        add_event(span, SpanEvent(M.NOTIFICATION_EVENT, rec.t_ns, attrs))
        if method == "notifications/cancelled" and span._cancel_t is None:
            span._cancel_t = rec.t_ns
        self._sse_event(span, m)
        for f in m.findings:
            add_event(span, finding_event(f, rec.t_ns))

    def _short(self, m: Analysed, what: str, found: list[Finding]) -> None:
        """A message that belongs to no request span: a zero-length span of its own."""
        rec = m.rec
        method = m.label
        attrs = (
            self._base_attrs(m, method)
            if method
            else {M.ERA: m.era.value, M.CAPTURE_SEQ: rec.seq, M.CONNECTION: rec.conn}
        )
        if not method and self.source:
            attrs[M.CAPTURE_FILE] = self.source
        attrs[M.KIND] = what
        rid = id_text(m.id)
        if rid is not None and what != "notification":
            attrs[M.REQUEST_ID] = rid
        span = self._new_span(m, attrs, name=attrs.get(M.METHOD) or f"mcptrace.{what}")
        self._sse_event(span, m)
        for f in found:
            add_event(span, finding_event(f, rec.t_ns))
        self._emit(span)

    # -- helpers -----------------------------------------------------------------------------------

    def _open_for(self, conn: str | None, seq: int) -> Span | None:
        if conn is not None:
            return self.open.get((conn, seq))
        return next((span for (_, s), span in self.open.items() if s == seq), None)  # (end of input only)

    def _new_span(self, m: Analysed, attrs: dict[str, Any], name: str | None = None) -> Span:
        rec = m.rec
        method = attrs.get(M.METHOD, "")
        if name is None:
            target = M.TARGETS.get(method)
            name = f"{method} {attrs[target[1]]}" if target is not None and target[1] in attrs else method
        span_id = digest(8, self._identity(rec.conn), rec.conn, str(rec.seq))
        root = self._root(rec.conn, rec.t_ns)
        if m.era.value != "unknown":
            root.attrs[M.ERA] = m.era.value
        meta = m.meta or {}
        parent = traceparent(meta.get(M.TRACEPARENT))
        if parent is not None:
            state = meta.get(M.TRACESTATE)
            return Span(
                parent[0],
                span_id,
                parent[1],
                name,
                rec.t_ns,
                rec.t_ns,
                attrs,
                trace_state=state if valid_tracestate(state) else "",
                remote_parent=True,
                host_sampled=parent[2],
            )
        return Span(root.trace_id, span_id, root.span_id, name, rec.t_ns, rec.t_ns, attrs)

    def _root(self, conn: str, t_ns: int) -> Span:
        root = self._roots.get(conn)
        if root is None:
            identity = self._identity(conn)
            root = self._roots[conn] = Span(
                digest(16, identity, conn),
                digest(8, identity, conn, "root"),
                None,
                M.ROOT_SPAN_NAME,
                t_ns,
                t_ns,
                {M.CONNECTION: conn, M.CAPTURE_FILE: self.source} if self.source else {M.CONNECTION: conn},
                kind="internal",
            )
        root.end_ns = max(root.end_ns, t_ns)
        return root

    def _end_unanswered(self, span: Span, t_ns: int, reason: str) -> None:
        self._forget(span)
        if span._cancel_t is not None:
            span.end_ns = max(span.start_ns, span._cancel_t)
            span.attrs[M.END_REASON] = M.END_REASON_CANCELLED
            span.attrs[M.ERROR_TYPE] = M.CANCELLED
            span.error = "cancelled by the requester; no response"
        else:
            span.end_ns = max(span.start_ns, t_ns)
            span.attrs[M.END_REASON] = reason
            span.attrs[M.ERROR_TYPE] = M.NO_RESPONSE
            span.error = (
                "no response before the connection closed"
                if reason == M.END_REASON_CLOSED
                else "no response before the capture ended"
            )
        span.is_error = True
        self._emit(span)

    def _index(self, what: str) -> dict:
        return self._by_id if what == "id" else self._by_token if what == "token" else self._by_flow

    def _forget(self, span: Span) -> None:
        for what, key in span._keys:
            index = self._index(what)
            if index.get(key) == span.attrs.get(M.CAPTURE_SEQ):
                del index[key]
        span._keys = ()

    def _sse_event(self, span: Span, m: Analysed) -> None:
        sse = m.rec.sse
        if type(sse) is not dict:
            return
        attrs: dict[str, Any] = {M.CAPTURE_SEQ: m.rec.seq}
        if type(sse.get("id")) is str:
            attrs[M.SSE_ID] = cap_text(sse["id"])
        if type(sse.get("event")) is str:
            attrs[M.SSE_NAME] = cap_text(sse["event"])
        opened = self._streams.get(sse.get("stream")) if type(sse.get("stream")) is str else None
        if opened is not None:
            attrs[M.SSE_OFFSET_MS] = round((m.rec.t_ns - opened) / 1e6, 3)
        add_event(span, SpanEvent(M.SSE_EVENT, m.rec.t_ns, attrs))

    def _server(self, url: Any) -> tuple[str | None, int | None]:
        if type(url) is not str:
            return None, None
        hit = self._servers.get(url)
        if hit is None:
            try:
                u = urlsplit(url)
                port = u.port or {"http": 80, "https": 443}.get(u.scheme)
                hit = (u.hostname, port)
            except ValueError:
                hit = (None, None)
            if len(self._servers) < 1024:
                self._servers[url] = hit
        return hit

    def _emit(self, span: Span) -> None:
        span.events.sort(key=lambda e: e.t_ns)  # (stable: same-time events keep their order)
        self.spans += 1
        self.emit(span)
