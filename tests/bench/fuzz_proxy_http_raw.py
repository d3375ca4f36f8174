"""Hostile HTTP at the byte level through `mcptrace proxy` (its lean master with hooks run inline,
addons/inline_hooks.py) in front of a real upstream (`mcptrace mock --listen` of a real session):
fuzz_mock_http_raw.py's cases (heads not UTF-8, bad lengths, broken chunking, 2 MB header lines,
a TLS hello...), each on a connection of its own, then one ordinary exchange on the same proxy.

    python tests/bench/fuzz_proxy_http_raw.py [CAPTURE]   # default fixtures/captures/sdk-stdio-legacy.jsonl

Prints one line per case (the status line the client got) and flags a Traceback or "internal error"
in the proxy's log, a proxy that stops serving, and a lost record: every exchange the upstream
answered (a status line from the mock, not the proxy's own 4xx/502) must be in the capture.
Target: 0 flagged.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import socket  # noqa: E402

from tests.bench.fuzz_mock_http_raw import BOUND_S, CASES, INIT, LEN, A, J, _post  # noqa: E402

IDLE_S = 5.0  # a response that sends nothing more for this long is over (an SSE stream left open)


def _complete(data: bytes) -> int:
    """How many whole responses with a Content-Length DATA holds (then a close, or a stream)."""
    n = i = 0
    while (h := data.find(b"\r\n\r\n", i)) >= 0:
        m = re.search(rb"(?im)^content-length:\s*(\d+)", data[i:h])
        if m is None or len(data) < h + 4 + int(m.group(1)):
            return n
        n, i = n + 1, h + 4 + int(m.group(1))
    return n


def _send(port: int, raw: bytes) -> bytes:
    """RAW on a connection of its own, kept open for the answers (a client's half-close makes
    mitmproxy drop the flow), read until each request in it is answered (Content-Length), the
    connection closes, or IDLE_S of silence."""
    want = max(1, raw.count(b" HTTP/1.1\r\nHost:"))
    with socket.create_connection(("127.0.0.1", port), timeout=BOUND_S) as s:
        try:
            s.sendall(raw)
        except OSError:
            pass  # the proxy refused the head and closed before the rest was sent
        s.settimeout(IDLE_S)
        out = b""
        try:
            while d := s.recv(65536):
                out += d
                if _complete(out) >= want:
                    break
        except OSError:
            pass
        return out


def _start(
    cmd: list[str], pattern: bytes, on_stderr: bool = False
) -> tuple[subprocess.Popen, re.Match, list[bytes]]:
    """Start CMD and wait for the line (on stdout, or stderr) that matches PATTERN; the log is every
    stderr line."""
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    log: list[bytes] = []
    watched, other = (proc.stderr, proc.stdout) if on_stderr else (proc.stdout, proc.stderr)
    threading.Thread(target=lambda: log.extend(other) if not on_stderr else other.read(), daemon=True).start()
    for line in watched:
        if on_stderr:
            log.append(line)
        if m := re.search(pattern, line):
            rest = (lambda: log.extend(watched)) if on_stderr else watched.read
            threading.Thread(target=rest, daemon=True).start()
            return proc, m, log
    raise SystemExit(f"{cmd[3]} did not start: {b''.join(log)[-2000:]!r}")


# what a proxy sees that a server rarely does: pipelining, 100-continue, upgrades, other request forms
PING = b'{"jsonrpc":"2.0","id":424242,"method":"ping"}'
PROXY_CASES = {
    "pipelined-two-posts": _post(body=INIT).replace(b"connection: close\r\n", b"")  # (kept alive)
    + _post(body=PING, headers=(J, A, (b"content-length", b"%d" % len(PING)))),
    "expect-100-continue": _post(headers=(J, A, LEN, (b"expect", b"100-continue"))),
    "upgrade-websocket": _post(
        method=b"GET",
        headers=((b"upgrade", b"websocket"), (b"connection", b"Upgrade"), (b"sec-websocket-key", b"x" * 24)),
        body=b"",
    ),
    "connect-in-reverse-mode": b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
    "absolute-form-uri": _post(path=b"http://127.0.0.1:1/mcp"),
    "options-asterisk": b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
    "get-sse-then-nothing": _post(method=b"GET", headers=((b"accept", b"text/event-stream"),), body=b""),
    "delete-session": _post(method=b"DELETE", headers=((b"mcp-session-id", b"nope"),), body=b""),
    "body-longer-than-length": _post(body=INIT + b"trailing garbage after the body"),
    "h2-preface": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00" * 30,
}


def main(argv: list[str]) -> int:
    from tracer.capture import ReadProblem, read_capture
    from tracer.model import RecordType

    capture = argv[0] if argv else str(REPO / "fixtures" / "captures" / "sdk-stdio-legacy.jsonl")
    py = [sys.executable, "-m", "tracer"]
    mock, m, _ = _start([*py, "mock", capture, "--listen", "127.0.0.1:0"], rb"(http://127\.0\.0\.1:\d+)/")
    upstream = m.group(1).decode() + "/mcp"
    out = Path(tempfile.mkdtemp()) / "through-proxy.jsonl"
    proxy, m, log = _start(
        [*py, "proxy", "--upstream", upstream, "--listen", "127.0.0.1:0", "--no-ui", "-o", str(out)],
        rb"give the host this URL: http://127\.0\.0\.1:(\d+)/",
        on_stderr=True,
    )
    port = int(m.group(1))
    flagged = 0
    answered = 0  # exchanges the upstream answered (the mock's status line reached the client)
    try:
        cases = {**CASES, **PROXY_CASES, "ordinary-after-all": _post(body=INIT)}
        for name, raw in cases.items():
            got = _send(port, raw)
            status = got.split(b"\r\n", 1)[0].decode("latin-1") or "(closed without an answer)"
            from_upstream = b"mcptrace" in got.lower() or b"jsonrpc" in got  # (the mock's own words)
            answered += from_upstream and status.startswith("HTTP/1.1")
            bad = b"internal error" in got.lower() or b"traceback" in got.lower()
            flagged += bad
            print(f"{'!!' if bad else '  '} {name:32} {status}{'  (upstream)' if from_upstream else ''}")
        ordinary = got
        alive = proxy.poll() is None
        if not ordinary.startswith(b"HTTP/1.1 200"):
            print("!! the ordinary exchange after the hostile ones was not answered")
            flagged += 1
    finally:
        proxy.send_signal(signal.SIGINT)
        try:
            proxy.wait(BOUND_S)
        except subprocess.TimeoutExpired:
            proxy.kill()
            print("!! the proxy did not stop on SIGINT")
            flagged += 1
        mock.terminate()
        mock.wait(BOUND_S)
    errors = [line for line in log if b"Traceback" in line or b"internal error" in line.lower()]
    for line in errors:
        print("!!", line.decode("utf-8", "replace").rstrip())
    flagged += len(errors) + (not alive)
    flows = set()
    pipelined = False  # (the second request of "pipelined-two-posts" is in the capture)
    with open(out, "rb") as fh:
        for rec in read_capture(fh, str(out)):
            if not isinstance(rec, ReadProblem) and rec.raw and b"424242" in rec.raw:
                pipelined = True
            if isinstance(rec, ReadProblem):
                print("!! capture problem:", rec)
                flagged += 1
            elif rec.type in (RecordType.MESSAGE, RecordType.HTTP) and rec.http and rec.http.get("flow"):
                flows.add(rec.http["flow"])
    if not pipelined:
        print("!! the second of two pipelined requests is not in the capture")
        flagged += 1
    if len(flows) < answered:
        print(f"!! {answered} exchanges answered by the upstream, {len(flows)} in the capture")
        flagged += 1
    print(
        f"{len(cases)} hostile requests through the proxy, proxy {'still serving' if alive else 'DIED'}, "
        f"{answered} answered by the upstream, {len(flows)} exchanges captured, {flagged} flagged"
    )
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
