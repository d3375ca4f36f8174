"""mitmproxy addon: record the MCP traffic that crosses the proxy into an mcptrace capture.

    mitmdump -s addons/mcp_capture.py --set mcptrace_output=capture.jsonl
    mitmweb  -s addons/mcp_capture.py      # MCP annotations show in the flow list

It recognises MCP by content (JSON-RPC bodies, `text/event-stream` answers carrying JSON-RPC or an
`endpoint` event, MCP headers), not by path; other traffic passes unrecorded. It never changes a
flow's bytes: SSE answers are teed as they stream (`flow.response.stream` is a callable that hands
each chunk on unchanged, then feeds a copy to the SSE parser), so no event waits for the stream to
end (mitmproxy otherwise buffers SSE: mitmproxy#4469). The only things it writes to a flow are
its annotations: a comment, a marker when a rule fired, and `mcp.*` metadata keys
(`~meta "mcp.era: modern"` filters on them).

Every recorded exchange is turned into records by `tracer.http.recorder` (shared with the .mitm
and HAR importers); for the annotations, the records are analysed by the same analyser
`mcptrace lint` uses (addons.annotate).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from mitmproxy import ctx, exceptions, flowfilter, http

from addons.annotate import FlowAnnotator
from addons.capture_thread import CaptureThread
from addons.flows import exchange_from, note_response_facts, request_facts, response_facts
from tracer.capture import CaptureWriter, header_record
from tracer.http.headers import is_sse
from tracer.http.recorder import Exchange, HttpRecorder
from tracer.http.sse_tee import SseTee
from tracer.model import Record
from tracer.output import check_output

log = logging.getLogger(__name__)

Listener = Callable[[Record], Any]
BATCH_S = 0.002  # how long a request, response head or SSE chunk waits for the end of its exchange


class McpCapture:
    def __init__(self, *, background: bool = False) -> None:
        self.listeners: list[Listener] = []  # in-process consumers of every record (the TUI)
        self.header_extra: dict[str, Any] = {}  # set by the runner: upstream, label, mode
        self.writer: CaptureWriter | None = None
        self.path: str | None = None
        self.recorder = HttpRecorder(self._emit)
        self.annotator = FlowAnnotator()
        self._filter: flowfilter.TFilter | None = None
        self._exchanges: dict[str, Exchange] = {}
        self._tees: dict[str, SseTee] = {}
        self._listener_failed = False
        self.managed = False  # the runner opens the capture once the proxy listens (never before)
        self.stopped = (
            False  # done(): the capture is closed; anything mitmproxy reports later is past its end
        )
        self.background = background  # record on a thread of its own once mitmproxy runs
        self._thread: CaptureThread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._live: set[str] = set()  # (event loop side) flows being recorded
        self._cut: set[str] | None = None  # (event loop side) after done(): the flows it closed
        self._pending: list[tuple[Callable, tuple]] = []  # (event loop side) snapshots not handed over
        self._soon = False  # (event loop side) a hand-over at the end of this turn is due
        self._timer: asyncio.TimerHandle | None = None  # (event loop side) a hand-over within BATCH_S
        self._annotate = True

    # -- options ---------------------------------------------------------------------------------

    def load(self, loader) -> None:
        loader.add_option(
            "mcptrace_output",
            str,
            "",
            "mcptrace: capture file to write (default: a new file in $XDG_STATE_HOME/mcptrace/captures/)",
        )
        loader.add_option(
            "mcptrace_redact",
            bool,
            True,
            "mcptrace: redact credentials (Authorization, Cookie, API keys) in the capture",
        )
        loader.add_option(
            "mcptrace_overwrite",
            bool,
            False,
            "mcptrace: replace an existing mcptrace_output file (default: append a new "
            "session to a capture; a file that is not a capture is refused)",
        )
        loader.add_option(
            "mcptrace_filter",
            str,
            "",
            "mcptrace: only look at flows matching this mitmproxy filter expression "
            "(default: every flow; MCP is recognised by content)",
        )
        loader.add_option(
            "mcptrace_annotate",
            bool,
            True,
            "mcptrace: write MCP annotations (comment, marker, mcp.* metadata) on flows",
        )

    def configure(self, updated: set[str]) -> None:
        if "mcptrace_filter" in updated:
            expr = ctx.options.mcptrace_filter
            if expr:
                try:
                    self._filter = flowfilter.parse(expr)
                except ValueError as exc:
                    raise exceptions.OptionsError(f"mcptrace_filter: {exc}") from None
            else:
                self._filter = None
        if "mcptrace_annotate" in updated:
            self._annotate = ctx.options.mcptrace_annotate
        if "mcptrace_output" in updated or "mcptrace_redact" in updated:
            path = ctx.options.mcptrace_output
            if path:
                try:  # every problem with the path now, before any traffic (one line from mitmproxy)
                    check_output(path, overwrite=ctx.options.mcptrace_overwrite)
                except OSError as exc:
                    raise exceptions.OptionsError(f"mcptrace_output: {path}: {exc.strerror or exc}") from None
            if self.writer is not None and (path or None) != self.path:
                self.writer.close()
                self.writer = None
            self.path = path or None
            self.recorder.redact = ctx.options.mcptrace_redact

    def open(self) -> str:
        """Create the capture file now (the runner prints its path); returns the path."""
        if self.writer is None:
            if self.path is None:
                from tracer.paths import default_capture_path

                self.path = str(default_capture_path(self.header_extra.get("label") or "mitmproxy"))
            head = header_record(
                "http",
                upstream=self.header_extra.get("upstream"),
                label=self.header_extra.get("label"),
                extra={k: v for k, v in self.header_extra.items() if k not in ("upstream", "label")},
            )
            self.writer = CaptureWriter(
                self.path, head, redact=ctx.options.mcptrace_redact, overwrite=ctx.options.mcptrace_overwrite
            )
        return self.path

    def running(self) -> None:
        if self.background and self._thread is None and not self.stopped:
            self._loop = asyncio.get_running_loop()
            self._thread = CaptureThread()
        if self.managed:  # (mitmproxy calls this even when a listener failed: no capture then)
            return
        path = self.open()
        log.info("mcptrace: capturing MCP traffic to %s", path)

    # -- flow hooks ------------------------------------------------------------------------------
    # Each hook takes a snapshot of the flow's facts and hands it to the recording work, which
    # runs on the recording thread once the proxy runs (`background`: the bytes are forwarded
    # while the records are made), else at once (mitmproxy's test helpers, the importers).
    # Snapshots go to the thread in batches, in order, once mitmproxy has forwarded the bytes
    # (it forwards a request or a response in the same turn of its loop as the hook, after it): a
    # thread woken before that can take the CPU from the loop on a busy machine while the bytes
    # wait, and every wake-up of the thread costs both threads context switches and a hand-over
    # of the interpreter lock. A hook that ends an exchange (response, error, a client's
    # disconnection) hands the batch over when its turn of the loop ends (`_do`), while the
    # client reads the answer; a request, a response head or an SSE chunk waits for that, at most
    # BATCH_S (`_do_later`), so that one exchange costs one wake-up instead of one per hook.

    def _wanted(self, flow: http.HTTPFlow) -> bool:
        return self._filter is None or self._filter(flow)

    def _do(self, fn: Callable, *args) -> None:
        """Record with FN(*ARGS); the batch goes to the thread at the end of this loop turn."""
        if self._thread is None:
            fn(*args)
            return
        self._pending.append((fn, args))
        if not self._soon:
            self._soon = True
            self._loop.call_soon(self._flush)

    def _do_later(self, fn: Callable, *args) -> None:
        """Record with FN(*ARGS), handed over with the next batch, at most BATCH_S from now."""
        if self._thread is None:
            fn(*args)
            return
        self._pending.append((fn, args))
        if self._timer is None and not self._soon:
            self._timer = self._loop.call_later(BATCH_S, self._flush)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._soon = False
        pending, self._pending = self._pending, []
        if self._thread is not None:  # (None: done() flushed and stopped it already)
            for fn, args in pending:
                self._thread.put(fn, *args)

    def request(self, flow: http.HTTPFlow) -> None:
        if not self._wanted(flow):
            return
        if self._cut is not None:  # (past done(): it would cross unrecorded)
            _stop(flow)
            return
        self._live.add(flow.id)
        if self._annotate:
            self.annotator.track(flow)
        self._do_later(self._on_request, request_facts(flow))

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if self._cut is not None and flow.id in self._cut:
            _stop(flow)
            return
        if flow.id not in self._live or flow.response is None:
            return
        facts = response_facts(flow)
        if self._thread is not None:
            # Every SSE answer streams (chunks go on as they come; stock mitmproxy would buffer
            # them): whether it is worth recording is the recording thread's decision.
            if is_sse(flow.response.headers.get("content-type")):
                flow.response.stream = self._queued_stream(flow.id, flow.response.stream)
            self._do_later(self._on_responseheaders, flow.id, facts)
            return
        tee = self._on_responseheaders(flow.id, facts)
        if tee is not None:
            flow.response.stream = self._tee_stream(tee, flow.response.stream)

    def response(self, flow: http.HTTPFlow) -> None:
        if self._cut is not None and flow.id in self._cut:
            _stop(flow)
            return
        if flow.id not in self._live:
            return
        self._live.discard(flow.id)
        resp = flow.response
        streamed = getattr(resp.stream, "_mcptrace", None) is self
        body = None if streamed or resp.raw_content is None else resp.get_content(strict=False)
        self._do(self._on_response, flow.id, streamed, body, time.time_ns())
        if self._annotate:
            self._do(self._finish_annotation, flow)

    def error(self, flow: http.HTTPFlow) -> None:
        if flow.id not in self._live:
            return
        self._live.discard(flow.id)
        self._do(self._on_error, flow.id, flow.error.msg if flow.error else "error", time.time_ns())
        if self._annotate:
            self._do(self._finish_annotation, flow)

    def client_disconnected(self, client) -> None:
        """A client's TCP connection closed: the session-less connections only it carried end."""
        self._do(self.recorder.client_closed, client.id, time.time_ns())

    def done(self) -> None:
        """mitmproxy shuts down (Ctrl-C, q in the viewer, SIGTERM): every exchange still open is
        closed into the capture first (a stream's `stream-closed` event, a request still waiting
        for its answer an `http` record, both with reason `capture-stopped`), then the file is
        closed. mitmproxy may still report those flows' errors afterwards: they are past the end.
        The recording thread finishes everything handed to it before.
        From here on nothing the capture would not hold reaches the host: mitmproxy keeps its
        connections going until the process ends, and an answer on its way then reached the host
        after its exchange was closed as capture-stopped (8 of 525 answers, 24 SDK clients, at a
        SIGTERM): those flows' bytes are no longer handed on, and a new request is refused."""
        self._cut, self._live = self._live, set()
        self._do(self._on_done)
        if self._thread is not None:
            self._flush()
            self._thread.close()
            self._thread = None

    def _queued_stream(self, fid: str, previous: Any) -> Callable:
        inner = previous if callable(previous) else None
        do, on_chunk, now = self._do_later, self._on_chunk, time.time_ns

        def stream(chunk: bytes):
            if self._cut is not None:  # (past done(): see there)
                return
            t_ns = now()
            try:
                yield from _handed_on(inner(chunk) if inner is not None else chunk)
            finally:  # (also when mitmproxy drops the callable's chunks unread: what came is recorded)
                # The recording work hears of the chunk (the same bytes object, no copy) once it is
                # on its way; the thread with the next batch (`_do_later`)
                do(on_chunk, fid, chunk, t_ns)

        stream._mcptrace = self
        return stream

    def _tee_stream(self, tee: SseTee, previous: Any) -> Callable:
        inner = previous if callable(previous) else None

        def stream(chunk: bytes):
            if self._cut is not None:  # (past done(): see there)
                return
            try:
                yield from _handed_on(inner(chunk) if inner is not None else chunk)
            finally:  # (parsed once the chunk is on its way, or once mitmproxy dropped it unread)
                if chunk:
                    tee.feed(chunk)
                else:
                    tee.end("end")

        stream._mcptrace = self
        return stream

    # -- the recording work (on the recording thread once the proxy runs) --------------------------

    def _on_request(self, facts: tuple) -> None:
        ex = self._exchanges[facts[0]] = exchange_from(facts)
        self.recorder.request(ex)

    def _on_responseheaders(self, fid: str, facts: tuple) -> SseTee | None:
        ex = self._exchanges.get(fid)
        if ex is None:
            return None
        note_response_facts(ex, facts)
        tee = self.recorder.response_headers(ex)
        if tee is not None:
            self._tees[fid] = tee
        return tee

    def _on_chunk(self, fid: str, chunk: bytes, t_ns: int) -> None:
        tee = self._tees.get(fid)
        if tee is not None:
            if chunk:
                tee.feed(chunk, t_ns)
            else:
                tee.end("end", t_ns)

    def _on_response(self, fid: str, streamed: bool, body: bytes | None, t_ns: int) -> None:
        ex = self._exchanges.pop(fid, None)
        if ex is None:
            return
        tee = self._tees.pop(fid, None)
        if streamed:  # the tee saw every chunk (or it was an SSE answer not worth recording)
            if tee is not None:
                tee.end("end", t_ns)
            self.recorder.response(ex, None, t_ns)
        else:  # buffered after all (another addon turned streaming off): the recorder replays the body
            self.recorder.response(ex, body, t_ns)

    def _on_error(self, fid: str, why: str, t_ns: int) -> None:
        ex = self._exchanges.pop(fid, None)
        if ex is None:
            return
        self._tees.pop(fid, None)
        self.recorder.failed(ex, why, t_ns)

    def _on_done(self) -> None:
        for fid, ex in list(self._exchanges.items()):
            tee = self._tees.pop(fid, None)
            if tee is not None:
                tee.end("capture-stopped")
            self.recorder.failed(ex, "capture-stopped")
        self._exchanges.clear()
        for tee in self._tees.values():
            tee.end("capture-stopped")
        self._tees.clear()
        self.stopped = True
        if self.writer is not None:
            self.writer.close()

    def _finish_annotation(self, flow: http.HTTPFlow) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self.annotator.finish, flow)
        else:
            self.annotator.finish(flow)

    # -- records out -----------------------------------------------------------------------------

    def _emit(self, records: list[Record]) -> None:
        if self.stopped:
            return
        if self.writer is None:
            self.open()
        self.writer.write_many(records)
        if self._annotate:
            if self._loop is not None and self._thread is not None:  # (the annotator lives on the loop)
                self._loop.call_soon_threadsafe(self.annotator.records, records)
            else:
                self.annotator.records(records)
        for rec in records:
            for fn in self.listeners:
                try:
                    fn(rec)
                except Exception as exc:  # a consumer's bug must not break the proxy
                    if not self._listener_failed:
                        self._listener_failed = True
                        log.warning("mcptrace: a capture listener failed: %s", exc)


def _stop(flow: http.HTTPFlow) -> None:
    if flow.killable:
        flow.kill()


def _handed_on(out: Any):
    """The chunks a stream callable hands on, as mitmproxy forwards them: mitmproxy writes each
    yielded chunk to the other side before it asks for the next, so what follows a `yield` in a
    stream callable runs after the bytes are sent. An empty chunk is never yielded (on a chunked
    response it would be the terminator)."""
    if isinstance(out, bytes | bytearray):
        if out:
            yield out
    else:
        for part in out:
            if part:
                yield part


addons = [McpCapture(background=True)]  # (mitmdump -s: a real proxy, so the recording thread)
