"""The real SDK fixture server over Streamable HTTP (JSON answers), behind an ASGI middleware that
adds `Set-Cookie: upstream_sess=<value>` to every answer: no real MCP server sets a cookie, yet a
gateway in front of one does, and the capture must not keep it. Prints "listening on URL".

    python tests/servers/sdk_set_cookie.py COOKIE_VALUE
"""

import socket
import sys
from pathlib import Path

import anyio
import uvicorn

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures" / "sdk"))
from server import build_server


def with_cookie(app, value: str):
    async def middleware(scope, receive, send):
        async def send_with_cookie(message):
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.append((b"set-cookie", f"upstream_sess={value}; Path=/; HttpOnly".encode()))
                message = {**message, "headers": headers}
            await send(message)

        await app(scope, receive, send_with_cookie if scope["type"] == "http" else send)

    return middleware


async def main(value: str) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    app = with_cookie(build_server().streamable_http_app(host="127.0.0.1", json_response=True), value)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    await server.serve(sockets=[sock])


anyio.run(main, sys.argv[1])
