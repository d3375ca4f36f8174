"""The scripted client of `mcptrace demo`: drives the demo server through the real stdio tee
(`mcptrace stdio`), once in each era, and joins the two captures into one file.

Session 1 (legacy): probes `server/discover` (the server runs --legacy-only and refuses), falls
back to `initialize` 2025-11-25 — the spec's dual-era fallback — then lists and calls tools.
Session 2 (modern 2026-07-28): `server/discover`, tools, a multi round-trip `book_flight`, and
one request where this "host" forgets `clientInfo` (a deliberate MCP312).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from queue import Empty, Queue
from typing import Any

import orjson

MODERN = "2026-07-28"
CLIENT_INFO = {"name": "mcptrace-demo-client", "version": "1.0.0"}
REPLY_TIMEOUT = 20.0


def modern_meta(*, with_info: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    }
    if with_info:
        meta["io.modelcontextprotocol/clientInfo"] = CLIENT_INFO
    return meta


class DemoError(RuntimeError):
    pass


class Peer:
    """The client's end of a tee'd server: send JSON-RPC lines, wait for the answer to an id."""

    def __init__(self, argv: list[str]):
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        self.inbox: Queue = Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.inbox.put(orjson.loads(line))
            except orjson.JSONDecodeError:
                continue
        self.inbox.put(None)

    def send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps(obj) + b"\n")
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict | None = None) -> None:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def request(self, method: str, params: dict | None = None, *, wait: bool = True) -> dict | None:
        self.next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait_for(self.next_id) if wait else None

    def wait_for(self, msg_id: Any) -> dict | None:
        """The response with this id (any JSON type of it: the demo server answers one with a
        string id on purpose); None when the server answers something else and goes quiet."""
        while True:
            try:
                msg = self.inbox.get(timeout=REPLY_TIMEOUT)
            except Empty:
                raise DemoError(f"the demo server did not answer request {msg_id}") from None
            if msg is None:
                raise DemoError("the demo server exited early")
            if isinstance(msg, dict) and "method" not in msg and str(msg.get("id")) == str(msg_id):
                return msg

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=REPLY_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def tee_command(capture: str, label: str, server_args: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tracer",
        "stdio",
        "-q",
        "--overwrite",
        "-o",
        capture,
        "--name",
        label,
        "--",
        sys.executable,
        "-m",
        "tracer.demo.server",
        *server_args,
    ]


def legacy_session(peer: Peer) -> None:
    probe = peer.request("server/discover", {"_meta": modern_meta()})
    if probe is None or "error" not in probe:
        raise DemoError("the legacy-only demo server accepted server/discover")
    peer.request(
        "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO}
    )
    peer.notify("notifications/initialized")
    peer.request("tools/list")
    peer.request("tools/call", {"name": "echo", "arguments": {"text": "hello, legacy world"}})
    peer.request(
        "tools/call", {"name": "count_slowly", "arguments": {"n": 3}, "_meta": {"progressToken": "count-1"}}
    )
    peer.request(
        "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}
    )  # the server answers with the id as a string
    peer.request("ping")
    peer.request("tools/call", {"name": "no_such_tool", "arguments": {}})


def modern_session(peer: Peer) -> None:
    peer.request("server/discover", {"_meta": modern_meta()})
    peer.request("tools/list", {"_meta": modern_meta()})
    peer.request(
        "tools/call", {"_meta": modern_meta(), "name": "echo", "arguments": {"text": "hello, modern world"}}
    )
    first = peer.request(
        "tools/call", {"_meta": modern_meta(), "name": "book_flight", "arguments": {"to": "Lisbon"}}
    )
    result = (first or {}).get("result") or {}
    if result.get("resultType") == "input_required":
        peer.request(
            "tools/call",
            {
                "_meta": modern_meta(),
                "name": "book_flight",
                "arguments": {"to": "Lisbon"},
                "inputResponses": {"seat": {"action": "accept", "content": {"seat": "12A"}}},
                "requestState": result.get("requestState"),
            },
        )
    peer.request("tools/call", {"_meta": modern_meta(), "name": "forecast", "arguments": {"city": "Lisbon"}})
    # deliberate: this host forgets clientInfo (MCP312)
    peer.request(
        "tools/call", {"_meta": modern_meta(with_info=False), "name": "add", "arguments": {"a": 40, "b": 2}}
    )


SESSIONS: list[tuple[str, list[str], Callable[[Peer], None]]] = [
    ("demo-legacy", ["--legacy-only"], legacy_session),
    ("demo-modern", [], modern_session),
]


def record_demo(
    capture: str, on_step: Callable[[str], None] | None = None, *, overwrite: bool = False
) -> str:
    """Run both sessions through the tee and write one capture holding both (appended to an
    existing capture unless `overwrite`). Returns its path."""
    parts = []
    for label, server_args, script in SESSIONS:
        part = f"{capture}.{label}.part"
        if on_step:
            on_step(f"recording the {label.split('-')[1]} session through the stdio tee")
        peer = Peer(tee_command(part, label, server_args))
        try:
            script(peer)
        finally:
            code = peer.close()
        if code != 0:
            raise DemoError(f"the tee exited with code {code} for the {label} session")
        parts.append(part)
    join_captures(parts, capture, overwrite=overwrite)
    for part in parts:
        os.unlink(part)
    return capture


def _lines(path: str) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                yield line.rstrip(b"\n")


def join_captures(parts: list[str], out: str, *, overwrite: bool = False) -> None:
    """Concatenate captures (each keeps its header, so each session keeps its command line),
    renumbering seq so it keeps rising through the file. Opened as every capture is (0600, no
    symlink followed, appended to an existing capture unless `overwrite`), written in one go."""
    from tracer.output import open_output

    seq = 0
    lines: list[bytes] = []
    for part in parts:
        for line in _lines(part):
            obj = orjson.loads(line)
            if obj.get("type") != "header":
                seq += 1
                obj["seq"] = seq
            lines.append(orjson.dumps(obj) + b"\n")
    fd, _created, torn_tail = open_output(out, overwrite=overwrite)
    with os.fdopen(fd, "wb") as fh:
        fh.write((b"\n" if torn_tail else b"") + b"".join(lines))
