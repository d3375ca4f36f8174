"""`mcptrace export --format har`: HTTP captures as HAR 1.2 that mcptrace's own HAR reader reads back
to the same findings, SSE events kept (the whole stream as the body, and each event with its time)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.proxy_peers import mcptrace_proxy
from tests.sdk_peers import CAPTURES, REPO, run_clients, sdk_http_server, serve_http


def mcptrace(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracer", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def findings(path: Path) -> Counter:
    done = mcptrace("lint", "-f", "json", "--fail-on", "never", str(path))
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    return Counter((f["rule"], f["severity"], f["message"]) for f in doc["findings"])


@pytest.fixture(scope="module")
def proxied(tmp_path_factory) -> Path:
    """A real capture through `mcptrace proxy`: the SDK's modern and legacy clients at once."""
    cap = tmp_path_factory.mktemp("har") / "proxy.jsonl"
    with sdk_http_server() as upstream, mcptrace_proxy(upstream, cap) as url:
        run_clients([("modern", url, None), ("legacy", url, None)])
    return cap


def test_har_export_then_lint_gives_the_same_findings_as_the_capture(proxied, tmp_path):
    har = tmp_path / "session.har"
    done = mcptrace("export", "-f", "har", "-o", str(har), str(proxied))
    assert done.returncode == 0, done.stderr
    expected = findings(proxied)
    assert expected, "the session has findings to compare (MCP905)"
    assert findings(har) == expected


def test_a_server_request_on_a_stream_keeps_its_place_before_its_answer_in_the_har(tmp_path):
    """The asking server's legacy `elicitation/create` and `sampling/createMessage` go out on the
    `tools/call`'s SSE stream, and the client POSTs each answer before that stream ends. Read at
    the stream's end, each question came after its answer when the stream outlived the answer by
    50 ms or more (20 concurrent clients: false MCP203, an answer to nothing, and MCP211, a
    question never answered); each event reads at its own time (`_eventSourceMessages`). The same
    order every run: tests/tracer/inputs/test_har_import.py."""
    cap, har = tmp_path / "asking.jsonl", tmp_path / "asking.har"
    server = [sys.executable, str(REPO / "fixtures" / "sdk" / "asking_server.py"), "--http", "--port", "0"]
    with serve_http(server, "the asking server") as upstream, mcptrace_proxy(upstream, cap) as url:
        client = [sys.executable, str(REPO / "fixtures" / "sdk" / "asking_client.py"), "--era", "legacy"]
        done = subprocess.run([*client, "--url", url], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    assert mcptrace("export", "-f", "har", "-o", str(har), str(cap)).returncode == 0
    asked = [e for e in json.loads(har.read_text())["log"]["entries"] if "createMessage" in str(e)]
    assert asked, "the sampling request and its answer are in the HAR"
    assert findings(har) == findings(cap)


def test_har_export_is_har_1_2_with_sse_events_kept_and_no_credentials(proxied, tmp_path):
    har = tmp_path / "session.har"
    assert mcptrace("export", "-f", "har", "-o", str(har), str(proxied)).returncode == 0
    doc = json.loads(har.read_text())
    assert doc["log"]["version"] == "1.2" and doc["log"]["creator"]["name"] == "mcptrace"
    entries = doc["log"]["entries"]
    assert all(e["request"]["method"] in ("POST", "GET", "DELETE") for e in entries)
    streams = [e for e in entries if e["response"]["content"]["mimeType"].startswith("text/event-stream")]
    assert streams, "the SDK answers some requests with an SSE stream"
    assert any(e["_eventSourceMessages"] for e in streams)  # (a GET stream may close without an event)
    for e in streams:
        messages = e["_eventSourceMessages"]
        assert all({"time", "eventName", "eventId", "data"} <= m.keys() for m in messages)
        assert all(m["data"] in e["response"]["content"]["text"] for m in messages if m["data"])
    started = [e["startedDateTime"] for e in entries]
    assert started == sorted(started)
    headers = [h["name"].lower() for e in entries for h in e["request"]["headers"]]
    assert "authorization" not in headers or all(
        h["value"] == "<redacted>"
        for e in entries
        for h in e["request"]["headers"]
        if h["name"].lower() == "authorization"
    )


def test_a_har_exported_from_a_har_reads_back_to_the_same_findings(proxied, tmp_path):
    first, second = tmp_path / "a.har", tmp_path / "b.har"
    assert mcptrace("export", "-f", "har", "-o", str(first), str(proxied)).returncode == 0
    assert mcptrace("export", "-f", "har", "-o", str(second), str(first)).returncode == 0
    assert findings(second) == findings(first)


def test_har_export_of_a_stdio_capture_says_there_is_no_http_traffic(tmp_path):
    done = mcptrace(
        "export", "-f", "har", "-o", str(tmp_path / "x.har"), str(CAPTURES / "sdk-stdio-legacy.jsonl")
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no HTTP exchanges" in done.stderr
    assert not (tmp_path / "x.har").exists()
