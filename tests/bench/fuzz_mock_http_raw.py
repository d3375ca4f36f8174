"""Hostile HTTP at the byte level against `mcptrace mock --listen` (a real process on loopback):
request lines, header names and values that are not UTF-8, Origins that do not parse, bad and
duplicate Content-Lengths, broken chunking, heads past the 1 MiB line limit, garbage (a TLS hello).
fuzz_mock.py mutates JSON-RPC bodies; this one mutates the HTTP around them.

    python tests/bench/fuzz_mock_http_raw.py [CAPTURE]   # default fixtures/captures/sdk-stdio-legacy.jsonl

Prints one line per case (its status line) and flags a 500, an "internal error" or "cannot answer"
in the mock's log; the mock must still be serving at the end. Target: 0 flagged. (A connection reset
while the client still sends a refused oversized head is TCP's doing, not flagged.)
"""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BOUND_S = 60
INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'
)
J, A = (b"content-type", b"application/json"), (b"accept", b"application/json, text/event-stream")
LEN = (b"content-length", str(len(INIT)).encode())


def _post(path=b"/mcp", headers=(J, A, LEN), body=INIT, method=b"POST", version=b"HTTP/1.1") -> bytes:
    head = b"".join(k + b": " + v + b"\r\n" for k, v in headers)
    return (
        method
        + b" "
        + path
        + b" "
        + version
        + b"\r\nHost: x\r\n"
        + head
        + b"connection: close\r\n\r\n"
        + body
    )


CASES = {
    "path-not-utf8": _post(path=b"/mcp\xff"),
    "path-nul": _post(path=b"/mcp\x00"),
    "path-70k": _post(path=b"/" + b"a" * 70_000),
    "header-value-not-utf8": _post(headers=(J, A, (b"x", b"\xff\xfe"), LEN)),
    "header-name-not-utf8": _post(headers=(J, A, (b"x\xff", b"v"), LEN)),
    "session-id-not-utf8": _post(headers=(J, A, (b"mcp-session-id", b"\xff\x00"), LEN)),
    "protocol-version-not-utf8": _post(headers=(J, A, (b"mcp-protocol-version", b"\xff"), LEN)),
    "origin-not-utf8": _post(headers=(J, A, (b"origin", b"http://\xff"), LEN)),
    "origin-null": _post(headers=(J, A, (b"origin", b"null"), LEN)),
    "origin-port-huge": _post(headers=(J, A, (b"origin", b"http://localhost:99999999999"), LEN)),
    "origin-unclosed-ipv6": _post(headers=(J, A, (b"origin", b"http://[::1"), LEN)),
    "content-length-negative": _post(headers=(J, A, (b"content-length", b"-5"))),
    "content-length-40-digits": _post(headers=(J, A, (b"content-length", b"9" * 40))),
    "content-length-twice": _post(headers=(J, A, (b"content-length", b"5"), (b"content-length", b"7"))),
    "content-length-text": _post(headers=(J, A, (b"content-length", b"abc"))),
    "chunk-size-not-hex": _post(
        headers=(J, A, (b"transfer-encoding", b"chunked")), body=b"zz\r\nabc\r\n0\r\n\r\n"
    ),
    "chunk-size-huge": _post(headers=(J, A, (b"transfer-encoding", b"chunked")), body=b"f" * 19 + b"\r\nabc"),
    "chunked-ok": _post(
        headers=(J, A, (b"transfer-encoding", b"chunked")),
        body=b"%x\r\n" % len(INIT) + INIT + b"\r\n0\r\n\r\n",
    ),
    "content-type-charset-not-utf8": _post(
        headers=((b"content-type", b"application/json; charset=\xff"), A, LEN)
    ),
    "no-accept": _post(headers=(J, LEN)),
    "body-not-utf8": _post(body=b"\xff\xfe{}", headers=(J, A, (b"content-length", b"4"))),
    "body-lone-surrogate": _post(
        body=(b := b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}'),
        headers=(J, A, (b"content-length", str(len(b)).encode())),
    ),
    "method-not-utf8": _post(method=b"PO\xffST"),
    "http-0.9": _post(version=b"HTTP/0.9"),
    "version-junk": _post(version=b"HTTP/9.9\xff"),
    "tls-hello": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 100,
    "header-line-2mb": _post(headers=(J, A, (b"x", b"a" * 2_000_000), LEN)),
    "20000-headers": _post(headers=(J, A, *[(b"x%d" % i, b"v") for i in range(20_000)], LEN)),
    "lf-only": b"POST /mcp HTTP/1.1\nHost: x\ncontent-type: application/json\ncontent-length: %d\n\n"
    % len(INIT)
    + INIT,
    "header-without-colon": b"POST /mcp HTTP/1.1\r\nHost x\r\n\r\n",
    "obsolete-fold": b"POST /mcp HTTP/1.1\r\nHost: x\r\n folded\r\ncontent-length: 0\r\n\r\n",
}


def _send(port: int, raw: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=BOUND_S) as s:
        try:
            s.sendall(raw)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the mock refused the head and closed before the rest was sent
        out = b""
        try:
            while d := s.recv(65536):
                out += d
        except OSError:
            pass
        return out


def main(argv: list[str]) -> int:
    capture = argv[0] if argv else str(REPO / "fixtures" / "captures" / "sdk-stdio-legacy.jsonl")
    cmd = [sys.executable, "-m", "tracer", "mock", capture, "--listen", "127.0.0.1:0"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    log: list[bytes] = []
    threading.Thread(target=lambda: log.extend(proc.stderr), daemon=True).start()
    try:
        port = int(re.search(rb":(\d+)/", proc.stdout.readline()).group(1))
        flagged = 0
        for name, raw in CASES.items():
            out = _send(port, raw)
            status = out.split(b"\r\n", 1)[0].decode("latin-1") or "(closed without an answer)"
            bad = " 500 " in status or b"internal" in out.lower()
            flagged += bad
            print(f"{'!!' if bad else '  '} {name:32} {status}")
        alive = proc.poll() is None
    finally:
        proc.terminate()
        proc.wait(BOUND_S)
    errors = [line for line in log if b"cannot answer" in line or b"Traceback" in line]
    flagged += len(errors) + (not alive)
    for line in errors:
        print("!!", line.decode("utf-8", "replace").rstrip())
    print(f"{len(CASES)} hostile requests, mock {'still serving' if alive else 'DIED'}, {flagged} flagged")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
