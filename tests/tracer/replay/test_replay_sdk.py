"""`mcptrace replay` against real peers: the official MCP Python SDK server, over stdio and HTTP, both eras."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.replay_support import (
    ASKING_CLIENT,
    ASKING_SERVER,
    MCPTRACE,
    http_server,
    mcptrace,
    proxy_capture,
    read_messages,
)
from tests.sdk_peers import BOUND_S, CAPTURES, REPO, SDK_SERVER, run_client, sdk_http_server, server_cmd
from tracer.replay.recording import load

ADD_PATHS = ["$.result.content[0].text", "$.result.structuredContent.result"]


def replay(capture: Path | str, out: Path, *target: str, extra: tuple[str, ...] = ()) -> tuple[int, dict]:
    proc = mcptrace(
        "replay", str(capture), "-o", str(out), "--format", "json", "--timeout", "20", *extra, *target
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def outcomes(report: dict) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in report["requests"]:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    return counts


def assert_all_same(report: dict, capture: Path | str) -> None:
    rec = load(str(capture))
    cancelled = sum(1 for ex in rec.host_requests() if ex.cancelled)
    assert len(report["requests"]) == len(rec.host_requests())
    bad = [r for r in report["requests"] if r["outcome"] not in ("same", "cancelled")]
    assert bad == [], report
    assert outcomes(report).get("cancelled", 0) <= cancelled
    assert report["ok"] is True and report["problems"] == []


# -- the committed stdio captures ------------------------------------------------------------------


@pytest.mark.parametrize("era", ["legacy", "modern", "auto"])
def test_a_committed_sdk_capture_replays_same_against_the_same_server_over_stdio(era, tmp_path):
    capture = CAPTURES / f"sdk-stdio-{era}.jsonl"
    code, report = replay(capture, tmp_path / "new.jsonl", "--", *server_cmd())
    assert code == 0
    assert_all_same(report, capture)
    # The recorded host cancelled one slow call: the replay cancels it too, so no answer is due.
    assert outcomes(report)["cancelled"] == 1
    # The new traffic is itself a capture, and replays the same again.
    code2, again = replay(tmp_path / "new.jsonl", tmp_path / "again.jsonl", "--", *server_cmd())
    assert code2 == 0
    assert_all_same(again, tmp_path / "new.jsonl")


def test_a_changed_server_is_reported_at_exactly_the_changed_requests_and_paths(tmp_path):
    capture = CAPTURES / "sdk-stdio-legacy.jsonl"
    code, report = replay(capture, tmp_path / "new.jsonl", "--", *server_cmd("--variant", "changed"))
    assert code == 1 and report["ok"] is False
    differing = [r for r in report["requests"] if r["outcome"] == "differs"]
    assert [r["request"] for r in differing] == ["tools/call add", "tools/call add"]
    for r in differing:
        assert [d["path"] for d in r["differences"]] == ADD_PATHS
    first = differing[0]["differences"]
    assert (first[0]["recorded"], first[0]["new"]) == ("5", "6")
    assert set(outcomes(report)) == {"same", "differs", "cancelled"}


def test_ignored_paths_hide_a_difference_the_user_expects(tmp_path):
    code, report = replay(
        CAPTURES / "sdk-stdio-modern.jsonl",
        tmp_path / "new.jsonl",
        "--",
        *server_cmd("--variant", "changed"),
        extra=("--ignore", "$.result.content[*].text", "$.result.structuredContent"),
    )
    assert code == 0 and outcomes(report).get("differs") is None


def test_the_text_report_names_the_request_and_the_path(tmp_path):
    proc = mcptrace(
        "replay",
        str(CAPTURES / "sdk-stdio-modern.jsonl"),
        "-o",
        str(tmp_path / "n.jsonl"),
        "--",
        *server_cmd("--variant", "changed"),
    )
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    i = next(i for i, line in enumerate(lines) if "tools/call add" in line and "differs" in line)
    assert '$.result.content[0].text: "5" → "6"' in lines[i + 1]
    assert "$.result.structuredContent.result: 5 → 6" in lines[i + 2]
    assert "differences found" in lines[-2] and lines[-1] == f"new capture: {tmp_path / 'n.jsonl'}"


# -- over Streamable HTTP --------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_a_stdio_capture_replays_same_against_the_server_over_http(era, tmp_path):
    capture = CAPTURES / f"sdk-stdio-{era}.jsonl"
    with sdk_http_server() as url:
        code, report = replay(capture, tmp_path / "new.jsonl", "--url", url)
    assert code == 0
    assert_all_same(report, capture)
    sent = [m for m in read_messages(tmp_path / "new.jsonl") if m["dir"] == "c2s"]
    assert all(m["http"]["method"] == "POST" and m["http"]["url"] == url for m in sent)
    if era == "modern":  # modern requests carry their metadata in headers too
        call = next(m for m in sent if '"tools/call"' in m["text"])
        headers = {k.lower(): v for k, v in call["http"]["req_headers"]}
        assert headers["mcp-protocol-version"] == "2026-07-28" and headers["mcp-method"] == "tools/call"
        assert headers["mcp-name"] in ("echo", "add", "fail", "weather", "slow")


@pytest.fixture(scope="module")
def proxied_capture(tmp_path_factory) -> Path:
    """Both eras of the scripted SDK client, through a real mitmproxy in front of the SDK HTTP server."""
    out = tmp_path_factory.mktemp("proxy") / "sdk-http.jsonl"
    with sdk_http_server() as upstream, proxy_capture(upstream, out) as url:
        # One after the other, so the report's order is the script's.
        run_client("legacy", url=url)
        run_client("modern", url=url)
    return out


def test_a_capture_taken_through_mitmproxy_replays_same_over_http(proxied_capture, tmp_path):
    rec = load(str(proxied_capture))
    # one legacy session; the modern client's stateless traffic is one conversation per TCP
    # connection it opened (tracer.http.conns)
    buckets = sorted(c.bucket for c in rec.conversations)
    assert buckets.count("legacy") == 1 and set(buckets) == {"legacy", "modern"}
    with sdk_http_server() as url:
        code, report = replay(proxied_capture, tmp_path / "new.jsonl", "--url", url)
    assert_all_same(report, proxied_capture)
    assert code == 0


def test_a_capture_taken_through_mitmproxy_names_the_change_of_a_changed_server(proxied_capture, tmp_path):
    with sdk_http_server("--variant", "changed") as url:
        code, report = replay(proxied_capture, tmp_path / "new.jsonl", "--url", url)
    assert code == 1
    differing = [r for r in report["requests"] if r["outcome"] == "differs"]
    assert [r["request"] for r in differing] == ["tools/call add"] * 4  # two per session
    assert all([d["path"] for d in r["differences"]] == ADD_PATHS for r in differing)


def test_an_http_capture_replays_same_against_the_stdio_server(proxied_capture, tmp_path):
    code, report = replay(proxied_capture, tmp_path / "new.jsonl", "--", *server_cmd())
    assert_all_same(report, proxied_capture)
    assert code == 0


# -- servers that ask the host: legacy server requests, modern MRTR -----------------------------------


@pytest.fixture(scope="module")
def asking_captures(tmp_path_factory) -> dict[str, Path]:
    """Sessions of the asking SDK server (elicitation + sampling) recorded through `mcptrace stdio`."""
    d = tmp_path_factory.mktemp("asking")
    procs = {}
    for era in ("legacy", "modern"):
        cap = d / f"asking-{era}.jsonl"
        cmd = [
            sys.executable,
            str(ASKING_CLIENT),
            "--era",
            era,
            "--",
            *MCPTRACE,
            "stdio",
            "-q",
            "-o",
            str(cap),
            "--",
            sys.executable,
            str(ASKING_SERVER),
        ]
        procs[era] = (
            cap,
            subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True),
        )
    out = {}
    for era, (cap, proc) in procs.items():
        stdout, stderr = proc.communicate(timeout=BOUND_S)
        assert proc.returncode == 0, stderr
        assert "Hello, Ada!" in stdout
        out[era] = cap
    return out


def asking_cmd(*extra: str) -> list[str]:
    return [sys.executable, str(ASKING_SERVER), *extra]


def test_mrtr_retries_carry_the_request_state_the_new_server_returned(asking_captures, tmp_path):
    capture = asking_captures["modern"]
    code, report = replay(capture, tmp_path / "new.jsonl", "--", *asking_cmd())
    assert code == 0
    assert [r["request"] for r in report["requests"]] == [
        "tools/call greet",
        "tools/call greet (MRTR round 2)",
        "tools/list",
        "tools/call haiku",
        "tools/call haiku (MRTR round 2)",
    ]
    assert_all_same(report, capture)

    def states(path: Path) -> tuple[list[str], list[str]]:
        given, echoed = [], []
        for m in read_messages(path):
            obj = json.loads(m["text"])
            if m["dir"] == "s2c" and "requestState" in (obj.get("result") or {}):
                given.append(obj["result"]["requestState"])
            if m["dir"] == "c2s" and "requestState" in (obj.get("params") or {}):
                echoed.append(obj["params"]["requestState"])
        return given, echoed

    old_given, _ = states(capture)
    new_given, new_echoed = states(tmp_path / "new.jsonl")
    assert new_echoed == new_given  # each retry echoes what the new server sealed...
    assert not set(new_echoed) & set(old_given)  # ...not the recorded state, which this server cannot open


def test_mrtr_against_a_changed_server_names_the_final_round(asking_captures, tmp_path):
    code, report = replay(
        asking_captures["modern"], tmp_path / "new.jsonl", "--", *asking_cmd("--variant", "changed")
    )
    assert code == 1
    differing = [
        (r["request"], [d["path"] for d in r["differences"]])
        for r in report["requests"]
        if r["outcome"] == "differs"
    ]
    assert differing == [("tools/call greet (MRTR round 2)", ADD_PATHS)]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_legacy_server_requests_are_answered_from_the_recording_with_the_new_ids(
    asking_captures, tmp_path, transport
):
    capture = asking_captures["legacy"]
    if transport == "stdio":
        code, report = replay(capture, tmp_path / "new.jsonl", "--", *asking_cmd())
    else:
        with http_server(ASKING_SERVER) as url:
            code, report = replay(capture, tmp_path / "new.jsonl", "--url", url)
    assert code == 0
    assert_all_same(report, capture)
    assert [(s["method"], s["outcome"]) for s in report["server_requests"]] == [
        ("elicitation/create", "answered"),
        ("sampling/createMessage", "answered"),
    ]
    msgs = [json.loads(m["text"]) | {"_dir": m["dir"]} for m in read_messages(tmp_path / "new.jsonl")]
    asked = {m["id"]: m["method"] for m in msgs if m["_dir"] == "s2c" and "method" in m and "id" in m}
    answered = {m["id"]: m for m in msgs if m["_dir"] == "c2s" and "result" in m}
    assert set(asked) == set(answered)  # every request of the new server got its answer, by its own id
    elicit_id = next(i for i, meth in asked.items() if meth == "elicitation/create")
    assert answered[elicit_id]["result"] == {"action": "accept", "content": {"name": "Ada"}}


def test_replay_against_a_server_that_asks_nothing_reports_the_missing_server_requests(
    asking_captures, tmp_path
):
    code, report = replay(
        asking_captures["legacy"], tmp_path / "new.jsonl", "--", sys.executable, str(SDK_SERVER)
    )
    assert code == 1
    assert {s["outcome"] for s in report["server_requests"]} == {"not asked"}
