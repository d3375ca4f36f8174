"""The short span that holds findings with no message of their own (end of capture, an HTTP
exchange) is named by what it holds, not by how many spans were emitted before it: a live exporter
sending one connection of a shared file, or started later, gives it the id `mcptrace export` gives."""

from __future__ import annotations

from tracer.export.spans import SpanBuilder
from tracer.model import Finding, Severity

T_NS = 1_796_000_000_000_000_000


def _findings_spans(before: list[list[Finding]], found: list[Finding]) -> list:
    spans: list = []
    builder = SpanBuilder(spans.append, identity="capture-identity", source="cap.jsonl")
    for other in before:
        builder.findings(other, T_NS - 1)
    builder.findings(found, T_NS)
    return spans


def test_a_findings_span_has_the_same_id_whatever_spans_came_before_it():
    found = [Finding("MCP211", Severity.WARNING, "tools/call id 3 was never answered", seq=0)]
    earlier = [[Finding("MCP904", Severity.INFO, "the deprecated HTTP+SSE transport", seq=0)]] * 3

    alone = _findings_spans([], found)[-1]
    after_others = _findings_spans(earlier, found)[-1]

    assert after_others.span_id == alone.span_id
    assert after_others.trace_id == alone.trace_id


def test_findings_spans_holding_different_findings_have_different_ids():
    one = _findings_spans([], [Finding("MCP211", Severity.WARNING, "id 3 never answered")])[-1]
    other = _findings_spans([], [Finding("MCP211", Severity.WARNING, "id 4 never answered")])[-1]

    assert one.span_id != other.span_id
