"""Spans as the OTLP/JSON file encoding: one `ExportTraceServiceRequest` per line, and at the end one
`ExportMetricsServiceRequest` line with the duration histograms (cumulative over the file).

This is what an OpenTelemetry Collector's `otlpjsonfile` receiver reads. Proto3 JSON mapping with
OTLP's exceptions: trace and span ids are lowercase hex (not base64), enums are integers, and
64-bit integers (timestamps, int attributes) are strings. Spans are written in batches as they end,
so memory stays bounded on any capture; the output depends only on the input (no clock, no random
id), so exporting the same capture twice gives the same bytes. OTEL_TRACES_SAMPLER applies as to
the live export (tracer.export.sampling): a span sampled out is not written, and its trace with it.
"""

from __future__ import annotations

import os
from bisect import bisect_left
from typing import IO, Any

from tracer import __version__
from tracer.export import mapping as M
from tracer.export.sampling import TraceSampling
from tracer.export.spantypes import Span
from tracer.safejson import dumps as safe_dumps

BATCH = 512  # spans per line
_KIND = {"internal": 1, "server": 2, "client": 3}
_STATUS_ERROR = 2
# SpanFlags: bit 8 says whether the parent is remote is known, bit 9 that it is
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200


def service_name() -> str:
    return os.environ.get("OTEL_SERVICE_NAME") or M.DEFAULT_SERVICE


def any_value(value: Any) -> dict[str, Any]:
    t = type(value)
    if t is bool:
        return {"boolValue": value}
    if t is int:
        return {"intValue": str(value)}
    if t is float:
        return {"doubleValue": value}
    return {"stringValue": str(value)}


_ENCODED: dict[tuple[str, str], dict[str, Any]] = {}  # (key, string value) -> its entry, shared
_ENCODED_MAX = 8192


def attributes(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    # Most attributes repeat from span to span (the method, the era and its reason, the transport,
    # the connection): their entries are built once and shared (nothing mutates them), which halves
    # the encoding time of a span.
    out = []
    cache = _ENCODED
    for k, v in attrs.items():
        if type(v) is str:
            entry = cache.get((k, v))
            if entry is None:
                entry = {"key": k, "value": {"stringValue": v}}
                if len(cache) < _ENCODED_MAX:
                    cache[(k, v)] = entry
            out.append(entry)
        else:
            out.append({"key": k, "value": any_value(v)})
    return out


def span_json(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {"traceId": span.trace_id.hex(), "spanId": span.span_id.hex()}
    if span.trace_state:
        out["traceState"] = span.trace_state
    if span.parent_id is not None:
        out["parentSpanId"] = span.parent_id.hex()
    out["flags"] = _HAS_IS_REMOTE | (_IS_REMOTE if span.remote_parent else 0)
    out["name"] = span.name
    out["kind"] = _KIND[span.kind]
    out["startTimeUnixNano"] = str(span.start_ns)
    out["endTimeUnixNano"] = str(span.end_ns)
    out["attributes"] = attributes(span.attrs)
    if span.events:
        out["events"] = [
            {"timeUnixNano": str(e.t_ns), "name": e.name, "attributes": attributes(e.attrs)}
            for e in span.events
        ]
    if span.is_error:
        out["status"] = {"code": _STATUS_ERROR, **({"message": span.error} if span.error else {})}
    else:
        out["status"] = {}
    return out


class _Histogram:
    """One data point of a duration histogram (explicit buckets, as the SDK aggregates them)."""

    __slots__ = ("attrs", "counts", "max", "min", "n", "start_ns", "sum", "t_ns")

    def __init__(self, attrs: dict[str, Any], start_ns: int):
        self.attrs = attrs
        self.counts = [0] * (len(M.DURATION_BUCKETS) + 1)
        self.n, self.sum, self.min, self.max = 0, 0.0, float("inf"), float("-inf")
        self.start_ns = self.t_ns = start_ns

    def record(self, seconds: float, t_ns: int) -> None:
        self.counts[bisect_left(M.DURATION_BUCKETS, seconds)] += 1  # (a bucket's bound is inclusive)
        self.n += 1
        self.sum += seconds
        self.min, self.max = min(self.min, seconds), max(self.max, seconds)
        self.start_ns, self.t_ns = min(self.start_ns, t_ns), max(self.t_ns, t_ns)

    def json(self) -> dict[str, Any]:
        return {
            "attributes": attributes(self.attrs),
            "startTimeUnixNano": str(self.start_ns),
            "timeUnixNano": str(self.t_ns),
            "count": str(self.n),
            "sum": self.sum,
            "bucketCounts": [str(c) for c in self.counts],
            "explicitBounds": list(M.DURATION_BUCKETS),
            "min": self.min,
            "max": self.max,
        }


METRIC_POINTS_CAP = 10_000  # data points per metric (attribute sets; tool names are many at most)


class OtlpJsonWriter:
    """Collects spans and writes a line per BATCH of them (and the rest at `close`, then the metrics)."""

    def __init__(self, out: IO[bytes], sampling: TraceSampling | None = None):
        self.out = out
        self.pending: list[dict[str, Any]] = []
        self.spans = 0  # written
        self.sampled_out = 0
        self.sampling = sampling or TraceSampling()  # (from the environment; a bad value: one warning)
        self.lines = 0
        self._resource = {"attributes": attributes({M.SERVICE_NAME: service_name()})}
        self._scope = {"name": M.SCOPE_NAME, "version": __version__}
        # metric -> attribute set -> its point, in the order first seen (the output is the input's)
        self._points: dict[str, dict[tuple, _Histogram]] = {M.OPERATION_DURATION: {}, M.SESSION_DURATION: {}}

    def __call__(self, span: Span) -> None:
        point = M.measurement(span)
        if point is not None:
            self._measure(span, *point)  # (every operation counts, sampled or not)
        if not self.sampling.keep(span):
            self.sampled_out += 1
            return
        self.pending.append(span_json(span))
        self.spans += 1
        if len(self.pending) >= BATCH:
            self.flush()

    def _measure(self, span: Span, name: str, seconds: float, attrs: dict[str, Any]) -> None:
        points = self._points[name]
        key = tuple(attrs.items())
        h = points.get(key)
        if h is None:
            if len(points) >= METRIC_POINTS_CAP:
                return
            h = points[key] = _Histogram(attrs, span.start_ns)
        h.record(seconds, span.end_ns)

    def _metrics_line(self) -> bytes | None:
        descriptions = {
            M.OPERATION_DURATION: M.OPERATION_DESCRIPTION,
            M.SESSION_DURATION: M.SESSION_DESCRIPTION,
        }
        metrics = [
            {
                "name": name,
                "description": descriptions[name],
                "unit": "s",
                "histogram": {"dataPoints": [h.json() for h in points.values()], "aggregationTemporality": 2},
            }
            for name, points in self._points.items()
            if points
        ]
        if not metrics:
            return None
        doc = {
            "resourceMetrics": [
                {"resource": self._resource, "scopeMetrics": [{"scope": self._scope, "metrics": metrics}]}
            ]
        }
        return safe_dumps(doc) + b"\n"

    def flush(self) -> None:
        if not self.pending:
            return
        doc = {
            "resourceSpans": [
                {"resource": self._resource, "scopeSpans": [{"scope": self._scope, "spans": self.pending}]}
            ]
        }
        # (safe_dumps: a lone surrogate a HAR's URL or header carries is legal JSON orjson refuses)
        self.out.write(safe_dumps(doc) + b"\n")
        self.pending = []
        self.lines += 1

    def close(self) -> None:
        self.flush()
        line = self._metrics_line()
        if line is not None:
            self.out.write(line)
            self.lines += 1
