"""The SSE tee of the HTTP door: follows one `text/event-stream` body as it streams.

`feed` takes a copy of each chunk after it was handed on and emits the records of the events it
completes (an incremental WHATWG parser: chunks split mid-line, mid-UTF-8 sequence or between CR
and LF are fine); `end` frames the stream with its `stream-closed` record. An unknown GET stream is
followed until it shows MCP (an `endpoint` event: legacy HTTP+SSE; a JSON-RPC event) or shows it is
something else. Created by `tracer.http.recorder.HttpRecorder.response_headers`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tracer.framing import SseEvent, SseParser
from tracer.http.conns import answers, has_result
from tracer.http.headers import HTTP_SSE, join_url, looks_jsonrpc
from tracer.model import Direction, Record, RecordType

if TYPE_CHECKING:
    from tracer.http.recorder import HttpRecorder, _Flow

UNDECIDED_EVENTS = 8  # events an unknown SSE stream may carry before it is judged not MCP
UNDECIDED_BYTES = 256 * 1024


def _now(t_ns: int) -> int:
    return t_ns or time.time_ns()


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
                    f.conn = self.rec.legacy_stream_name(f.ex)
                    f.transport = HTTP_SSE
                self.rec.assign(f)
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
        if ev.event == "endpoint" and self.rec.redact:
            # its session id, hidden wherever the stream repeats it (this event's own id too), before
            # the client's first POST names it (the announced URL itself keeps it: the writer stores
            # the keyed hash, as in the POSTs')
            self.rec.echo.learn_exchange((), join_url(f.ex.url, ev.data))
        # (the server's own fields: an event id built from the session id is hidden as its echo)
        name = self.rec.wire_text(ev.event)
        sse = {"stream": self.stream, "event": name}
        eid = self.rec.wire_text(ev.id)
        if eid is not None:
            sse["id"] = eid
        if ev.retry is not None:
            sse["retry"] = ev.retry
            self.retry_seen = True
        http = self.rec.response_http(f, full=False)
        if ev.event == "endpoint":
            post_url = self.rec.open_sse_session(f, ev.data)
            out.append(
                Record(
                    RecordType.EVENT,
                    t_ns=t,
                    transport=f.transport,
                    conn=f.conn,
                    http=http,
                    sse=sse,
                    data={
                        "event": "endpoint",
                        "uri": self.rec.record_url(ev.data),
                        "url": self.rec.record_url(post_url),
                        "stream": self.stream,
                        "first": self.events == 1,
                    },
                )
            )
            return
        if ev.has_data and ev.data != "":
            self.messages += 1
            if f.rpc_method == "initialize" and not f.begun:
                f.begun = has_result(ev.data.encode("utf-8", "surrogatepass"))
            if not f.answered and f.rpc_key is not None and self.rec.conns.watches(f.conn):
                f.answered = answers(ev.data.encode("utf-8", "surrogatepass"), f.rpc_key)
            out.append(
                Record(
                    RecordType.MESSAGE,
                    dir=Direction.S2C,
                    raw=ev.data.encode("utf-8", "surrogatepass"),
                    t_ns=t,
                    transport=f.transport,
                    conn=f.conn,
                    http=http,
                    sse=sse,
                    # an event past SseParser's cap: its start is kept, this many bytes are not
                    data={"cut": ev.cut} if ev.cut else None,
                )
            )
            return
        # no data: a priming event (id, empty data), a retry announcement, a bare id
        out.append(
            Record(
                RecordType.EVENT,
                t_ns=t,
                transport=f.transport,
                conn=f.conn,
                http=http,
                sse=sse,
                data={
                    "event": "sse-event",
                    "stream": self.stream,
                    "id": eid,
                    "retry": ev.retry,
                    "name": name,
                },
            )
        )

    def _open_record(self, t: int) -> Record:
        f = self.flow
        return Record(
            RecordType.EVENT,
            t_ns=t,
            transport=f.transport,
            conn=f.conn,
            http=self.rec.response_http(f, full=True),
            data={"event": "stream-open", "stream": self.stream},
        )

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
        data = {
            "event": "stream-closed",
            "stream": self.stream,
            "reason": reason,
            "events": self.events,
            "messages": self.messages,
            "duration_ms": round((t - self.opened_ns) / 1e6, 3),
            "first_event_ms": (
                round((self.first_ns - self.opened_ns) / 1e6, 3) if self.first_ns is not None else None
            ),
        }
        if tail is not None:
            kept = tail.data[:200]
            # (its start only: a known value it holds, or starts at its end, is hidden as in a message)
            cut = len(tail.data) - len(kept) + tail.cut
            data["unterminated"] = self.rec.echo.hide_text(kept, cut) if self.rec.redact else kept
        if self.retry_seen:
            data["retry_seen"] = True
        recs = [
            Record(
                RecordType.EVENT,
                t_ns=t,
                transport=f.transport,
                conn=f.conn,
                http=self.rec.response_http(f, full=False),
                data=data,
            )
        ]
        if f.transport == HTTP_SSE and f.ex.method == "GET" and self.rec.end_sse_session(f.conn):
            # the HTTP+SSE session lives as long as its GET stream
            recs.append(
                Record(
                    RecordType.EVENT,
                    t_ns=t,
                    transport=f.transport,
                    conn=f.conn,
                    data={"event": "closed", "why": "HTTP+SSE stream closed"},
                )
            )
        self.rec.emit(recs)
