"""A Streamable HTTP server that repeats its session id where no real server does on purpose, so
the proxy's capture can be shown to hide it there: in the `id:` of each SSE event (a server may
build its event ids from the session, `<session>-<n>`), and in a response head so broken that
mitmproxy refuses it and quotes the bad line in the flow's error (`Cannot parse HTTP response:
Invalid header line: b'X-Trace <session>'`). Prints "listening on URL".

    python tests/servers/session_echo_http.py SESSION_ID

One request per read, HTTP/1.1 keep-alive; answers by the JSON-RPC method:
- `initialize`: a JSON result, minting SESSION_ID in `Mcp-Session-Id`;
- `notifications/*`: 202;
- `tools/list`: an SSE stream, a priming event `id: SESSION_ID-0` then the result as `id: SESSION_ID-1`;
- `tools/call`: the broken response head, then the connection is closed.
"""

import json
import socketserver
import sys

SESSION = sys.argv[1] if len(sys.argv) > 1 else "sess-0123456789abcdef"


def _answer(msg: dict) -> bytes:
    method = msg.get("method", "")
    if method == "initialize":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo-sid", "version": "1"},
        }
        out = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: {SESSION}\r\n"
        return head.encode() + b"Content-Length: %d\r\n\r\n" % len(out) + out
    if method.startswith("notifications/"):
        return b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
    if method == "tools/list":
        result = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": {"tools": []}})
        events = f"id: {SESSION}-0\ndata: \n\nid: {SESSION}-1\nevent: message\ndata: {result}\n\n".encode()
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(
            events
        )
        return head + events
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Trace {SESSION}\r\n\r\n".encode()


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        while True:
            line = self.rfile.readline()
            if not line:
                return
            length = 0
            while True:
                h = self.rfile.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                name, _, value = h.decode("latin-1").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            body = self.rfile.read(length)
            try:
                msg = json.loads(body)
            except ValueError:
                msg = {}
            msg = msg if isinstance(msg, dict) else {}
            self.wfile.write(_answer(msg))
            self.wfile.flush()
            if msg.get("method") == "tools/call":
                return  # (the broken head: nothing sensible can follow it)


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    with Server(("127.0.0.1", 0), Handler) as srv:
        print(f"listening on http://127.0.0.1:{srv.server_address[1]}/mcp", flush=True)
        srv.serve_forever()
