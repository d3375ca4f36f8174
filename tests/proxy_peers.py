"""Real processes for the HTTP door's end-to-end tests: `mcptrace proxy`, plain `mitmdump`, and
@modelcontextprotocol/server-everything over HTTP. Loopback only; every wait has a bound, no sleeps."""

from __future__ import annotations

import http.client
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.cases import initialize
from tests.everything_peer import everything_binary
from tracer.analyser import analyse_all
from tracer.capture import read_capture
from tracer.model import Record, RecordType

REPO = Path(__file__).resolve().parent.parent
MITMDUMP = Path(sys.executable).with_name("mitmdump")
BOUND_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Lines:
    """Lines of a child's stream, read by a thread, waited on with a bound."""

    def __init__(self, stream):
        self.q: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in iter(stream.readline, ""):
            self.q.put(line)
        self.q.put("")

    def wait_for(self, pattern: str, what: str) -> re.Match:
        rx = re.compile(pattern)
        while True:
            try:
                line = self.q.get(timeout=BOUND_S)
            except queue.Empty:
                raise AssertionError(f"{what}: nothing after {BOUND_S}s; saw {self.seen}") from None
            if line == "":
                raise AssertionError(f"{what}: the process ended; it said {self.seen}")
            self.seen.append(line.rstrip())
            m = rx.search(line)
            if m:
                return m

    def rest(self) -> list[str]:
        while True:
            try:
                line = self.q.get(timeout=BOUND_S)
            except queue.Empty:
                return self.seen
            if line == "":
                return self.seen
            self.seen.append(line.rstrip())


def _stop(proc: subprocess.Popen, sig=signal.SIGINT) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"{proc.args[:3]} did not stop on {sig!r}") from None


def start_proxy(upstream: str, out: Path, *extra: str) -> tuple[subprocess.Popen, _Lines, str]:
    """`mcptrace proxy --upstream URL -o OUT` on a free loopback port, once it is ready: the process,
    its stderr lines and the URL it tells the user to give the host. The caller stops it."""
    cmd = [sys.executable, "-m", "tracer", "proxy", "--upstream", upstream, "--listen", "127.0.0.1:0"]
    proc = subprocess.Popen(
        [*cmd, "-o", str(out), "--no-ui", *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    err = _Lines(proc.stderr)
    try:
        url = err.wait_for(r"give the host this URL: (\S+)", "mcptrace proxy").group(1)
    except BaseException as exc:
        try:  # (before the kill: a proxy that ended by itself says how)
            ended = proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            ended = None
        proc.kill()
        proc.wait()
        out = proc.stdout.read() if ended is not None else ""
        proc.stdout.close()
        proc.stderr.close()
        if ended is not None and isinstance(exc, AssertionError):
            raise AssertionError(f"{exc} (exit status {ended}; stdout {out[-500:]!r})") from None
        raise
    return proc, err, url


@contextmanager
def mcptrace_proxy(upstream: str, out: Path, *extra: str) -> Iterator[str]:
    """`mcptrace proxy --upstream URL` on a free loopback port; yields the URL it tells the user to
    give the host. On exit it is stopped with Ctrl-C (SIGINT), which must end it cleanly."""
    proc, err, url = start_proxy(upstream, out, *extra)
    try:
        yield url
    finally:
        rc = _stop(proc)
        lines = err.rest()
        assert rc == 0, f"mcptrace proxy exit {rc}: {lines}"
        assert any("stopped;" in line for line in lines), lines
        assert proc.stdout.read() == "", "nothing on stdout"
        proc.stdout.close()
        proc.stderr.close()


@contextmanager
def mitmdump(*args: str) -> Iterator[int]:
    """Stock mitmdump with ARGS, listening on a free loopback port; yields the port."""
    port = free_port()
    proc = subprocess.Popen(
        [
            str(MITMDUMP),
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            str(port),
            "--set",
            "flow_detail=0",
            *args,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out = _Lines(proc.stdout)
    try:
        out.wait_for(r"listening at", "mitmdump")
        yield port
    finally:
        rc = _stop(proc)
        assert rc == 0, f"mitmdump exit {rc}: {out.rest()}"
        proc.stdout.close()


@contextmanager
def everything_http(mode: str) -> Iterator[str]:
    """server-everything in `streamableHttp` or `sse` mode; yields its MCP URL (on loopback)."""
    binary = everything_binary()
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    proc = subprocess.Popen(
        [str(binary), mode], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    out = _Lines(proc.stdout)
    try:
        out.wait_for(r"(listening on port|running on port) \d+", f"server-everything {mode}")
        yield f"http://127.0.0.1:{port}/mcp" if mode == "streamableHttp" else f"http://127.0.0.1:{port}/sse"
    finally:
        _stop(proc, signal.SIGTERM)
        proc.stdout.close()


class LegacyHttpSession:
    """A hand-written 2025-11-25 client on one TCP connection to a loopback PORT: every POST to
    TARGET carries HEADERS, and once `open` has the session id, the session's headers too.

        with LegacyHttpSession(port, "/mcp", {"Authorization": "Bearer ..."}) as s:
            init_body = s.open()                       # initialize + notifications/initialized
            resp, body = s.post({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    """

    def __init__(self, port: int, target: str, headers: dict[str, str] | None = None):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND_S)
        self.target = target
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        self.headers.update(headers or {})
        self.sid: str | None = None

    def post(self, msg: dict, *, session: bool = True) -> tuple[http.client.HTTPResponse, bytes]:
        """POST MSG; `session=False`: without the session's headers (as before `open`)."""
        hs = dict(self.headers)
        if session and self.sid:
            hs.update({"Mcp-Session-Id": self.sid, "MCP-Protocol-Version": "2025-11-25"})
        self.conn.request("POST", self.target, json.dumps(msg), hs)
        resp = self.conn.getresponse()
        return resp, resp.read()

    def open(self) -> bytes:
        """The handshake; the server must mint a session id. Returns the initialize answer's body."""
        resp, body = self.post(initialize(), session=False)
        self.sid = resp.getheader("mcp-session-id")
        assert resp.status == 200 and self.sid, (resp.status, body)
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return body

    def __enter__(self) -> LegacyHttpSession:
        return self

    def __exit__(self, *exc) -> None:
        self.conn.close()


def capture_records(path: Path) -> list[Record]:
    with open(path, "rb") as fh:
        return [
            r
            for r in read_capture(fh, str(path))
            if isinstance(r, Record) and r.type is not RecordType.HEADER
        ]


def lint_findings(path: Path) -> list:
    """Every finding `mcptrace lint` reports for PATH (through the same analyser, in-process)."""
    from tracer.cli.inputs import register_optional_inputs
    from tracer.inputs import open_input

    register_optional_inputs()
    recs = [r for r in open_input(str(path)).records if isinstance(r, Record)]
    msgs, ends = analyse_all(recs)
    found = list(ends)
    for m in msgs:
        found.extend(m.findings)
        for member in m.members or ():
            found.extend(member.findings)
    return found
