"""Replay and mock read every input lint reads: flows saved by plain mitmproxy (`.mitm`) and HAR files.

The session is the asking SDK client against the asking SDK server in the modern era (MRTR rounds),
through a plain mitmdump (no mcptrace addon) that saves the flows and a HAR file.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.replay_support import ASKING_CLIENT, ASKING_SERVER, MCPTRACE, http_server, mcptrace, mitmdump
from tests.sdk_peers import BOUND_S, REPO


def run_asking(*target: str) -> list[dict]:
    proc = subprocess.run(
        [sys.executable, str(ASKING_CLIENT), "--era", "modern", "--timeout", "20", *target],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=BOUND_S,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[dict[str, Path], list[dict]]:
    d = tmp_path_factory.mktemp("flows")
    files = {"mitm": d / "session.mitm", "har": d / "session.har"}
    with (
        http_server(ASKING_SERVER) as upstream,
        mitmdump(upstream, "-w", str(files["mitm"]), "--set", f"hardump={files['har']}") as url,
    ):
        ops = run_asking("--url", url)
    assert all(p.stat().st_size > 0 for p in files.values())
    return files, ops


@pytest.mark.parametrize("kind", ["mitm", "har"])
def test_saved_flows_replay_same_against_the_server_over_http_and_stdio(saved, kind, tmp_path):
    files, _ = saved
    with http_server(ASKING_SERVER) as url:
        over_http = mcptrace(
            "replay", str(files[kind]), "-o", str(tmp_path / "h.jsonl"), "--format", "json", "--url", url
        )
    over_stdio = mcptrace(
        "replay",
        str(files[kind]),
        "-o",
        str(tmp_path / "s.jsonl"),
        "--format",
        "json",
        "--",
        sys.executable,
        str(ASKING_SERVER),
    )
    for proc in (over_http, over_stdio):
        report = json.loads(proc.stdout)
        assert [(r["request"], r["outcome"]) for r in report["requests"]] == [
            ("tools/call greet", "same"),
            ("tools/call greet (MRTR round 2)", "same"),
            ("tools/list", "same"),
            ("tools/call haiku", "same"),
            ("tools/call haiku (MRTR round 2)", "same"),
        ]
        assert proc.returncode == 0


@pytest.mark.parametrize("kind", ["mitm", "har"])
def test_saved_flows_serve_as_a_mock_giving_the_host_the_same_results(saved, kind):
    files, ops = saved
    assert run_asking("--", *MCPTRACE, "mock", "-q", str(files[kind])) == ops
