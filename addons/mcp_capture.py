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

import logging
from collections.abc import Callable
from typing import Any

from mitmproxy import ctx, exceptions, flowfilter, http

from addons.annotate import FlowAnnotator
from addons.flows import exchange_of, note_response
from tracer.capture import CaptureWriter, header_record
from tracer.http.recorder import Exchange, HttpRecorder
from tracer.http.sse_tee import SseTee
from tracer.model import Record
from tracer.output import check_output

log = logging.getLogger(__name__)

Listener = Callable[[Record], Any]


class McpCapture:
    def __init__(self) -> None:
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
        self.stopped = False  # done(): the capture is closed; anything mitmproxy reports later is past its end

    # -- options ---------------------------------------------------------------------------------

    def load(self, loader) -> None:
        loader.add_option("mcptrace_output", str, "",
                          "mcptrace: capture file to write (default: a new file in "
                          "$XDG_STATE_HOME/mcptrace/captures/)")
        loader.add_option("mcptrace_redact", bool, True,
                          "mcptrace: redact credentials (Authorization, Cookie, API keys) in the capture")
        loader.add_option("mcptrace_overwrite", bool, False,
                          "mcptrace: replace an existing mcptrace_output file (default: append a new "
                          "session to a capture; a file that is not a capture is refused)")
        loader.add_option("mcptrace_filter", str, "",
                          "mcptrace: only look at flows matching this mitmproxy filter expression "
                          "(default: every flow; MCP is recognised by content)")
        loader.add_option("mcptrace_annotate", bool, True,
                          "mcptrace: write MCP annotations (comment, marker, mcp.* metadata) on flows")

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
            head = header_record("http", upstream=self.header_extra.get("upstream"),
                                 label=self.header_extra.get("label"),
                                 extra={k: v for k, v in self.header_extra.items() if k not in ("upstream", "label")})
            self.writer = CaptureWriter(self.path, head, redact=ctx.options.mcptrace_redact,
                                        overwrite=ctx.options.mcptrace_overwrite)
        return self.path

    def running(self) -> None:
        if self.managed:  # (mitmproxy calls this even when a listener failed: no capture then)
            return
        path = self.open()
        log.info("mcptrace: capturing MCP traffic to %s", path)

    # -- flow hooks ------------------------------------------------------------------------------

    def _wanted(self, flow: http.HTTPFlow) -> bool:
        return self._filter is None or self._filter(flow)

    def request(self, flow: http.HTTPFlow) -> None:
        if not self._wanted(flow):
            return
        ex = self._exchanges[flow.id] = exchange_of(flow)
        self.annotator.track(flow)
        self.recorder.request(ex)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        ex = self._exchanges.get(flow.id)
        if ex is None or flow.response is None:
            return
        note_response(ex, flow)
        tee = self.recorder.response_headers(ex)
        if tee is not None:
            self._tees[flow.id] = tee
            flow.response.stream = self._tee_stream(flow, tee, flow.response.stream)

    def response(self, flow: http.HTTPFlow) -> None:
        ex = self._exchanges.pop(flow.id, None)
        if ex is None:
            return
        tee = self._tees.pop(flow.id, None)
        if tee is not None and getattr(flow.response.stream, "_mcptrace_tee", None) is tee:
            tee.end("end")  # streamed: the tee saw every chunk
            self.recorder.response(ex, None)
        else:  # buffered after all (another addon turned streaming off): the recorder replays the body
            resp = flow.response
            body = resp.get_content(strict=False) if resp.raw_content is not None else None
            self.recorder.response(ex, body)
        self.annotator.finish(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        ex = self._exchanges.pop(flow.id, None)
        if ex is None:
            return
        self._tees.pop(flow.id, None)
        self.recorder.failed(ex, flow.error.msg if flow.error else "error")
        self.annotator.finish(flow)

    def client_disconnected(self, client) -> None:
        """A client's TCP connection closed: the session-less connections only it carried end."""
        self.recorder.client_closed(client.id)

    def done(self) -> None:
        """mitmproxy shuts down (Ctrl-C, q in the viewer, SIGTERM): every exchange still open is
        closed into the capture first (a stream's `stream-closed` event, a request still waiting
        for its answer an `http` record, both with reason `capture-stopped`), then the file is
        closed. mitmproxy may still report those flows' errors afterwards: they are past the end."""
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

    def _tee_stream(self, flow: http.HTTPFlow, tee: SseTee, previous: Any) -> Callable:
        inner = previous if callable(previous) else None

        def stream(chunk: bytes):
            out = inner(chunk) if inner is not None else chunk
            # Hand the bytes on first: mitmproxy sends each yielded chunk before asking for the next,
            # so the parsing below runs after the chunk is on its way. An empty chunk is never
            # yielded (for chunked encoding it would be the terminator).
            if isinstance(out, bytes | bytearray):
                if out:
                    yield out
            else:
                for part in out:
                    if part:
                        yield part
            if chunk:
                tee.feed(chunk)
            else:
                tee.end("end")

        stream._mcptrace_tee = tee
        return stream

    # -- records out -----------------------------------------------------------------------------

    def _emit(self, records: list[Record]) -> None:
        if self.stopped:
            return
        if self.writer is None:
            self.open()
        self.writer.write_many(records)
        if ctx.options.mcptrace_annotate:
            self.annotator.records(records)
        for rec in records:
            for fn in self.listeners:
                try:
                    fn(rec)
                except Exception as exc:  # a consumer's bug must not break the proxy
                    if not self._listener_failed:
                        self._listener_failed = True
                        log.warning("mcptrace: a capture listener failed: %s", exc)


addons = [McpCapture()]
