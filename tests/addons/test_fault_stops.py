"""Stopping a recorder mid-session loses nothing: a real SDK client's session through `mcptrace
proxy` (SIGINT) and through `mcptrace stdio` (SIGTERM) while a streamed tools/call is in flight
leaves every message exchanged so far in the capture, the open stream closed with reason
`capture-stopped`, and no traceback on stderr. The mock, stopped with a host's stream open, ends as
cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import orjson
import pytest

from tests.proxy_peers import REPO, _Lines, _stop, capture_records, start_proxy
from tests.sdk_peers import sdk_http_server, server_cmd
from tracer.model import Direction, RecordType

FAULT_CLIENT = REPO / "tests" / "fault_client.py"
BOUND_S = 60


def _client(*target: str) -> tuple[subprocess.Popen, _Lines]:
    proc = subprocess.Popen(
        [sys.executable, str(FAULT_CLIENT), *target],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    return proc, _Lines(proc.stdout)


def _methods(records, direction: Direction) -> list[str]:
    out = []
    for r in records:
        if r.type is RecordType.MESSAGE and r.dir is direction:
            obj = orjson.loads(r.raw)
            out.append(obj.get("method") or ("result" if "result" in obj else "error"))
    return out


def _assert_session_so_far(records) -> None:
    sent = _methods(records, Direction.C2S)
    got = _methods(records, Direction.S2C)
    assert sent[:2] == ["initialize", "notifications/initialized"] and sent.count("tools/call") == 2, sent
    assert got.count("result") >= 2 and "notifications/progress" in got, got  # initialize, echo; progress


def _wait_for_record(path, what: str, match) -> None:
    """Until the capture holds a record `match` accepts (bounded: the recorder writes it as it goes)."""
    deadline = time.monotonic() + BOUND_S
    while not any(match(r) for r in capture_records(path)):
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} in {path} after {BOUND_S} s")
        time.sleep(0.05)


def _is_slow_call(r) -> bool:
    return r.type is RecordType.MESSAGE and r.dir is Direction.C2S and b'"slow"' in r.raw


@pytest.mark.parametrize("answer", ["sse", "json"])
def test_sigint_to_the_proxy_mid_call_keeps_every_message_and_closes_the_call_as_capture_stopped(
    tmp_path, answer
):
    cap = tmp_path / "proxy.jsonl"
    extra = ("--json-response",) if answer == "json" else ()
    with sdk_http_server("--slow-step", "60", *extra) as upstream:
        proxy, err, url = start_proxy(upstream, cap)
        client, out = _client("--url", url)
        try:
            if answer == "sse":
                out.wait_for("in flight", "the SDK client")  # the answer's stream is open, progress in it
            else:
                out.wait_for("calling slow", "the SDK client")
                _wait_for_record(cap, "slow tools/call", _is_slow_call)  # on its way to the server
            assert _stop(proxy, signal.SIGINT) == 0
        finally:
            client.kill()
            client.wait()
            client.stdout.close()
        lines = err.rest()
        proxy.stdout.close()
        proxy.stderr.close()
    text = "\n".join(lines)
    assert "Traceback" not in text and "Error" not in text, text
    assert any("stopped;" in line for line in lines), lines
    records = capture_records(cap)
    sent = _methods(records, Direction.C2S)
    assert sent[:2] == ["initialize", "notifications/initialized"] and sent.count("tools/call") == 2, sent
    assert _methods(records, Direction.S2C).count("result") >= 2  # initialize's and echo's answers
    [slow] = [r for r in records if _is_slow_call(r)]
    flow = slow.http["flow"]
    if answer == "sse":
        assert "notifications/progress" in _methods(records, Direction.S2C)
        [closed] = [
            r.data
            for r in records
            if r.type is RecordType.EVENT
            and r.http
            and r.http.get("flow") == flow
            and r.data.get("event") == "stream-closed"
        ]
        assert closed["reason"] == "capture-stopped" and closed["messages"] >= 1, closed
    else:
        [failed] = [r.http for r in records if r.type is RecordType.HTTP and r.http.get("flow") == flow]
        assert failed["error"] == "capture-stopped", failed


def test_sigterm_to_the_tee_mid_session_keeps_every_message_and_ends_the_capture_with_the_exit(tmp_path):
    cap, pidfile, errfile = tmp_path / "tee.jsonl", tmp_path / "tee.pid", tmp_path / "tee.err"
    # the host (the SDK client) spawns the tee; `exec` keeps the shell's pid, so the test knows the tee's
    tee = (
        f'echo $$ > {pidfile}; exec "{sys.executable}" -m tracer stdio -o {cap} -- '
        + " ".join(f'"{a}"' for a in server_cmd("--slow-step", "60"))
        + f" 2> {errfile}"
    )
    client, out = _client("--", "sh", "-c", tee)
    try:
        out.wait_for("in flight", "the SDK client")
        tee_pid = int(pidfile.read_text())
        os.kill(tee_pid, signal.SIGTERM)
        client.wait(timeout=BOUND_S)  # the server got the SIGTERM, the tee ended, the client saw EOF
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        client.stdout.close()
    err = errfile.read_text()
    assert "Traceback" not in err and "Error" not in err, err
    records = capture_records(cap)
    _assert_session_so_far(records)
    events = [r.data for r in records if r.type is RecordType.EVENT]
    assert {"event": "signal", "signal": "SIGTERM", "forwarded": True} in events
    names = [e["event"] for e in events]
    assert "exit" in names, events
    # (the host, seeing the server gone, may close its end, or write once more, before the tee has
    # closed the capture: those notes of its input's end come after the exit, in the order they
    # happened; nothing of the server's does)
    after = names[names.index("exit") + 1 :]
    assert set(after) <= {"stdin-eof", "server-stdin-closed"}, events


def test_sigint_to_the_http_mock_with_the_hosts_stream_open_ends_it_cleanly():
    import http.client
    from urllib.parse import urlsplit

    capture = REPO / "fixtures" / "captures" / "sdk-stdio-legacy.jsonl"
    mock = subprocess.Popen(
        [sys.executable, "-m", "tracer", "mock", str(capture), "--listen", "127.0.0.1:0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    err = _Lines(mock.stderr)
    try:
        u = urlsplit(_Lines(mock.stdout).wait_for(r"^http://\S+", "mcptrace mock").group(0))
        post = http.client.HTTPConnection(u.hostname, u.port, timeout=BOUND_S)
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "h", "version": "1"},
            },
        }
        post.request(
            "POST",
            u.path,
            body=orjson.dumps(init),
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"},
        )
        answer = post.getresponse()
        sid = answer.getheader("mcp-session-id")
        answer.read()
        post.close()
        stream = http.client.HTTPConnection(u.hostname, u.port, timeout=BOUND_S)
        stream.request("GET", u.path, headers={"Accept": "text/event-stream", "Mcp-Session-Id": sid or ""})
        assert stream.getresponse().status == 200  # the host's stream is open, waiting for events
        assert _stop(mock, signal.SIGINT) == 0
        stream.close()
    finally:
        if mock.poll() is None:
            mock.kill()
            mock.wait()
    text = "\n".join(err.rest())
    assert "Traceback" not in text and "Error" not in text, text
    mock.stdout.close()
    mock.stderr.close()


def test_quitting_the_live_viewer_mid_call_closes_the_call_into_the_capture_without_an_addon_error(
    tmp_path, caplog
):
    # `q` in the viewer ends `run_proxy_with_viewer`, which stops the proxy thread like this
    from addons.proxy import ProxyConfig, ProxyRunner
    from tracer.cli.view import start_proxy_thread

    cap = tmp_path / "live.jsonl"
    with sdk_http_server("--slow-step", "60", "--json-response") as upstream:
        runner = ProxyRunner(ProxyConfig(upstream=upstream, listen_port=0, output=str(cap)))
        info = start_proxy_thread(runner)
        client, out = _client("--url", info.client_url)
        try:
            out.wait_for("calling slow", "the SDK client")
            _wait_for_record(cap, "slow tools/call", _is_slow_call)
            with caplog.at_level("WARNING"):
                runner.stop()
                info.thread.join(timeout=BOUND_S)
        finally:
            client.kill()
            client.wait()
            client.stdout.close()
    assert not info.thread.is_alive()
    assert not [r for r in caplog.records if r.levelname in ("WARNING", "ERROR")], caplog.text
    records = capture_records(cap)
    [slow] = [r for r in records if _is_slow_call(r)]
    [failed] = [
        r.http for r in records if r.type is RecordType.HTTP and r.http.get("flow") == slow.http["flow"]
    ]
    assert failed["error"] == "capture-stopped"
