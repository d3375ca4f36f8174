"""Live OpenTelemetry export (`--otlp`) from real `mcptrace stdio` and `mcptrace proxy` sessions with
the official MCP Python SDK, received by a test OTLP/HTTP receiver that decodes with the official
opentelemetry-proto messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.otlp_receiver import OtlpReceiver
from tests.proxy_peers import capture_records, mcptrace_proxy
from tests.sdk_peers import BOUND_S, REPO, run_client, run_clients, sdk_http_server, server_cmd
from tracer.analyser import analyse_all
from tracer.model import Kind

HOST = REPO / "tests" / "otel_host.py"
# metrics only at the exporter's close, after its last spans: no periodic export mid-session
ONLY_FINAL_METRICS = {"OTEL_METRIC_EXPORT_INTERVAL": "3600000"}
TEE = [sys.executable, "-m", "tracer", "stdio"]


def _requests(path: Path) -> list:
    msgs, _ = analyse_all(capture_records(path))
    return [m for m in msgs if m.kind is Kind.REQUEST]


def _request_spans(spans: list[dict]) -> list[dict]:
    return [s for s in spans if "jsonrpc.request.id" in s["attrs"] and "mcptrace.kind" not in s["attrs"]]


def _all_in(rx: OtlpReceiver) -> list[dict]:
    """Everything, once each connection's root span (sent when the session ended) is in."""
    return rx.wait_for(lambda spans: any(s["name"] == "mcptrace.connection" for s in spans), "root span")


def _host(era: str, server: list[str], *extra: str, env: dict | None = None, stdin=None):
    return subprocess.Popen(
        [sys.executable, str(HOST), "--era", era, *extra, "--", *server],
        cwd=REPO,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _ops(proc: subprocess.Popen, *, stdin_text: str | None = None) -> tuple[list[dict], str]:
    out, err = proc.communicate(stdin_text, timeout=BOUND_S)
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines()], err


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_live_stdio_export_delivers_one_span_per_request_with_the_conventions_attributes(tmp_path, era):
    cap = tmp_path / "cap.jsonl"
    with OtlpReceiver() as rx:
        run_client(era, command=[*TEE, "-o", str(cap), "--otlp", rx.url, "--", *server_cmd()])
        spans = _all_in(rx)
        wanted = {"mcp.client.operation.duration"} | (
            {"mcp.client.session.duration"} if era == "legacy" else set()
        )
        metrics = rx.wait_for_metrics(wanted)
    duration = metrics["mcp.client.operation.duration"]
    assert duration.unit == "s"
    assert list(duration.histogram.data_points[0].explicit_bounds) == [
        0.01,
        0.02,
        0.05,
        0.1,
        0.2,
        0.5,
        1,
        2,
        5,
        10,
        30,
        60,
        120,
        300,
    ]
    requests = _requests(cap)
    got = _request_spans(spans)
    assert sorted(s["attrs"]["mcptrace.capture.seq"] for s in got) == sorted(m.seq for m in requests)
    calls = {s["attrs"]["gen_ai.tool.name"]: s for s in got if s["attrs"]["mcp.method.name"] == "tools/call"}
    add = calls["add"]
    assert add["name"] == "tools/call add"
    assert add["kind"] == 3  # SPAN_KIND_CLIENT
    assert add["attrs"]["gen_ai.operation.name"] == "execute_tool"
    assert add["attrs"]["network.transport"] == "pipe"
    assert add["attrs"]["mcptrace.era"] == era
    assert add["attrs"]["mcp.protocol.version"] == ("2026-07-28" if era == "modern" else "2025-11-25")
    assert isinstance(add["attrs"]["jsonrpc.request.id"], str)
    assert add["end"] > add["start"]
    assert "mcp.session.id" not in add["attrs"]  # stdio has no session id
    fail = calls["fail"]
    assert fail["attrs"]["error.type"] == "tool_error" and fail["status"][0] == 2  # STATUS_CODE_ERROR
    read = next(s for s in got if s["attrs"]["mcp.method.name"] == "resources/read")
    assert read["attrs"]["mcp.resource.uri"].startswith("fixture://")
    prompt = next(s for s in got if s["attrs"]["mcp.method.name"] == "prompts/get")
    assert prompt["name"] == "prompts/get review" and prompt["attrs"]["gen_ai.prompt.name"] == "review"
    slow = [s for s in got if s["attrs"].get("gen_ai.tool.name") == "slow"]
    assert [s["attrs"]["mcptrace.end_reason"] for s in slow] == ["response", "cancelled"]
    assert any(e["attrs"]["mcp.method.name"] == "notifications/progress" for e in slow[0]["events"])
    assert all(s["resource"]["service.name"] == "mcptrace" for s in spans)
    # by default no message content leaves the machine
    assert not any(k.startswith("gen_ai.tool.call.") for s in spans for k in s["attrs"])


def test_live_spans_have_the_ids_a_later_export_of_the_capture_gives(tmp_path):
    cap, out = tmp_path / "cap.jsonl", tmp_path / "spans.jsonl"
    with OtlpReceiver() as rx:
        run_client("modern", command=[*TEE, "-o", str(cap), "--otlp", rx.url, "--", *server_cmd()])
        live = _all_in(rx)
    subprocess.run(
        [sys.executable, "-m", "tracer", "export", "-f", "otlp-json", "-o", str(out), str(cap)],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=BOUND_S,
    )
    offline = [json.loads(line) for line in out.read_text().splitlines()]
    ids = {
        (s["traceId"], s["spanId"], s["name"])
        for doc in offline
        for rs in doc.get("resourceSpans", ())
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    }
    assert {(s["trace_id"], s["span_id"], s["name"]) for s in live} == ids


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_host_spans_traceparent_becomes_the_parent_and_findings_arrive_as_span_events(tmp_path, era):
    cap = tmp_path / "cap.jsonl"
    with OtlpReceiver() as rx:
        ops, _ = _ops(_host(era, [*TEE, "-o", str(cap), "--otlp", rx.url, "--", *server_cmd()]))
        spans = _all_in(rx)
    host = {s["span_id"]: s for s in ops[-1]["spans"]}
    sends = {s["span_id"] for s in host.values() if s["name"].startswith("MCP send")}
    got = [s for s in _request_spans(spans) if s["attrs"]["mcp.method.name"] in ("tools/call", "tools/list")]
    assert len(got) == 6
    for s in got:
        assert s["parent"] in sends, s  # the SDK's own client span, from params._meta.traceparent
        assert s["trace_id"] == host[s["parent"]]["trace_id"]
    msgs, ends = analyse_all(capture_records(cap))
    findings = {(f.rule, f.message) for m in msgs for f in m.findings} | {(f.rule, f.message) for f in ends}
    if era == "modern":  # (the legacy session is clean: then no finding event either)
        assert findings, "the session has findings to show (MCP808, MCP905)"
    events = {
        (e["attrs"]["mcptrace.finding.rule"], e["attrs"]["mcptrace.finding.message"])
        for s in spans
        for e in s["events"]
        if e["name"] == "mcptrace.finding"
    }
    assert events == findings


def test_a_receiver_stopped_mid_session_costs_the_host_nothing_and_the_drops_are_counted(tmp_path):
    plain = _host(
        "legacy",
        [*TEE, "-o", str(tmp_path / "plain.jsonl"), "--", *server_cmd()],
        "--pause",
        stdin=subprocess.PIPE,
    )
    expected, _ = _ops(plain, stdin_text="go\n")
    cap = tmp_path / "cap.jsonl"
    rx = OtlpReceiver().__enter__()
    try:
        proc = _host(
            "legacy",
            [*TEE, "-o", str(cap), "--otlp", rx.url, "--", *server_cmd()],
            "--pause",
            stdin=subprocess.PIPE,
            env={"OTEL_BSP_SCHEDULE_DELAY": "20"},
        )
        first = [json.loads(proc.stdout.readline()) for _ in range(4)]  # list, two calls, "paused"
        assert first[-1]["op"] == "paused"
        rx.wait_for(lambda spans: len(_request_spans(spans)) >= 3, "the first spans")
    finally:
        rx.stop()  # the backend goes down mid-session
    rest, err = _ops(proc, stdin_text="go\n")
    results = [o for o in first + rest if o["op"] != "spans"]
    assert results == [o for o in expected if o["op"] != "spans"]  # every operation, same results
    assert "dropped" in err and "the relay was not slowed" in err, err
    msgs, _ = analyse_all(capture_records(cap))
    plain_msgs, _ = analyse_all(capture_records(tmp_path / "plain.jsonl"))
    assert len(msgs) == len(plain_msgs)  # the capture itself lost nothing


def test_live_proxy_export_of_both_eras_marks_http_transport_and_legacy_session_ids(tmp_path):
    cap = tmp_path / "proxy.jsonl"
    with OtlpReceiver() as rx, sdk_http_server() as upstream:
        with mcptrace_proxy(upstream, cap, "--otlp", rx.url) as url:
            run_clients([("modern", url, None), ("legacy", url, None)])
        spans = _all_in(rx)
    requests = _requests(cap)
    got = _request_spans(spans)
    assert sorted(s["attrs"]["mcptrace.capture.seq"] for s in got) == sorted(m.seq for m in requests)
    for s in got:
        assert s["attrs"]["network.transport"] == "tcp" and s["attrs"]["network.protocol.name"] == "http"
        assert s["attrs"]["network.protocol.version"] == "1.1"  # the SDK's httpx client speaks HTTP/1.1
        assert s["attrs"]["server.address"] == "127.0.0.1" and isinstance(s["attrs"]["server.port"], int)
    legacy = [
        s
        for s in got
        if s["attrs"]["mcptrace.era"] == "legacy" and s["attrs"]["mcp.method.name"] != "initialize"
    ]
    modern = [s for s in got if s["attrs"]["mcptrace.era"] == "modern"]
    assert legacy and modern
    assert all("mcp.session.id" in s["attrs"] for s in legacy)
    assert not any("mcp.session.id" in s["attrs"] for s in modern)
    assert any(e["name"] == "mcptrace.sse.event" for s in got for e in s["events"])


def test_live_export_carries_tool_arguments_and_results_only_with_otlp_bodies(tmp_path):
    cap = tmp_path / "cap.jsonl"
    with OtlpReceiver() as rx:
        run_client(
            "legacy", command=[*TEE, "-o", str(cap), "--otlp", rx.url, "--otlp-bodies", "--", *server_cmd()]
        )
        spans = _all_in(rx)
    add = next(s for s in _request_spans(spans) if s["attrs"].get("gen_ai.tool.name") == "add")
    assert json.loads(add["attrs"]["gen_ai.tool.call.arguments"]) == {"a": 2, "b": 3}
    assert json.loads(add["attrs"]["gen_ai.tool.call.result"])["content"][0]["text"] == "5"


def test_live_export_leaves_out_whole_the_requests_of_a_host_that_sampled_its_trace_out(tmp_path):
    # the default sampler (parentbased_always_on) follows the host's own decision (its traceparent's
    # sampled bit); the connection's trace, mcptrace's own, is sent; the metrics count every operation
    cap = tmp_path / "cap.jsonl"
    with OtlpReceiver() as rx:
        ops, err = _ops(
            _host(
                "modern",
                [*TEE, "-o", str(cap), "--otlp", rx.url, "--", *server_cmd()],
                "--unsampled",
                env=ONLY_FINAL_METRICS,
            )
        )
        metrics = rx.wait_for_metrics({"mcp.client.operation.duration"})  # sent after the last spans
        spans = list(rx.spans)
    assert ops[-1]["spans"] == []  # the host recorded none of its own
    requests = _requests(cap)
    under_host = [m for m in requests if "traceparent" in ((m.params or {}).get("_meta") or {})]
    # (the flags' sampled bit is clear; the SDK sets the random-trace-id bit, 02)
    assert under_host and not any(int(m.params["_meta"]["traceparent"][-2:], 16) & 1 for m in under_host)
    root = next(s for s in spans if s["name"] == "mcptrace.connection")
    assert all(s["trace_id"] == root["trace_id"] for s in spans)  # nothing of the host's trace
    sent_seqs = {s["attrs"].get("mcptrace.capture.seq") for s in spans}
    assert not sent_seqs & {m.seq for m in under_host}
    assert f"{len(under_host)} sampled out (parentbased_always_on)" in err, err
    assert "dropped" not in err
    points = metrics["mcp.client.operation.duration"].histogram.data_points
    assert sum(p.count for p in points) == len(requests)


def test_live_proxy_export_with_always_off_sends_no_span_and_still_measures_every_request(
    tmp_path, monkeypatch
):
    for k, v in {"OTEL_TRACES_SAMPLER": "always_off", **ONLY_FINAL_METRICS}.items():
        monkeypatch.setenv(k, v)  # (the proxy, and its exporter, inherit them)
    cap = tmp_path / "proxy.jsonl"
    with OtlpReceiver() as rx, sdk_http_server() as upstream:
        with mcptrace_proxy(upstream, cap, "--otlp", rx.url) as url:
            run_clients([("modern", url, None), ("legacy", url, None)])
        metrics = rx.wait_for_metrics({"mcp.client.operation.duration"})  # sent after the last spans
        spans = list(rx.spans)
    assert spans == []
    points = metrics["mcp.client.operation.duration"].histogram.data_points
    assert sum(p.count for p in points) == len(_requests(cap)) > 0
