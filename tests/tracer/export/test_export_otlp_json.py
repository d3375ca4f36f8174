"""`mcptrace export --format otlp-json`: the OTLP/JSON file encoding, stable across runs, and the
mapping from MCP traffic to spans (the semantic conventions for MCP plus mcptrace.* facts)."""

from __future__ import annotations

import base64
import io
import os
import subprocess
import sys

import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.cases import build_records
from tests.sdk_peers import CAPTURES, REPO
from tests.tracer.test_mrtr_operations import ASKING_CLIENT, ASKING_SERVER
from tracer.analyser import Analyser
from tracer.export import build_spans
from tracer.export.otlp_json import OtlpJsonWriter
from tracer.model import Record, RecordType

FIXTURES = sorted(CAPTURES.glob("*.jsonl"))
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _export(path, *extra: str, seed: str = "0") -> bytes:
    done = subprocess.run(
        [sys.executable, "-m", "tracer", "export", "-f", "otlp-json", *extra, str(path)],
        cwd=REPO,
        capture_output=True,
        timeout=120,
        env={**os.environ, "PYTHONHASHSEED": seed},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _as_proto(line: bytes) -> ExportTraceServiceRequest:
    """Decode a line as a collector does: OTLP/JSON ids are hex, which protobuf's JSON mapping (base64
    for bytes) does not know, so they are translated first."""
    doc = orjson.loads(line)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in s:
                        s[key] = base64.b64encode(bytes.fromhex(s[key])).decode()
    return json_format.Parse(orjson.dumps(doc), ExportTraceServiceRequest())


def spans_of(records, **kw) -> list[dict]:
    out = io.BytesIO()
    writer = OtlpJsonWriter(out)
    build_spans(records, writer, source="case", identity="case", analyser=Analyser(), **kw)
    writer.close()
    return [
        s
        for line in out.getvalue().splitlines()
        for rs in orjson.loads(line).get("resourceSpans", ())
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]


def attrs(span: dict) -> dict:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


@pytest.mark.parametrize("capture", FIXTURES, ids=lambda p: p.name)
def test_otlp_json_of_a_fixture_capture_is_byte_identical_across_runs_and_parses_as_export_request(capture):
    first, second = _export(capture, seed="1"), _export(capture, seed="2")
    assert first and first == second
    *lines, last = first.splitlines()
    metrics = json_format.Parse(last, ExportMetricsServiceRequest())  # the durations, at the end
    assert {m.name for rm in metrics.resource_metrics for sm in rm.scope_metrics for m in sm.metrics} >= {
        "mcp.client.operation.duration"
    }
    for line in lines:
        json_format.Parse(line, ExportTraceServiceRequest())  # the proto3 JSON shape, as written
        req = _as_proto(line)
        spans = [s for rs in req.resource_spans for ss in rs.scope_spans for s in ss.spans]
        assert spans
        for s in spans:
            assert len(s.trace_id) == 16 and len(s.span_id) == 8
            assert s.end_time_unix_nano >= s.start_time_unix_nano > 0
    doc = orjson.loads(first.splitlines()[0])
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert isinstance(span["startTimeUnixNano"], str)  # int64 as strings


def test_a_valid_traceparent_and_tracestate_become_the_parent_an_invalid_one_is_ignored():
    spans = spans_of(
        build_records(
            [
                {
                    "c2s": {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "tools/call",
                        "params": {
                            "name": "add",
                            "arguments": {},
                            "_meta": {
                                **META,
                                "traceparent": TRACEPARENT,
                                "tracestate": "rojo=00f067aa0ba902b7",
                            },
                        },
                    }
                },
                {"s2c": {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "content": []}}},
                {
                    "c2s": {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "tools/call",
                        "params": {
                            "name": "add",
                            "arguments": {},
                            "_meta": {**META, "traceparent": "00-zz-bad", "tracestate": "x"},
                        },
                    }
                },
                {"s2c": {"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "content": []}}},
                {
                    "c2s": {
                        "jsonrpc": "2.0",
                        "id": 3,
                        "method": "tools/call",
                        "params": {
                            "name": "add",
                            "arguments": {},
                            "_meta": {**META, "traceparent": TRACEPARENT, "tracestate": "Bad Key=1"},
                        },
                    }
                },
                {"s2c": {"jsonrpc": "2.0", "id": 3, "result": {"resultType": "complete", "content": []}}},
            ]
        )
    )
    joined, alone, no_state = spans[0], spans[1], spans[2]
    assert joined["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert joined["parentSpanId"] == "00f067aa0ba902b7" and joined["traceState"] == "rojo=00f067aa0ba902b7"
    assert joined["flags"] == 0x300  # the parent is remote
    root = next(s for s in spans if s["name"] == "mcptrace.connection")
    assert alone["traceId"] == root["traceId"] and alone["parentSpanId"] == root["spanId"]
    assert "traceState" not in alone
    assert no_state["parentSpanId"] == "00f067aa0ba902b7" and "traceState" not in no_state


def test_errors_null_ids_and_bodies_map_as_the_conventions_say():
    records = build_records(
        [
            {
                "c2s": {
                    "jsonrpc": "2.0",
                    "id": "a",
                    "method": "tools/call",
                    "params": {"name": "secret", "arguments": {"token": "s3cr3t"}, "_meta": META},
                }
            },
            {
                "s2c": {
                    "jsonrpc": "2.0",
                    "id": "a",
                    "error": {"code": -32602, "message": "Unknown tool: secret"},
                }
            },
            {"c2s": {"jsonrpc": "2.0", "id": None, "method": "ping", "params": {"_meta": META}}},
            {
                "c2s": {
                    "jsonrpc": "2.0",
                    "id": 7,
                    "method": "resources/read",
                    "params": {"uri": "file:///etc/motd", "_meta": META},
                }
            },
        ]
    )
    spans = spans_of(records)
    err = attrs(spans[0])
    assert spans[0]["name"] == "tools/call secret"
    assert err["error.type"] == "-32602" and err["rpc.response.status_code"] == "-32602"
    assert err["jsonrpc.request.id"] == "a" and err["gen_ai.operation.name"] == "execute_tool"
    assert spans[0]["status"] == {"code": 2, "message": "Unknown tool: secret"}
    assert "gen_ai.tool.call.arguments" not in err  # content stays home by default
    ping = next(s for s in spans if attrs(s)["mcp.method.name"] == "ping")
    assert "jsonrpc.request.id" not in attrs(ping)  # never for a null id
    read = next(s for s in spans if attrs(s)["mcp.method.name"] == "resources/read")
    assert attrs(read)["mcp.resource.uri"] == "file:///etc/motd" and read["name"] == "resources/read"
    assert (
        attrs(read)["mcptrace.end_reason"] == "end-of-capture" and attrs(read)["error.type"] == "no_response"
    )
    assert any(e["name"] == "mcptrace.finding" for e in read.get("events", []))  # never answered: a finding
    with_bodies = attrs(spans_of(records, include_bodies=True)[0])
    assert orjson.loads(with_bodies["gen_ai.tool.call.arguments"]) == {"token": "s3cr3t"}


def test_an_mrtr_operation_is_a_parent_span_over_its_rounds(tmp_path):
    cap = tmp_path / "ask.jsonl"
    tee = [sys.executable, "-m", "tracer", "stdio", "-o", str(cap), "--", sys.executable, str(ASKING_SERVER)]
    done = subprocess.run(
        [sys.executable, str(ASKING_CLIENT), "--era", "modern", "--", *tee],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    spans = [
        s
        for line in _export(cap).splitlines()
        for rs in orjson.loads(line).get("resourceSpans", ())
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]
    ops = [s for s in spans if s["name"].startswith("mcptrace.mrtr.operation ")]
    assert ops
    op = ops[0]
    rounds = [s for s in spans if s.get("parentSpanId") == op["spanId"]]
    assert len(rounds) == int(attrs(op)["mcptrace.mrtr.rounds"]) >= 2  # (intValue: a string in OTLP/JSON)
    assert all(r["traceId"] == op["traceId"] for r in rounds)
    assert int(op["startTimeUnixNano"]) == min(int(r["startTimeUnixNano"]) for r in rounds)
    assert int(op["endTimeUnixNano"]) == max(int(r["endTimeUnixNano"]) for r in rounds)


def test_sessions_of_an_appended_capture_that_reuse_seqs_each_keep_their_spans():
    first = build_records(
        [
            {
                "conn": "stdio-1",
                "c2s": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}},
            }
        ]
    )
    second = build_records(
        [
            {
                "conn": "stdio-2",
                "c2s": {"jsonrpc": "2.0", "id": 1, "method": "prompts/list", "params": {"_meta": META}},
            },
            {
                "conn": "stdio-2",
                "s2c": {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "prompts": []}},
            },
        ]
    )
    # a second session appended to the capture numbers its records from 1 again
    assert first[0].seq == second[0].seq == 1
    spans = spans_of(first + second)
    names = {s["name"]: attrs(s) for s in spans}
    assert names["tools/list"]["mcptrace.end_reason"] == "end-of-capture"
    assert names["prompts/list"]["mcptrace.end_reason"] == "response"


def test_otlp_json_ends_with_the_duration_histograms_of_the_requests_in_the_conventions_buckets():
    legacy = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "h", "version": "1"},
    }
    entries = [
        {"t_ms": 1000, "c2s": {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": legacy}},
        {
            "t": 1_003_000_000,
            "s2c": {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "s", "version": "1"},
                },
            },
        },
        {"t_ms": 1004, "c2s": {"jsonrpc": "2.0", "method": "notifications/initialized"}},
    ]
    for i, ms in enumerate((5, 15, 250), start=1):  # three tools/call: 5 ms, 15 ms, 250 ms
        t = 2000 * i
        call = {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {}},
        }
        entries.append({"t_ms": t, "c2s": call})
        entries.append({"t_ms": t + ms, "s2c": {"jsonrpc": "2.0", "id": i, "result": {"content": []}}})
    out = io.BytesIO()
    writer = OtlpJsonWriter(out)
    build_spans(build_records(entries), writer, source="case", identity="case", analyser=Analyser())
    writer.close()
    doc = json_format.Parse(out.getvalue().splitlines()[-1], ExportMetricsServiceRequest())
    (metric,) = [
        m
        for rm in doc.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        if m.name == "mcp.client.operation.duration"
    ]
    assert metric.unit == "s" and metric.histogram.aggregation_temporality == 2  # cumulative
    calls = [
        p
        for p in metric.histogram.data_points
        if {a.key: a.value.string_value for a in p.attributes}.get("gen_ai.tool.name") == "echo"
    ]
    (point,) = calls
    assert list(point.explicit_bounds) == [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]
    assert point.count == 3 and abs(point.sum - 0.270) < 1e-9
    assert list(point.bucket_counts)[:6] == [1, 1, 0, 0, 0, 1]  # <=10 ms, <=20 ms, ..., <=500 ms
    assert point.min == 0.005 and point.max == 0.25


def test_a_request_left_unanswered_by_an_earlier_recording_of_an_appended_capture_carries_its_finding():
    # A second header (the host restarted its server) ends the first recording's sessions; their
    # end findings went nowhere when only messages followed, so the span lacked its MCP211 event.
    def header(t_ns):
        return Record(RecordType.HEADER, t_ns=t_ns, data={"format": "mcptrace", "version": 1, "t_ns": t_ns})

    first = build_records(
        [
            {
                "conn": "stdio-1",
                "c2s": {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}},
            }
        ]
    )
    second = build_records(
        [
            {"conn": "stdio-2", "t_ms": 10, "c2s": {"jsonrpc": "2.0", "id": 1, "method": "ping"}},
            {"conn": "stdio-2", "t_ms": 11, "s2c": {"jsonrpc": "2.0", "id": 1, "result": {}}},
        ]
    )
    spans = spans_of([header(first[0].t_ns - 1), *first, header(second[0].t_ns - 1), *second])
    (listed,) = [s for s in spans if s["name"] == "tools/list"]
    found = [attrs(e) for e in listed.get("events", ()) if e["name"] == "mcptrace.finding"]
    assert "MCP211" in [f["mcptrace.finding.rule"] for f in found]
