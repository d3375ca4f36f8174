"""Sampling as OpenTelemetry users configure it: OTEL_TRACES_SAMPLER (always_on, always_off,
traceidratio, parentbased_always_on: the default, parentbased_always_off, parentbased_traceidratio)
and OTEL_TRACES_SAMPLER_ARG (the ratio, in [0, 1]; 1.0 when unset), decided by the SDK's own
sampler classes, the same way for the live export, `export --format otlp` and `otlp-json`.

A trace is kept or dropped whole. mcptrace makes the parent spans itself, so the parent context it
hands the sampler must carry the decision its trace's top span got: for a trace of mcptrace's own
(a connection's), the root decision on the trace id; for a host's trace, the decision on the host's
remote span with its own traceparent sampled flag. Both are functions of the trace id and that flag
(every SDK sampler decides on them alone), so no decision has to be remembered: a child may end,
and be decided, before its parent.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping

from opentelemetry import trace as trace_api
from opentelemetry.context import Context
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    ALWAYS_ON,
    DEFAULT_OFF,
    DEFAULT_ON,
    ParentBasedTraceIdRatio,
    Sampler,
    TraceIdRatioBased,
)
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from tracer.export.spantypes import Span

DEFAULT = "parentbased_always_on"
_FIXED = {
    "always_on": ALWAYS_ON,
    "always_off": ALWAYS_OFF,
    "parentbased_always_on": DEFAULT_ON,
    "parentbased_always_off": DEFAULT_OFF,
}
_RATIO = {"traceidratio": TraceIdRatioBased, "parentbased_traceidratio": ParentBasedTraceIdRatio}
NAMES = (*_FIXED, *_RATIO)
_CACHE_MAX = 4096  # decisions remembered (only to save the sampler's call: each can be recomputed)
_ROOT, _REMOTE, _LOCAL = 0, 2, 4  # + 1: the parent is sampled


def _stderr_warning(text: str) -> None:
    try:
        sys.stderr.write(f"mcptrace: warning: {text}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass  # (nobody to tell: stderr is closed)


def sampler_from_env(
    environ: Mapping[str, str] | None = None, warn: Callable[[str], None] = _stderr_warning
) -> tuple[str, Sampler]:
    """The configured sampler and its description. An unknown name or a ratio that is not a number
    in [0, 1] is one warning and ignored, as the specification asks (as if the variable were unset)."""
    env = os.environ if environ is None else environ
    raw = env.get("OTEL_TRACES_SAMPLER", "")
    name = raw.strip().lower() or DEFAULT
    if name not in _FIXED and name not in _RATIO:
        warn(f"OTEL_TRACES_SAMPLER={raw!r} is not one of {', '.join(NAMES)}; using {DEFAULT}")
        name = DEFAULT
    if name in _FIXED:
        return name, _FIXED[name]
    arg = env.get("OTEL_TRACES_SAMPLER_ARG", "").strip()
    ratio = 1.0
    if arg:
        try:
            ratio = float(arg)
        except ValueError:
            ratio = -1.0
        if not 0.0 <= ratio <= 1.0:  # (also NaN)
            warn(f"OTEL_TRACES_SAMPLER_ARG={arg!r} is not a ratio in [0, 1]; using 1.0")
            ratio = 1.0
    return f"{name} {ratio:g}", _RATIO[name](ratio)


class TraceSampling:
    """The sampler's decision for each span, and the sampled flag of the parent context to give the
    SDK (so that its own sampler, run again in start_span, agrees)."""

    def __init__(self, sampler: Sampler | None = None, description: str = ""):
        if sampler is None:
            description, sampler = sampler_from_env()
        self.sampler = sampler
        self.description = description
        self._cache: dict[tuple[int, int], bool] = {}
        self._kept: dict[tuple, bool] = {}

    def _decide(self, trace_id: int, parent: int) -> bool:
        key = (trace_id, parent)
        kept = self._cache.get(key)
        if kept is None:
            if parent == _ROOT:
                ctx = Context()
            else:
                flags = TraceFlags(TraceFlags.SAMPLED if parent & 1 else TraceFlags.DEFAULT)
                # (any valid span id: no SDK sampler reads it)
                sc = SpanContext(trace_id, 1, is_remote=parent < _LOCAL, trace_flags=flags)
                ctx = trace_api.set_span_in_context(NonRecordingSpan(sc), Context())
            kept = self.sampler.should_sample(ctx, trace_id, "").decision.is_sampled()
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()
            self._cache[key] = kept
        return kept

    def parent_sampled(self, span: Span) -> bool:
        """The sampled flag of `span`'s parent: the host's own for a remote parent; for one of
        mcptrace's spans, the decision its trace's top span got."""
        if span.remote_parent:
            return span.host_sampled is not False
        trace_id = int.from_bytes(span.trace_id)
        if span.host_sampled is None:  # the trace is mcptrace's own: its top is a root
            return self._decide(trace_id, _ROOT)
        return self._decide(trace_id, _REMOTE + span.host_sampled)

    def keep(self, span: Span) -> bool:
        # (one lookup per span on the encoding's hot path: what decides is the trace and its shape)
        key = (span.trace_id, span.parent_id is None, span.remote_parent, span.host_sampled)
        kept = self._kept.get(key)
        if kept is None:
            trace_id = int.from_bytes(span.trace_id)
            if span.parent_id is None:
                kept = self._decide(trace_id, _ROOT)
            else:
                base = _REMOTE if span.remote_parent else _LOCAL
                kept = self._decide(trace_id, base + self.parent_sampled(span))
            if len(self._kept) >= _CACHE_MAX:
                self._kept.clear()
            self._kept[key] = kept
        return kept
