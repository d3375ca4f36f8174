"""Two sessions of one SDK client process (the official Python SDK's `Client`, its own
`streamable_http_client` transport and an httpx2 client like the SDK's default), sending concurrent
`tools/call`s with `anyio` task groups (what `asyncio.gather` does) against a server with
`stateless_http=True`: each request goes on a TCP connection of its own, so nothing in HTTP tells the
two sessions apart (tracer.http.tracks).

Concurrent requests reach a proxy in whatever order their connections deliver them. To make the
order the test needs happen every run, whatever the load, the httpx2 transport holds a request
back until the response head of the one it must follow has come back: that response can only come
once the proxy has read that request, so the proxy reads them in that order. Nothing else is
changed: the bytes on the wire are the SDK's.

Script (ids are the SDK's own, from 1 per session):
- A: initialize, initialized, tools/list (2), add x5 (3..7);
- B: initialize, initialized, tools/list (2), add (3);
- B: add 4 and 5 at once, 5 reaching the proxy first (A already used 5: it can only be B's), then 4
  (an id B still had on its way);
- A: add 8 and 9 at once, 9 first (B, at 5, may have sent 9 too: cannot be told), then 8;
- A: add (10), which continues A through that 9.
Prints one line per result (`{"session": "A", "sum": 3}`); exit 0 when every one was right.

    python tests/concurrent_client.py --url http://127.0.0.1:8788/mcp
"""

from __future__ import annotations

import argparse
import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT


def _request_id(request: httpx2.Request) -> object:
    if request.method != "POST":
        return None
    try:
        body = json.loads(request.content)
    except ValueError:
        return None
    return body.get("id") if isinstance(body, dict) else None


class Reorder(httpx2.AsyncBaseTransport):
    """HOLD: request id -> the id whose response head it waits for before it is sent."""

    def __init__(self, hold: dict[int, int]) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._hold = hold
        self._heads: dict[int, anyio.Event] = {}

    def _head(self, rid: int) -> anyio.Event:
        return self._heads.setdefault(rid, anyio.Event())

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        rid = _request_id(request)
        after = self._hold.get(rid) if isinstance(rid, int) else None
        if after is not None:
            await self._head(after).wait()
        response = await self._inner.handle_async_request(request)
        if isinstance(rid, int):
            self._head(rid).set()
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def _client(url: str, hold: dict[int, int]) -> Client:
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    http = httpx2.AsyncClient(timeout=timeout, transport=Reorder(hold))
    return Client(streamable_http_client(url, http_client=http), mode="legacy")


async def _add(name: str, client: Client, a: int, results: list) -> None:
    result = await client.call_tool("add", {"a": a, "b": 1})
    total = int("".join(c.text for c in result.content if getattr(c, "text", None) is not None))
    results.append({"session": name, "sum": total, "ok": total == a + 1})


async def _together(name: str, client: Client, values: tuple[int, ...], results: list) -> None:
    async with anyio.create_task_group() as tg:
        for a in values:
            tg.start_soon(_add, name, client, a, results)


async def run(url: str) -> list[dict]:
    results: list[dict] = []
    async with _client(url, {8: 9}) as a:
        await a.list_tools()
        for n in range(5):
            await _add("A", a, n, results)
        async with _client(url, {4: 5}) as b:
            await b.list_tools()
            await _add("B", b, 10, results)
            await _together("B", b, (20, 30), results)
            await _together("A", a, (40, 50), results)
            await _add("A", a, 60, results)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", required=True)
    results = anyio.run(run, parser.parse_args().url)
    for r in results:
        print(json.dumps(r, sort_keys=True))
    return 0 if len(results) == 11 and all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
