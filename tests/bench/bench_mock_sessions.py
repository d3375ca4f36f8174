"""Memory of the HTTP mock under session floods: N requests naming bogus Mcp-Session-Ids, then N
`initialize` requests (each would open a session). Prints the resident size before and after, and
the session table's size (bounded by MAX_SESSIONS; bogus ids get 404 and cost nothing).

    python tests/bench/bench_mock_sessions.py [N]     # default 20000
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.replay_support import recording, req, res
from tracer.mock.engine import MockServer
from tracer.mock.http import MockHttpServer

INIT = req(
    1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "h"}}
)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def flood(port: int, n: int, body: bytes, sid: bool) -> dict:
    from collections import Counter

    statuses: Counter = Counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for i in range(n):
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(body)}\r\n"
        )
        if sid:
            head += f"Mcp-Session-Id: bogus-{i}\r\n"
        writer.write((head + "\r\n").encode() + body)
        await writer.drain()
        status = int((await reader.readline()).split()[1])
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        statuses[status] += 1
    writer.close()
    return statuses


async def main(n: int) -> None:
    rec = recording(
        ("c2s", INIT),
        ("s2c", res(1, {"protocolVersion": "2025-11-25", "capabilities": {}})),
        ("c2s", req(2, "tools/list")),
        ("s2c", res(2, {"tools": []})),
    )
    srv = MockHttpServer(MockServer(rec), "127.0.0.1", 0)
    _, port = await srv.start()
    print(f"start: {rss_mb():.0f} MB")
    got = await flood(port, n, json.dumps(req(2, "tools/list")).encode(), sid=True)
    print(
        f"after {n} bogus session ids: {rss_mb():.0f} MB, {len(srv.sessions)} sessions, statuses {dict(got)}"
    )
    got = await flood(port, n, json.dumps(INIT).encode(), sid=False)
    print(f"after {n} initialize: {rss_mb():.0f} MB, {len(srv.sessions)} sessions, statuses {dict(got)}")
    await srv.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000))
