"""Export: recorded or live MCP traffic as OpenTelemetry spans (OTLP/HTTP or OTLP/JSON) and as HAR.

mapping.py    the one table of names (semantic conventions for MCP, and mcptrace's own)
spans.py      analysed messages -> Span objects (pure: no OpenTelemetry import)
otlp_json.py  spans -> the OTLP/JSON file encoding (what a collector's file receiver reads)
otel.py       spans -> the official SDK's BatchSpanProcessor and OTLP/HTTP exporter
live.py       the live exporter of `mcptrace stdio/proxy --otlp`: off the relay's path, bounded
har.py        HTTP capture records -> HAR 1.2
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tracer.analyser import Analyser
from tracer.capture import ReadProblem
from tracer.events import SessionClosed
from tracer.export import mapping as M
from tracer.export.spans import Span, SpanBuilder
from tracer.model import Analysed, Record, RecordType


def identity_of(header: dict | None, fallback: str) -> str:
    """What makes a capture's span ids its own: its header's start time and label (stable across
    copies and renames of the file), else the fallback (the file's name)."""
    if isinstance(header, dict) and isinstance(header.get("t_ns"), int):
        label = header.get("label") if isinstance(header.get("label"), str) else ""
        return f"{header['t_ns']}:{label}"
    return fallback


class SpanFeed:
    """Records in (in capture order), finished spans out: the analyser, then the span builder."""

    def __init__(
        self,
        emit: Callable[[Span], None],
        analyser: Analyser,
        *,
        source: str,
        identity: str,
        include_bodies: bool = False,
    ):
        self.analyser = analyser
        self.identity = identity
        self.builder = SpanBuilder(emit, identity=identity, source=source, include_bodies=include_bodies)

    def feed(self, rec: Record) -> None:
        events = self.analyser.feed(rec)
        builder = self.builder
        if events.__class__ is Analysed:  # a message record: its analysis itself
            builder.message(events)
            return
        if rec.type is RecordType.HEADER:
            # a new recording: the sessions of the one before it ended here, and their end findings
            # (never-answered requests...) go on their own connection's spans, under its identity;
            # but the analyser keeps a tee's own session open (two tees appending to one file at
            # once), and its spans go on under the identity it began with, as in a file of its own
            for ev in events:
                if ev.findings:
                    builder.findings(ev.findings, ev.t_ns, ev.session.conn)
            analyser = self.analyser
            for conn in analyser.sessions:
                if analyser.keeps_at_header(conn):
                    builder.keep_identity(conn)
            builder.identity = identity_of(rec.data, self.identity)
            return
        # an HTTP exchange's or SSE event's findings, and a close event's end findings: one call, so
        # those a record carries without a span of their own share one short span
        found = [f for ev in events for f in ev.findings]
        if found:
            builder.findings(found, rec.t_ns, rec.conn)
        builder.record(rec)
        for ev in events:
            # a session the analyser ended at this record (a close event, which record() ended
            # already, or a server started again on a connection still open) ends its spans too
            if ev.__class__ is SessionClosed:
                builder.close(ev.session.conn, rec.t_ns, M.END_REASON_CLOSED)

    def finish(self) -> None:
        found = [f for ev in self.analyser.finish() for f in ev.findings]
        self.builder.finish(found, self.analyser.last_t_ns)


def build_spans(
    records: Iterable[Record | ReadProblem],
    emit: Callable[[Span], None],
    *,
    source: str,
    identity: str,
    analyser: Analyser,
    include_bodies: bool = False,
) -> SpanBuilder:
    """Analyse a stream of records and hand every finished span to `emit`, in the order spans end."""
    feed = SpanFeed(emit, analyser, source=source, identity=identity, include_bodies=include_bodies)
    for item in records:
        if not isinstance(item, ReadProblem):
            feed.feed(item)
    feed.finish()
    return feed.builder
