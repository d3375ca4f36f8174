"""`mcptrace stdio --otlp` with two tees appending to one capture file at once (a host starting the
same server twice with a fixed `-o`): each tee's live exporter sends its own session, once, with
the span ids `mcptrace export` gives for that file; it used to send the other tee's records that
follow its header too (again, or under its own identity). Real SDK hosts, tees and receiver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.otlp_receiver import OtlpReceiver
from tests.sdk_peers import BOUND_S, REPO, server_cmd
from tests.tracer.export.test_export_live import TEE, _host


def _paused(proc: subprocess.Popen) -> None:
    """Wait for the host's "paused" line (half its calls made, its session open)."""
    for line in proc.stdout:
        if json.loads(line)["op"] == "paused":
            return
    raise AssertionError(f"the host ended before pausing: {proc.stderr.read()}")


def _exporters_of(path) -> list[int]:
    """Live exporter processes still following PATH."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if b"tracer.export.follow" in argv and str(path).encode() in argv:
            out.append(int(pid))
    return out


def _offline_ids(cap, out) -> set[tuple]:
    subprocess.run(
        [sys.executable, "-m", "tracer", "export", "-f", "otlp-json", "-o", str(out), str(cap)],
        cwd=REPO,
        check=True,
        capture_output=True,
        timeout=BOUND_S,
    )
    return {
        (s["traceId"], s["spanId"], s["name"])
        for line in out.read_text().splitlines()
        for rs in json.loads(line).get("resourceSpans", ())
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    }


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds the exporter processes in /proc")
def test_tees_appending_to_one_capture_at_once_each_export_their_own_session_once(tmp_path):
    cap = tmp_path / "shared.jsonl"
    with OtlpReceiver() as rx:
        tee = [*TEE, "-o", str(cap), "--otlp", rx.url, "--", *server_cmd()]
        first = _host("modern", tee, "--pause", stdin=subprocess.PIPE)
        _paused(first)  # its session is open...
        second = _host("modern", tee, "--pause", stdin=subprocess.PIPE)
        _paused(second)  # ...when the second tee appends its header and half its session,
        first.communicate("\n", timeout=BOUND_S)  # then the first one's second half and end,
        second.communicate("\n", timeout=BOUND_S)  # then the second one's
        assert first.returncode == second.returncode == 0
        deadline = time.monotonic() + BOUND_S
        while _exporters_of(cap):  # (each exits once its last spans reached the receiver)
            assert time.monotonic() < deadline, "the live exporters did not finish"
            time.sleep(0.1)
        live = rx.wait_for(lambda spans: True)
    ids = [(s["trace_id"], s["span_id"], s["name"]) for s in live]
    roots = [s for s in live if s["name"] == "mcptrace.connection"]
    assert len(roots) == 2 and len({r["trace_id"] for r in roots}) == 2
    assert len(ids) == len(set(ids))  # (no span sent twice)
    assert set(ids) == _offline_ids(cap, tmp_path / "spans.jsonl")
