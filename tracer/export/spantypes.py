"""The spans the exporters render (`Span`, `SpanEvent`) and the helpers that fill them from the wire:
ids derived from the capture, peer text bounded and made encodable, events bounded per span.
`tracer.export.spans.SpanBuilder` makes them; the otlp-json writer and the SDK sink render them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from tracer.export import mapping as M
from tracer.safejson import safe_text

MAX_TEXT = 1024  # characters of a name or value taken from the wire
MAX_EVENTS = 1000  # events kept on one span (OTLP backends cap them lower still)


@dataclass(slots=True)
class SpanEvent:
    name: str
    t_ns: int
    attrs: dict[str, Any]


@dataclass(slots=True, eq=False)
class Span:
    trace_id: bytes  # 16 bytes
    span_id: bytes  # 8 bytes
    parent_id: bytes | None
    name: str
    start_ns: int
    end_ns: int
    attrs: dict[str, Any]
    events: list[SpanEvent] = field(default_factory=list)
    error: str | None = None  # the status description when the status is ERROR
    is_error: bool = False
    trace_state: str = ""
    remote_parent: bool = False  # the parent came from the host's traceparent
    # in a host's trace (a remote parent, or under one): its traceparent's sampled flag; None: the
    # trace is mcptrace's own (tracer.export.sampling decides the whole trace from it)
    host_sampled: bool | None = None
    kind: str = "client"  # client (a request or notification, from its sender's side), internal
    # builder bookkeeping (not exported)
    _keys: tuple = ()
    _cancel_t: int | None = None


def digest(size: int, *parts: str) -> bytes:
    out = hashlib.blake2b("\x1f".join(parts).encode("utf-8", "surrogatepass"), digest_size=size).digest()
    return out if any(out) else out[:-1] + b"\1"  # an all-zero id is invalid


def cap_text(text: str) -> str:
    """A peer's string as a span name or attribute: bounded (a backend, and memory, need not hold a
    megabyte method name)."""
    text = text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "…"
    return safe_text(text)  # (a lone surrogate is legal JSON, but no exporter encodes it)


def id_text(value: Any) -> str | None:
    t = type(value)
    if t is str:
        return cap_text(value)
    if t is int:
        return str(value)  # exact, beyond 64 bits too
    if t is float:
        return orjson.dumps(value).decode()
    return None


def add_event(span: Span, event: SpanEvent) -> None:
    """Events of one span are bounded (a call open for hours may see a million progress
    notifications): findings always go in, others past MAX_EVENTS are only counted."""
    if len(span.events) < MAX_EVENTS or (event.name == M.FINDING_EVENT and len(span.events) < 2 * MAX_EVENTS):
        span.events.append(event)
    else:
        span.attrs[M.EVENTS_DROPPED] = span.attrs.get(M.EVENTS_DROPPED, 0) + 1


def finding_event(f, t_ns: int) -> SpanEvent:
    """A finding (tracer.model.Finding) as an event of the span it concerns."""
    attrs: dict[str, Any] = {
        M.FINDING_RULE: f.rule,
        M.FINDING_SEVERITY: f.severity.label,
        M.FINDING_MESSAGE: cap_text(f.message),
        M.FINDING_SEQ: f.seq,
    }
    if f.path:
        attrs[M.FINDING_PATH] = cap_text(f.path)
    return SpanEvent(M.FINDING_EVENT, t_ns, attrs)
