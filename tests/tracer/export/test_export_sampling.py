"""OTEL_TRACES_SAMPLER / OTEL_TRACES_SAMPLER_ARG in `mcptrace export --format otlp` (what a test OTLP
receiver decodes with the official opentelemetry-proto messages) and `--format otlp-json`: whole
traces kept or dropped, the host's sampled flag counted as the SDK's parent-based samplers do,
sampled-out spans reported as such (not as lost), metrics over every operation, bad values a warning."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections import Counter

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.cases import build_records
from tests.otlp_receiver import BOUND_S, OtlpReceiver
from tests.replay_support import req, res, write_capture
from tests.sdk_peers import REPO
from tracer.analyser import Analyser
from tracer.export import build_spans
from tracer.export.otel import OtelSink
from tracer.export.otlp_json import OtlpJsonWriter
from tracer.export.sampling import TraceSampling, sampler_from_env

# Host traces chosen so any ratio strictly between 0 and 1 decides them alike: TraceIdRatioBased keeps
# a trace whose low 64 bits are under ratio * 2**64.
LOW = "4bf92f3577b34da60000000000000001"  # kept at any ratio > 0
HIGH = "4bf92f3577b34da6ffffffffffffffff"  # dropped at any ratio < 1
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _call(id_: int, traceparent: str | None = None) -> list[tuple[str, dict]]:
    meta = {**META, **({"traceparent": traceparent} if traceparent else {})}
    return [
        ("c2s", req(id_, "tools/call", {"name": "add", "arguments": {}, "_meta": meta})),
        ("s2c", res(id_, {"resultType": "complete", "content": []})),
    ]


def _capture(tmp_path):
    """A connection's own trace (its root, two calls) and two host traces: LOW with the host's span
    not sampled (flags 00), HIGH sampled (01)."""
    return write_capture(
        tmp_path / "cap.jsonl",
        *_call(1),
        *_call(2),
        *_call(3, f"00-{LOW}-00f067aa0ba902b7-00"),
        *_call(4, f"00-{HIGH}-00f067aa0ba902b7-01"),
    )


def _mcptrace(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    return subprocess.run(
        [sys.executable, "-m", "tracer", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        # (metrics only at the end, after the last spans: no periodic export while a loaded machine runs it)
        env={**clean, "OTEL_BSP_SCHEDULE_DELAY": "20", "OTEL_METRIC_EXPORT_INTERVAL": "3600000", **env},
    )


def _sent(cap, **env: str) -> tuple[list[dict], subprocess.CompletedProcess, int]:
    """What `export --format otlp` delivers, once its metrics (sent after the last spans) are in; and
    how many operations the duration histogram counted."""
    with OtlpReceiver() as rx:
        done = _mcptrace("export", "-f", "otlp", "-o", rx.url, str(cap), **env)
        metrics = rx.wait_for_metrics({"mcp.client.operation.duration"})
        spans = list(rx.spans)
    ops = sum(p.count for p in metrics["mcp.client.operation.duration"].histogram.data_points)
    return spans, done, ops


def _written(cap, **env: str) -> tuple[list[dict], subprocess.CompletedProcess]:
    done = _mcptrace("export", "-f", "otlp-json", str(cap), **env)
    spans = [
        {"trace_id": s["traceId"], "span_id": s["spanId"], "name": s["name"]}
        for line in done.stdout.splitlines()
        for rs in json.loads(line).get("resourceSpans", ())
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]
    return spans, done


def _traces(spans: list[dict]) -> Counter:
    return Counter(s["trace_id"] for s in spans)


def test_by_default_every_trace_is_sent_but_the_one_under_a_host_span_that_was_not_sampled(tmp_path):
    cap = _capture(tmp_path)
    every, _ = _written(cap, OTEL_TRACES_SAMPLER="always_on")
    spans, done, ops = _sent(cap)
    assert done.returncode == 0, done.stderr
    own = next(s["trace_id"] for s in every if s["name"] == "mcptrace.connection")
    # the connection's trace whole (its root, two calls), and the call under the sampled host span
    assert _traces(spans) == {own: _traces(every)[own], HIGH: 1} and _traces(every)[LOW] == 1
    assert f"{len(every) - 1} spans from" in done.stderr
    assert "1 sampled out (parentbased_always_on)" in done.stderr and "dropped" not in done.stderr
    assert ops == 4  # every operation is measured, sampled or not
    written, wdone = _written(cap)
    assert {(s["trace_id"], s["span_id"]) for s in written} == {(s["trace_id"], s["span_id"]) for s in spans}
    assert "1 sampled out" in wdone.stderr


@pytest.mark.parametrize(
    ("env", "kept_own", "kept_hosts"),
    [
        # the host's own decision wins for its traces; the connection's trace is decided at its root
        ({"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"}, False, {HIGH}),
        # the trace id alone decides, whatever the host's flag
        ({"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.5"}, None, {LOW}),
        ({"OTEL_TRACES_SAMPLER": "always_off"}, False, set()),
        ({"OTEL_TRACES_SAMPLER": "parentbased_always_off"}, False, {HIGH}),
    ],
    ids=["parentbased_ratio_0", "ratio_half", "always_off", "parentbased_always_off"],
)
def test_a_sampler_keeps_or_drops_each_trace_whole_and_counts_what_it_left_out(
    tmp_path, env, kept_own, kept_hosts
):
    cap = _capture(tmp_path)
    every, _ = _written(cap, OTEL_TRACES_SAMPLER="always_on")
    whole = _traces(every)
    own = next(s["trace_id"] for s in every if s["name"] == "mcptrace.connection")
    spans, done, ops = _sent(cap, **env)
    assert done.returncode == 0, done.stderr  # sampled out is not lost
    got = _traces(spans)
    for trace, n in got.items():
        assert n == whole[trace], f"trace {trace} arrived in part"
    assert {LOW, HIGH} & set(got) == kept_hosts
    if kept_own is not None:
        assert (own in got) is kept_own
    left_out = len(every) - len(spans)
    assert f"{len(spans)} spans from" in done.stderr
    assert (f"{left_out} sampled out" in done.stderr) is (left_out > 0)
    assert "dropped" not in done.stderr
    assert ops == 4
    written, wdone = _written(cap, **env)
    assert wdone.returncode == 0
    assert sorted((s["trace_id"], s["span_id"]) for s in written) == sorted(
        (s["trace_id"], s["span_id"]) for s in spans
    )


@pytest.mark.parametrize(
    "env",
    [
        {"OTEL_TRACES_SAMPLER": "sometimes"},
        {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "half"},
        {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "1.5"},
    ],
    ids=["unknown_name", "ratio_not_a_number", "ratio_out_of_range"],
)
def test_an_invalid_sampler_setting_is_one_warning_and_the_setting_is_ignored(tmp_path, env):
    cap = _capture(tmp_path)
    expected, _ = _written(cap)  # the default
    every, _ = _written(cap, OTEL_TRACES_SAMPLER="always_on")
    spans, done = _written(cap, **env)
    assert done.returncode == 0
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "OTEL_TRACES_SAMPLER" in warnings[0], done.stderr
    assert "Traceback" not in done.stderr
    if "OTEL_TRACES_SAMPLER_ARG" in env:  # a ratio sampler at 1.0: every trace
        assert len(spans) == len(every)
    else:
        assert spans == expected
    sent, sdone, _ = _sent(cap, **env)
    assert sdone.returncode == 0 and sdone.stderr.count("warning") == 1, sdone.stderr
    assert len(sent) == len(spans)


def _mrtr_under_host(flags: str):
    """A three-round MRTR tools/call whose every round carries the host span's traceparent (its
    sampled bit per `flags`), then a plain call in the connection's own trace."""
    tp = f"00-{HIGH}-00f067aa0ba902b7-{flags}"
    call = {"name": "deploy", "arguments": {}}
    rounds = []
    for i, state in enumerate((None, "r1", "r2"), 1):
        params = {**call, **({"requestState": state} if state else {}), "_meta": {**META, "traceparent": tp}}
        last = i == 3
        result = {"resultType": "complete", "content": []} if last else {"resultType": "input_required"}
        if not last:
            result["requestState"] = f"r{i}"
        rounds += [
            {"c2s": {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}},
            {"s2c": {"jsonrpc": "2.0", "id": i, "result": result}},
        ]
    plain = [
        {"c2s": {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": META}}},
        {"s2c": {"jsonrpc": "2.0", "id": 4, "result": {"tools": []}}},
    ]
    return build_records(rounds + plain)


@pytest.mark.parametrize("sampled", [True, False])
def test_the_rounds_of_an_mrtr_operation_follow_the_host_decision_with_their_operation(sampled):
    # the rounds' parent is mcptrace's operation span (a local parent), whose own parent is the host's:
    # the whole operation goes, or none of it, and the SDK path and otlp-json agree span for span
    records = _mrtr_under_host("01" if sampled else "00")
    name, sampler = sampler_from_env({})
    memory = InMemorySpanExporter()
    sink = OtelSink(
        "http://127.0.0.1:9", metrics=False, exporter=memory, sampling=TraceSampling(sampler, name)
    )
    build_spans(records, sink, source="case", identity="case", analyser=Analyser())
    assert sink.close(BOUND_S)
    sent = {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in memory.get_finished_spans()}
    out = io.BytesIO()
    writer = OtlpJsonWriter(out, TraceSampling(sampler, name))
    build_spans(records, writer, source="case", identity="case", analyser=Analyser())
    writer.close()
    written = [
        s
        for line in out.getvalue().splitlines()
        for rs in json.loads(line).get("resourceSpans", ())
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]
    assert {(s["traceId"], s["spanId"]) for s in written} == sent
    host = [s for s in memory.get_finished_spans() if f"{s.context.trace_id:032x}" == HIGH]
    if sampled:
        op = next(s for s in host if s.name.startswith("mcptrace.mrtr.operation"))
        assert sorted(s.parent.span_id for s in host if s is not op) == [op.context.span_id] * 3
        assert sink.sampled_out == writer.sampled_out == 0
    else:
        assert host == []  # neither the operation nor any of its rounds
        assert sink.sampled_out == writer.sampled_out == 4
    assert any(s.name == "tools/list" for s in memory.get_finished_spans())  # the connection's trace
    assert sink.dropped == 0 and sink.spans == writer.spans + writer.sampled_out
