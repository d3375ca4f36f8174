"""`mcptrace proxy` as a user runs it: usage errors are one line and exit 2, listeners stay on
loopback, the capture goes to the captures directory by default, and `--mode regular` keeps the
host's own URL (the host is pointed at the proxy instead)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from tests.proxy_peers import REPO, _Lines, _stop, capture_records
from tests.sdk_peers import SDK_CLIENT, sdk_http_server
from tracer.model import RecordType


def _proxy(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracer", "proxy", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "--upstream URL"),
        (["--upstream", "ftp://example.com/mcp"], "not an http:// or https:// URL"),
        (["--upstream", "http://127.0.0.1:1/mcp", "--listen", "localhost:notaport"], "HOST:PORT"),
        (["--mode", "nonsense"], "invalid mitmproxy mode"),
        (["--upstream", "http://127.0.0.1:1/mcp", "--filter", "~bogus("], "mcptrace_filter"),
    ],
)
def test_a_usage_mistake_is_one_line_on_stderr_and_exit_2(args, says):
    p = _proxy(*args, "--no-ui")
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and says in p.stderr and p.stderr.startswith("mcptrace: error:")
    assert p.stdout == ""


def test_a_port_already_taken_is_one_line_and_exit_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        p = _proxy("--upstream", "http://127.0.0.1:1/mcp", "--listen", f"127.0.0.1:{port}", "--no-ui")
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "cannot start the proxy" in p.stderr


def _start(args: list[str], env=None):
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracer", "proxy", "--listen", "127.0.0.1:0", "--no-ui", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    return proc, _Lines(proc.stderr)


def test_without_output_the_capture_goes_to_the_captures_directory_and_listens_on_loopback(tmp_path):
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    proc, err = _start(["--upstream", "http://127.0.0.1:1/mcp"], env=env)
    url = err.wait_for(r"give the host this URL: (\S+)", "proxy").group(1)
    path = err.wait_for(r"capture: (\S+)", "proxy").group(1)
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    assert path.startswith(str(tmp_path / "state" / "mcptrace" / "captures")) and "proxy-127.0.0.1" in path
    assert _stop(proc) == 0
    proc.stdout.close()
    proc.stderr.close()
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_regular_mode_keeps_the_hosts_own_url(tmp_path):
    cap = tmp_path / "regular.jsonl"
    with sdk_http_server() as url:
        proc, err = _start(["--mode", "regular", "-o", str(cap)])
        try:
            m = err.wait_for(r"HTTPS_PROXY=(http://127\.0\.0\.1:\d+)", "proxy")
            env = {**os.environ, "HTTP_PROXY": m.group(1), "NO_PROXY": "", "no_proxy": ""}
            client = subprocess.run(
                [sys.executable, str(SDK_CLIENT), "--era", "modern", "--url", url],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=120,
                env=env,
            )
            assert client.returncode == 0, client.stderr
        finally:
            assert _stop(proc) == 0
            proc.stdout.close()
            proc.stderr.close()
    recs = [r for r in capture_records(cap) if r.type is RecordType.MESSAGE]
    assert recs and {r.http["url"] for r in recs} == {url}, "the host kept the server's own URL"
