"""Start the real SDK fixture peers (fixtures/sdk/server.py, fixtures/sdk/client.py) from tests.

    with sdk_http_server() as url:                      # real Streamable HTTP server on a free port
        ops = run_client("modern", url=url)             # the scripted session, one dict per operation
    ops = run_client("legacy", command=server_cmd())    # over stdio: the client spawns the server
    ops = run_client("auto", command=["mcptrace", "stdio", "-o", cap, "--", *server_cmd()])

Waits are on conditions with a bound (the server prints its URL once its socket listens); never sleeps.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SDK_SERVER = REPO / "fixtures" / "sdk" / "server.py"
SDK_CLIENT = REPO / "fixtures" / "sdk" / "client.py"
CAPTURES = REPO / "fixtures" / "captures"
BOUND_S = 60  # upper bound for any one wait; a healthy run takes a few seconds


def server_cmd(*extra: str) -> list[str]:
    """The stdio command line of the SDK fixture server."""
    return [sys.executable, str(SDK_SERVER), *extra]


class ClientFailed(AssertionError):
    pass


def _client_argv(era: str, url: str | None, command: list[str] | None) -> list[str]:
    target = ["--url", url] if url else ["--", *(command or server_cmd())]
    return [sys.executable, str(SDK_CLIENT), "--era", era, *target]


def _ops(proc: subprocess.Popen, out: str, err: str) -> list[dict[str, Any]]:
    if proc.returncode != 0:
        raise ClientFailed(f"client exit {proc.returncode}; stderr:\n{err}\nstdout:\n{out}")
    return [json.loads(line) for line in out.splitlines()]


def run_client(era: str, *, url: str | None = None, command: list[str] | None = None) -> list[dict[str, Any]]:
    """Run the scripted SDK client to the end; returns its operations (one dict per stdout line)."""
    return run_clients([(era, url, command)])[0]


def run_clients(runs: list[tuple[str, str | None, list[str] | None]]) -> list[list[dict[str, Any]]]:
    """Run several scripted sessions at once, each (era, url, command); their operations, in order.

    Concurrent because most of a run is Python start-up and the SDK's import: the sessions do not
    share anything (stdio: one server each; HTTP: the server keeps them apart).
    """
    procs = [
        subprocess.Popen(
            _client_argv(era, url, command),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for era, url, command in runs
    ]
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=BOUND_S)
            results.append(_ops(proc, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return results


def stop(proc: subprocess.Popen) -> None:
    """SIGTERM, a bounded wait, then SIGKILL: a test never hangs on a server that will not stop."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def serve_http(argv: list[str], name: str) -> Iterator[str]:
    """Run a fixture server that prints 'listening on URL' once it accepts connections; yields the
    URL and stops the server afterwards."""
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        try:
            first = lines.get(timeout=BOUND_S)
        except queue.Empty:
            raise AssertionError(f"{name} did not report its URL") from None
        if not first.startswith("listening on "):
            proc.kill()
            raise AssertionError(f"{name} did not start: {first!r} {proc.stderr.read()}")
        yield first.removeprefix("listening on ").strip()
    finally:
        stop(proc)
        proc.stdout.close()
        proc.stderr.close()


@contextmanager
def sdk_http_server(*extra: str) -> Iterator[str]:
    """Run the SDK fixture server over Streamable HTTP on a free loopback port; yields its URL."""
    with serve_http([*server_cmd(*extra), "--http", "--port", "0"], "the SDK HTTP server") as url:
        yield url


def ops_by_name(ops: list[dict[str, Any]], op: str) -> list[dict[str, Any]]:
    return [o for o in ops if o["op"] == op]


def tool_call(ops: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """Results of every `tools/call` of tool NAME, in order."""
    return [o["result"] for o in ops if o["op"] in ("call_tool", "call_tool_progress") and o["name"] == name]


def text_of(result: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in result.get("content", []))
