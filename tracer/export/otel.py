"""Spans to a tracing backend through the official OpenTelemetry SDK: BatchSpanProcessor (batching,
a bounded queue, a worker thread) and the OTLP/HTTP exporter (retries with backoff, and the
OTEL_EXPORTER_OTLP_ENDPOINT / _HEADERS / _TIMEOUT and OTEL_SERVICE_NAME variables honoured).

The spans already exist (tracer.export.spans); the SDK is driven through its public tracer API, with
an id generator that hands out the capture-derived ids, so live and file exports agree on ids and a
host's traceparent stays the parent. OTEL_TRACES_SAMPLER is honoured (tracer.export.sampling: whole
traces kept or dropped). Every span handed in is counted as exported, sampled out, or dropped (queue
full, backend down or slow): the count is what `mcptrace` reports, never a stall.
"""

from __future__ import annotations

import logging
import threading
import time

from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)

from tracer import __version__
from tracer.export import mapping as M
from tracer.export.live import signal_url
from tracer.export.otlp_json import service_name
from tracer.export.sampling import TraceSampling
from tracer.export.spantypes import Span

STUCK_S = 1.0  # an export still retrying after this long, at the end: the backend is down or hung
_KINDS = {"client": SpanKind.CLIENT, "internal": SpanKind.INTERNAL, "server": SpanKind.SERVER}


def quiet_sdk_logs() -> None:
    """The SDK logs each failed export (a backend down: one warning per retry). On a tee, stderr is
    the server's own log in the host: mcptrace reports the drops once, at the end, instead."""
    logger = logging.getLogger("opentelemetry")
    logger.setLevel(logging.CRITICAL)
    logger.propagate = False


class _CapturedIds(IdGenerator):
    """Hands out the ids of the span being started (the SDK asks for them in start_span)."""

    def __init__(self) -> None:
        self.trace_id = 0
        self.span_id = 0

    def generate_trace_id(self) -> int:
        return self.trace_id

    def generate_span_id(self) -> int:
        return self.span_id


class _Counting(SpanExporter):
    """The real exporter, counting what it delivered and what it could not."""

    def __init__(self, inner: SpanExporter):
        self.inner = inner
        self.exported = 0
        self.failed = 0
        self.last_failed = False
        self.busy_since: float | None = None  # an export under way (retrying, maybe) since then

    def export(self, spans) -> SpanExportResult:
        self.busy_since = time.monotonic()
        try:
            result = self.inner.export(spans)
        except Exception:  # (the exporter's own bug or an unexpected transport error: a failed batch)
            result = SpanExportResult.FAILURE
        finally:
            self.busy_since = None
        if result is SpanExportResult.SUCCESS:
            self.exported += len(spans)
            self.last_failed = False
        else:
            self.failed += len(spans)
            self.last_failed = True
        return result

    def failing(self, stuck_s: float = 1.0) -> bool:
        """The backend refused the last batch, or the current one has been retrying for a while."""
        busy = self.busy_since
        return self.last_failed or (busy is not None and time.monotonic() - busy > stuck_s)

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class OtelSink:
    """Callable: one `Span` in, one SDK span out (ended at once, queued for the batch exporter)."""

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        metrics: bool = True,
        max_queue: int | None = None,
        schedule_delay_ms: float | None = None,
        exporter: SpanExporter | None = None,
        flush_every: int | None = None,
        sampling: TraceSampling | None = None,
    ):
        quiet_sdk_logs()
        self.sampling = sampling or TraceSampling()  # (from the environment; a bad value: one warning)
        resource = Resource.create({M.SERVICE_NAME: service_name()})
        self._ids = _CapturedIds()
        self.provider = TracerProvider(
            resource=resource, sampler=self.sampling.sampler, id_generator=self._ids
        )
        self.exporter = _Counting(exporter or OTLPSpanExporter(endpoint=signal_url(endpoint, "traces")))
        self.processor = BatchSpanProcessor(
            self.exporter, max_queue_size=max_queue, schedule_delay_millis=schedule_delay_ms
        )
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer(M.SCOPE_NAME, __version__)
        self.spans = 0
        self.sampled_out = 0  # spans the sampler dropped: neither exported nor lost
        # Offline export (a file, not a live session) must not outrun the batch queue, which drops
        # when full: every `flush_every` spans it waits for the exporter to send what is queued.
        self.flush_every = flush_every
        self.meters: MeterProvider | None = None
        if metrics:
            reader = PeriodicExportingMetricReader(
                OTLPMetricExporter(endpoint=signal_url(endpoint, "metrics"))
            )
            self.meters = MeterProvider(resource=resource, metric_readers=[reader])
            meter = self.meters.get_meter(M.SCOPE_NAME, __version__)
            buckets = list(M.DURATION_BUCKETS)
            self._op = meter.create_histogram(
                M.OPERATION_DURATION,
                unit="s",
                explicit_bucket_boundaries_advisory=buckets,
                description=M.OPERATION_DESCRIPTION,
            )
            self._session = meter.create_histogram(
                M.SESSION_DURATION,
                unit="s",
                explicit_bucket_boundaries_advisory=buckets,
                description=M.SESSION_DESCRIPTION,
            )

    def __call__(self, span: Span) -> None:
        ids = self._ids
        ids.trace_id = int.from_bytes(span.trace_id)
        ids.span_id = int.from_bytes(span.span_id)
        if span.parent_id is not None:
            state = TraceState.from_header([span.trace_state]) if span.trace_state else TraceState()
            parent = SpanContext(
                ids.trace_id,
                int.from_bytes(span.parent_id),
                is_remote=span.remote_parent,
                # the decision of the trace's top span, so the SDK's sampler keeps or drops it whole
                trace_flags=TraceFlags(
                    TraceFlags.SAMPLED if self.sampling.parent_sampled(span) else TraceFlags.DEFAULT
                ),
                trace_state=state,
            )
            ctx = trace_api.set_span_in_context(NonRecordingSpan(parent), Context())
        else:
            ctx = Context()  # a root: never the ambient context of whatever runs this
        s = self.tracer.start_span(
            span.name,
            context=ctx,
            kind=_KINDS.get(span.kind, SpanKind.INTERNAL),
            attributes=span.attrs,
            start_time=span.start_ns,
        )
        if not s.get_span_context().trace_flags.sampled:
            s.end(end_time=span.end_ns)
            self.sampled_out += 1
            self.spans += 1
            if self.meters is not None:
                self._measure(span)  # (metrics count every operation, sampled or not)
            return
        for e in span.events:
            s.add_event(e.name, e.attrs, timestamp=e.t_ns)
        if span.is_error:
            s.set_status(Status(StatusCode.ERROR, span.error))
        s.end(end_time=span.end_ns)
        self.spans += 1
        if self.flush_every and not self.spans % self.flush_every:
            self.processor.force_flush()
        if self.meters is not None:
            self._measure(span)

    def _measure(self, span: Span) -> None:
        point = M.measurement(span)
        if point is not None:
            name, seconds, attrs = point
            (self._op if name == M.OPERATION_DURATION else self._session).record(seconds, attrs)

    @property
    def dropped(self) -> int:
        """Spans handed in and sampled that did not reach the backend (so far: exact once `close`
        returned)."""
        return self.spans - self.sampled_out - self.exporter.exported

    def close(self, timeout_s: float = 5.0) -> bool:
        """Flush what is queued within `timeout_s`, then stop. False: time ran out (the rest is
        counted as dropped; the worker threads are daemons and never hold the process)."""
        done = threading.Event()

        def stop() -> None:
            try:
                self.processor.force_flush()
                self.exporter.shutdown()  # (also cuts short a retry's backoff)
                self.processor.shutdown()
                if self.meters is not None:
                    self.meters.shutdown(timeout_millis=max(1, int(timeout_s * 1000)))
            finally:
                done.set()

        threading.Thread(target=stop, name="mcptrace-otlp-close", daemon=True).start()
        deadline = time.monotonic() + timeout_s
        finished = False
        while not finished and time.monotonic() < deadline:
            # a backend that refuses or hangs shows as an export retrying for more than a second: then
            # the rest is dropped now (a host that ends its server waits for the tee, not for retries)
            finished = done.wait(min(0.05, max(0.0, deadline - time.monotonic())))
            if not finished and self.exporter.failing(STUCK_S):
                break
        if not finished:
            self.exporter.inner.shutdown()
        return finished
