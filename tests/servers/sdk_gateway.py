"""The real SDK fixture server over Streamable HTTP (SSE answers), behind an ASGI middleware that
acts as the gateways in front of MCP servers do:

- a POST to /mcp/denied is refused (403) with a large HTML error page that quotes the request's
  bearer token, the token starting KEPT bytes before the end of the first 64 KiB of the page
  (where the capture cuts a body that is no JSON-RPC);
- every answer that carries an `Mcp-Session-Id` gets a trace header repeating the id
  (`X-Trace: upstream=... sess=<id>`).

Prints "listening on URL".

    python tests/servers/sdk_gateway.py KEPT
"""

import socket
import sys
from pathlib import Path

import anyio
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures" / "sdk"))
from server import build_server

PAGE_CUT = 64 * 1024


def gateway(app, kept: int):
    async def middleware(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        if scope["path"] == "/mcp/denied":
            auth = dict(scope["headers"]).get(b"authorization", b"")
            token = auth.partition(b" ")[2]
            page = b"<html><body><p>" + b"x" * (PAGE_CUT - kept - 23) + b"denied: " + token
            page += b" is not allowed here</p>" + b"y" * 1000 + b"</body></html>"
            head = [(b"content-type", b"text/html"), (b"content-length", str(len(page)).encode())]
            await send({"type": "http.response.start", "status": 403, "headers": head})
            await send({"type": "http.response.body", "body": page})
            return

        async def send_traced(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                sid = dict(headers).get(b"mcp-session-id")
                if sid:
                    headers.append((b"x-trace", b"upstream=sdk sess=" + sid))
                message = {**message, "headers": headers}
            await send(message)

        await app(scope, receive, send_traced)

    return middleware


async def main(kept: int) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    app = gateway(build_server().streamable_http_app(host="127.0.0.1"), kept)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    await server.serve(sockets=[sock])


anyio.run(main, int(sys.argv[1]))
