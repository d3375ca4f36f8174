"""`mcptrace export` on the command line: OTLP/HTTP to a backend (up or down), usage and input errors,
and untrusted input that stays bounded."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from tests.cases import build_records
from tests.otlp_receiver import OtlpReceiver
from tests.sdk_peers import CAPTURES, REPO
from tests.tracer.export.test_export_otlp_json import META, attrs, spans_of

AUTO = CAPTURES / "sdk-stdio-auto.jsonl"


def mcptrace(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracer", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_export_otlp_sends_the_same_spans_otlp_json_writes():
    written = mcptrace("export", "-f", "otlp-json", str(AUTO))
    ids = {
        (s["traceId"], s["spanId"])
        for line in written.stdout.splitlines()
        for rs in json.loads(line).get("resourceSpans", ())
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    }
    with OtlpReceiver() as rx:
        done = mcptrace("export", "-f", "otlp", "-o", rx.url, str(AUTO))
        got = rx.wait_for(lambda spans: len(spans) >= len(ids))
    assert done.returncode == 0, done.stderr
    assert f"{len(ids)} spans" in done.stderr and done.stdout == ""
    assert {(s["trace_id"], s["span_id"]) for s in got} == ids


def test_export_otlp_to_a_backend_that_is_down_exits_1_and_counts_the_drops():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    done = mcptrace("export", "-f", "otlp", "-o", f"http://127.0.0.1:{port}", "--timeout", "3", str(AUTO))
    assert done.returncode == 1
    assert "dropped" in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1


def test_usage_and_input_errors_are_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "x.bin"
    bad.write_bytes(b"\x00\x01 not a capture")
    for args in (
        ["export", str(AUTO)],
        ["export", "-f", "otlp-json", str(bad)],
        ["export", "-f", "otlp-json", str(tmp_path / "missing.jsonl")],
    ):
        done = mcptrace(*args)
        assert done.returncode == 2, args
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr


def test_hostile_names_and_a_progress_flood_stay_bounded():
    long_name = "t" * 100_000
    entries = [
        {
            "c2s": {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": long_name, "arguments": {}, "_meta": {**META, "progressToken": "p"}},
            }
        }
    ]
    entries += [
        {
            "s2c": {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": "p", "progress": i},
            }
        }
        for i in range(3000)
    ]
    entries.append({"s2c": {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "content": []}}})
    call = spans_of(build_records(entries))[0]
    assert len(call["name"]) < 2000 and len(attrs(call)["gen_ai.tool.name"]) < 2000
    notes = [e for e in call["events"] if e["name"] == "mcptrace.notification"]
    assert len(call["events"]) <= 1000 + 1  # (a finding still gets in past the bound)
    assert int(attrs(call)["mcptrace.events.dropped"]) == 3000 - len(notes)


def test_ndjson_and_host_logs_export_like_captures(tmp_path):
    init = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}'
    result = (
        '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},'
        '"serverInfo":{"name":"fs","version":"1.0"}}}'
    )
    nd = tmp_path / "traffic.ndjson"
    nd.write_text(f"{init}\n{result}\n")
    log = tmp_path / "mcp-server-fs.log"
    log.write_text(
        f"2025-06-13T14:44:29.945Z [info] [fs] Message from client: {init} {{ metadata: undefined }}\n"
        f"2025-06-13T14:44:30.001Z [fs] [info] Message from server: {result}\n"
    )
    for path in (nd, log):
        done = mcptrace("export", "-f", "otlp-json", str(path))
        assert done.returncode == 0, done.stderr
        spans = [
            s
            for line in done.stdout.splitlines()
            for rs in json.loads(line).get("resourceSpans", ())
            for ss in rs["scopeSpans"]
            for s in ss["spans"]
        ]
        init_span = next(s for s in spans if s["name"] == "initialize")
        assert attrs(init_span)["mcptrace.end_reason"] == "response"
        assert attrs(init_span)["mcptrace.capture.file"] == str(path)


def test_export_never_writes_onto_its_input_and_writes_private_files(tmp_path):
    import shutil

    cap = tmp_path / "cap.jsonl"
    shutil.copy(AUTO, cap)
    before = cap.read_bytes()
    done = mcptrace("export", "-f", "otlp-json", "-o", str(cap), str(cap))
    assert done.returncode == 2 and "one of the inputs" in done.stderr
    assert cap.read_bytes() == before
    out = tmp_path / "spans.jsonl"
    assert mcptrace("export", "-f", "otlp-json", "-o", str(out), str(cap)).returncode == 0
    assert out.stat().st_mode & 0o077 == 0


HOSTILE_NDJSON = (
    "\n".join(
        [
            '{"jsonrpc":"2.0","id":18446744073709551617,"method":"tools/call","params":{"name":"\\ud800",'
            '"arguments":{"x":"\\udc00","n":18446744073709551617}}}',
            '{"jsonrpc":"2.0","id":18446744073709551617,"result":{"content":[{"type":"text","text":"\\ud800"}],'
            '"isError":true}}',
            '{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',
        ]
    )
    + "\n"
)


def test_big_ids_and_lone_surrogates_export_to_otlp_json_and_to_a_backend(tmp_path):
    """Legal JSON no encoder takes as is (a 65-bit id, lone surrogates) still becomes spans."""
    src = tmp_path / "hostile.ndjson"
    src.write_text(HOSTILE_NDJSON, encoding="utf-8")
    written = mcptrace("export", "-f", "otlp-json", "--include-bodies", str(src))
    assert written.returncode == 0, written.stderr
    spans = [
        s
        for line in written.stdout.splitlines()
        for rs in json.loads(line).get("resourceSpans", ())
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    ]
    call = next(s for s in spans if attrs(s).get("mcp.method.name") == "tools/call")
    assert attrs(call)["jsonrpc.request.id"] == "18446744073709551617"
    assert attrs(call)["gen_ai.tool.name"] == "\\ud800"
    with OtlpReceiver() as rx:
        done = mcptrace("export", "-f", "otlp", "--include-bodies", "-o", rx.url, str(src))
        got = rx.wait_for(lambda s: len(s) >= len(spans))
    assert done.returncode == 0, done.stderr
    assert len(got) == len(spans)
