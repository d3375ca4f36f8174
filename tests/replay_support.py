"""Helpers shared by the replay and mock tests: small recordings, the CLI as a subprocess, free ports."""

from __future__ import annotations

import os
import queue
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from tests.sdk_peers import BOUND_S, REPO, serve_http, stop
from tracer.capture import CaptureWriter, header_record
from tracer.model import Direction, Record, RecordType
from tracer.replay.recording import Recording, build

ASKING_SERVER = REPO / "fixtures" / "sdk" / "asking_server.py"
ASKING_CLIENT = REPO / "fixtures" / "sdk" / "asking_client.py"
MCPTRACE = [sys.executable, "-m", "tracer"]


def records(*messages: tuple[str, Any], conn: str = "0") -> list[Record]:
    """('c2s' | 's2c', message object or raw bytes) pairs -> message records with seqs and lines."""
    out = []
    for i, (d, msg) in enumerate(messages, start=1):
        raw = msg if isinstance(msg, bytes) else orjson.dumps(msg)
        out.append(
            Record(RecordType.MESSAGE, seq=i, t_ns=i * 1000, dir=Direction(d), raw=raw, conn=conn, line=i + 1)
        )
    return out


def recording(*messages: tuple[str, Any]) -> Recording:
    return build(records(*messages), "test", "capture")


def write_capture(path: Path, *messages: tuple[str, Any]) -> Path:
    with CaptureWriter(path, header_record("stdio", label="test")) as w:
        for rec in records(*messages):
            w.write(rec)
    return path


def req(id_: Any, method: str, params: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        out["params"] = params
    return out


def res(id_: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def note(method: str, params: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        out["params"] = params
    return out


def mcptrace(*args: str, stdin: str | None = None, timeout: float = BOUND_S) -> subprocess.CompletedProcess:
    """Run the CLI to the end (text mode)."""
    return subprocess.run(
        [*MCPTRACE, *args], cwd=REPO, input=stdin, capture_output=True, text=True, timeout=timeout
    )


@contextmanager
def mock_http(capture: Path | str, *extra: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """`mcptrace mock CAPTURE --listen 127.0.0.1:0`; yields the URL it printed (waits for that line)."""
    proc = subprocess.Popen(
        [*MCPTRACE, "mock", str(capture), "--listen", "127.0.0.1:0", *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        try:
            url = lines.get(timeout=BOUND_S).strip()
        except queue.Empty:
            raise AssertionError("mcptrace mock did not print its URL") from None
        if not url.startswith("http://"):
            proc.kill()
            raise AssertionError(f"mcptrace mock did not start: {url!r} {proc.stderr.read()}")
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.communicate(timeout=BOUND_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def stop_and_collect(proc: subprocess.Popen) -> tuple[int, str]:
    """Stop a mock started by mock_http (SIGTERM) and return its exit code and stderr."""
    proc.terminate()
    _, err = proc.communicate(timeout=BOUND_S)
    return proc.returncode, err


@contextmanager
def http_server(script: Path, *extra: str) -> Iterator[str]:
    """Run an SDK fixture server (which prints 'listening on URL') over HTTP on a free port."""
    with serve_http([sys.executable, str(script), "--http", "--port", "0", *extra], script.name) as url:
        yield url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_messages(path: Path) -> list[dict[str, Any]]:
    """The message records of a capture, as stored."""
    out = []
    for line in Path(path).read_bytes().splitlines():
        obj = orjson.loads(line)
        if obj.get("type") == "message":
            out.append(obj)
    return out


def env_without_color() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("FORCE_COLOR", None)
    return env


@contextmanager
def proxy_capture(upstream: str, out: Path) -> Iterator[str]:
    """A real mitmproxy (mitmdump + mcptrace's capture addon) as a reverse proxy in front of UPSTREAM,
    writing OUT; yields the proxied MCP URL."""
    with mitmdump(
        upstream, "-s", str(REPO / "addons" / "mcp_capture.py"), "--set", f"mcptrace_output={out}"
    ) as url:
        yield url


@contextmanager
def mitmdump(upstream: str, *options: str) -> Iterator[str]:
    """Plain mitmdump as a reverse proxy in front of UPSTREAM, with OPTIONS (`-w flows.mitm`,
    `--set hardump=x.har`...); yields the proxied MCP URL. Waits for its "listening at" line (never
    sleeps); on exit it is stopped with SIGTERM and waited for, so the files it writes are complete."""
    origin = upstream.rsplit("/mcp", 1)[0]
    exe = Path(sys.executable).with_name("mitmdump")
    proc = subprocess.Popen(
        [
            str(exe),
            "--mode",
            f"reverse:{origin}",
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            "0",
            *options,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:
            lines.put(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        seen = []
        while True:
            try:
                line = lines.get(timeout=BOUND_S)
            except queue.Empty:
                raise AssertionError(f"mitmdump did not start: {''.join(seen)}") from None
            seen.append(line)
            if "listening at " in line:
                port = line.rsplit(":", 1)[1].strip().rstrip(".")
                break
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)
        reader.join(BOUND_S)
        proc.stdout.close()
