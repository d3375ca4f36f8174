"""Live export for `mcptrace stdio --otlp` and `mcptrace proxy --otlp`: never on the relay's path.

The door hands each batch of records to `offer`, which only puts a reference on a queue (or, over
the queue's budget, counts the records as not exported): it never blocks and never does the work.
A worker thread runs the analyser (every rule, so findings become span events), the span builder
and the SDK's BatchSpanProcessor, whose own thread talks to the backend. On the stdio tee this all
happens in the capture process, which only gets CPU time nobody else wants; a backend that is down
or slow costs counted drops (records over the budget, spans the exporter could not deliver), and at
the end a bounded wait, shortened when the backend has been failing.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable, Iterable

from tracer.model import Record

MAX_QUEUED = 100_000  # records waiting for the worker before new ones are counted as not exported
CLOSE_TIMEOUT_S = 5.0  # at the end: how long the last spans may take to reach a healthy backend
FAILING_TIMEOUT_S = 0.5  # ...and a backend that refused the last batch, or is slow to take one
_STOP = None
DEFAULT_ENDPOINT = "http://localhost:4318"


def signal_url(base: str | None, signal: str) -> str | None:
    """The OTLP/HTTP URL of a signal ("traces", "metrics") under a base URL given on the command line
    (`--otlp http://collector:4318`); a URL that already names a signal's path is moved to this one.
    None: the exporter reads OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT itself (default localhost:4318)."""
    if not base:
        return None
    base = base.rstrip("/")
    for known in ("/v1/traces", "/v1/metrics", "/v1/logs"):
        if base.endswith(known):
            base = base[: -len(known)]
    return f"{base}/v1/{signal}"


def where(base: str | None) -> str:
    """Where spans go, for messages."""
    return (signal_url(base, "traces") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            or signal_url(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or DEFAULT_ENDPOINT, "traces") or "")


def capture_identity(path: str) -> str:
    """The span-id identity of the session a capture file's last header opened (the same one
    `mcptrace export` derives from that header), else the file's name."""
    import orjson

    from tracer.export import identity_of

    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - (1 << 20)))
            tail = fh.read()
    except OSError:
        return os.path.basename(path)
    for line in reversed(tail.splitlines()):
        if line.startswith(b'{"type":"header"'):
            try:
                return identity_of(orjson.loads(line), os.path.basename(path))
            except orjson.JSONDecodeError:
                break
    return os.path.basename(path)


class LiveExporter:
    def __init__(self, endpoint: str | None, *, source: str = "", identity: str | None = None,
                 include_bodies: bool = False, max_queued: int = MAX_QUEUED,
                 source_of: Callable[[], str] | None = None):
        self.endpoint = endpoint
        self.source = source
        self._source_of = source_of  # the capture file, when it is known only once records flow
        self.identity = identity  # None: from the capture file's header, read by the worker
        self.include_bodies = include_bodies
        self.max_queued = max_queued
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._queued = 0
        self.dropped_records = 0
        self.error: str | None = None
        self.sink = None
        self._thread: threading.Thread | None = None
        self._pid = -1
        self._closing = False  # close() began: catch up at normal priority
        self._abandon = False  # close() stopped waiting: count what is left as dropped

    # -- the door's side: never blocks -----------------------------------------------------------

    def offer(self, recs: Iterable[Record]) -> None:
        recs = list(recs)
        if self._thread is None or self._pid != os.getpid():  # started lazily: in the process that feeds it
            self._start()
        with self._lock:
            if self._queued + len(recs) > self.max_queued or self.error is not None:
                self.dropped_records += len(recs)
                return
            self._queued += len(recs)
        self._q.put(recs)

    def offer_one(self, rec: Record) -> None:
        self.offer((rec,))

    # -- the worker ------------------------------------------------------------------------------

    def _start(self) -> None:
        self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="mcptrace-otlp", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            from tracer.analyser import Analyser
            from tracer.export import SpanFeed
            from tracer.export.otel import OtelSink
            from tracer.rules.registry import select_rules

            if self._source_of is not None:
                self.source = self._source_of()
            identity = self.identity
            if identity is None:
                identity = capture_identity(self.source) if self.source else "live"
            # (flush_every: this worker waits for the exporter rather than overflow the SDK's queue;
            # a backend that is down then backs up into the bounded record queue, counted there)
            self.sink = OtelSink(self.endpoint, flush_every=512)
            feed = SpanFeed(self.sink, Analyser(select_rules(None, None)), source=self.source,
                            identity=identity, include_bodies=self.include_bodies)
        except Exception as exc:  # (a broken SDK install, a bad endpoint): stop exporting, keep relaying
            self.error = f"{type(exc).__name__}: {exc}"
            self._drain()
            return
        boosted = False
        while True:
            recs = self._q.get()
            if recs is _STOP:
                break
            if self._abandon:  # close() gave up waiting: the rest is counted, not exported
                with self._lock:
                    self._queued -= len(recs)
                    self.dropped_records += len(recs)
                continue
            if self._closing and not boosted:
                boosted = True
                _normal_scheduling()
            try:
                for rec in recs:
                    feed.feed(rec)
            except Exception as exc:  # a bug must cost the export, never the capture or the relay
                self.error = f"{type(exc).__name__}: {exc}"
                self._drain()
                return
            finally:
                with self._lock:
                    self._queued -= len(recs)
        try:
            feed.finish()
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"

    def _drain(self) -> None:
        while True:
            recs = self._q.get()
            if recs is _STOP:
                return
            with self._lock:
                self._queued -= len(recs)
                self.dropped_records += len(recs)

    # -- the end ---------------------------------------------------------------------------------

    def close(self) -> dict:
        """Finish the spans still open, hand the last ones to the backend within a bounded time, and
        return the counts: spans, exported, dropped, records not exported, error."""
        if self._thread is None or self._pid != os.getpid():
            return {"spans": 0, "exported": 0, "dropped": 0, "dropped_records": self.dropped_records,
                    "error": self.error, "finished": True}
        self._closing = True
        self._q.put(_STOP)
        self._thread.join(CLOSE_TIMEOUT_S)
        if self._thread.is_alive():
            self._abandon = True
            self._thread.join(FAILING_TIMEOUT_S)
        with self._lock:
            # still queued or in the worker's hands: these records will not become spans now
            dropped_records = self.dropped_records + (self._queued if self._thread.is_alive() else 0)
        sink = self.sink
        if sink is None:
            return {"spans": 0, "exported": 0, "dropped": 0, "dropped_records": dropped_records,
                    "error": self.error, "finished": not self._thread.is_alive()}
        timeout = FAILING_TIMEOUT_S if sink.exporter.failing() else CLOSE_TIMEOUT_S
        finished = sink.close(timeout) and not self._thread.is_alive()
        return {"spans": sink.spans, "exported": sink.exporter.exported, "dropped": sink.dropped,
                "dropped_records": dropped_records, "error": self.error, "finished": finished}


def _normal_scheduling() -> None:
    """The calling thread back from the tee capture process's idle-only scheduling (it inherited
    it): at the end of a session the exporter catches up promptly instead of being dropped. Linux
    applies both calls to the calling thread only; an unprivileged thread keeps nice 19."""
    try:
        if hasattr(os, "SCHED_IDLE") and os.sched_getscheduler(0) == os.SCHED_IDLE:
            os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    except OSError:
        pass


def summary(stats: dict, where: str) -> str | None:
    """The one line mcptrace says about a live export (None when all went well and quiet is asked)."""
    lost = stats["dropped"] + stats["dropped_records"]
    if stats.get("error"):
        return (f"otlp export stopped on an internal error ({stats['error']}); the capture is complete, "
                f"export it with: mcptrace export --format otlp FILE")
    if lost:
        return (f"otlp: {stats['exported']} of {stats['spans']} spans reached {where}; {stats['dropped']} spans "
                f"and {stats['dropped_records']} records dropped (backend down or slow); the relay was not slowed")
    return f"otlp: {stats['spans']} spans sent to {where}"


def wrap_writer(writer, endpoint: str | None, path: str, *, quiet: bool = False) -> ExportingWriter:
    """`mcptrace stdio --otlp`: the capture writer, exporting what it writes."""
    return ExportingWriter(writer, LiveExporter(endpoint, source=path), where=where(endpoint), quiet=quiet)


class ExportingWriter:
    """A capture writer that also hands every batch it wrote to a live exporter (the stdio tee's
    hook: the capture process, or the in-process capture thread, is the one that writes)."""

    def __init__(self, inner, exporter: LiveExporter, *, where: str, quiet: bool = False):
        self._inner = inner
        self.exporter = exporter
        self.where = where
        self.quiet = quiet
        self.stats: dict | None = None

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def write_many(self, recs, *args, **kwargs):
        out = self._inner.write_many(recs, *args, **kwargs)
        self.exporter.offer(recs)
        return out

    def write(self, rec, *args, **kwargs):
        out = self._inner.write(rec, *args, **kwargs)
        self.exporter.offer((rec,))
        return out

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            if self.stats is None and self.exporter._pid == os.getpid():
                self.stats = self.exporter.close()
                line = summary(self.stats, self.where)
                lost = self.stats["dropped"] or self.stats["dropped_records"] or self.stats.get("error")
                if line and (lost or not self.quiet):
                    try:
                        sys.stderr.write(f"mcptrace: {line}\n")
                        sys.stderr.flush()
                    except (OSError, ValueError):
                        pass
