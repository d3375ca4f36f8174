"""The lean master completes hooks in the turn that raised them (addons/inline_hooks.py): through a
real reverse proxy on loopback, addons see the hooks mitmproxy's own master gives them, in the same
order, and an addon that awaits, hands back an awaitable, intercepts a flow, fails or halts the chain
is treated as mitmproxy treats it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mitmproxy import exceptions, master, options

from addons.lean import LeanMaster, needed_addons

BOUND_S = 60
BODY = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
ANSWER = b'{"jsonrpc":"2.0","id":1,"result":{}}'


class _Upstream:
    """An HTTP/1.1 server that answers every POST with ANSWER and keeps each request's head."""

    def __init__(self) -> None:
        self.heads: list[bytes] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head)
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n")
                writer.write(b"content-length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


class _Listening:
    def __init__(self, m: master.Master) -> None:
        self.master, self.port = m, asyncio.get_running_loop().create_future()

    def running(self) -> None:
        self.port.set_result(self.master.addons.get("proxyserver").listen_addrs()[0][1])


@asynccontextmanager
async def _proxy(*addons, lean: bool = True) -> AsyncIterator[tuple[int, _Upstream]]:
    """A reverse proxy to an upstream on loopback, with ADDONS after mitmproxy's, on a lean master
    (or on mitmproxy's own master, lean=False)."""
    upstream = _Upstream()
    server = await asyncio.start_server(upstream.serve, "127.0.0.1", 0)
    modes = [f"reverse:http://127.0.0.1:{server.sockets[0].getsockname()[1]}"]
    opts = options.Options(mode=modes, listen_host="127.0.0.1", listen_port=0)
    m = LeanMaster(opts) if lean else master.Master(opts, with_termlog=False)
    listening = _Listening(m)
    m.addons.add(*needed_addons(modes), *addons, listening)
    opts.update(connection_strategy="lazy")
    run = asyncio.create_task(m.run())
    try:
        async with asyncio.timeout(BOUND_S):
            yield await listening.port, upstream
    finally:
        m.shutdown()
        async with asyncio.timeout(BOUND_S):
            await run
            await m.addons.get("proxyserver").servers.update([])  # (mitmproxy leaves them open)
        server.close()
        await server.wait_closed()


async def _posts(port: int, n: int = 1) -> list[bytes]:
    """N POSTs on one kept-alive connection; the answers' bodies."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    out = []
    async with asyncio.timeout(BOUND_S):
        for _ in range(n):
            writer.write(
                b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(BODY), BODY)
            )
            head = await reader.readuntil(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200"), head
            out.append(await reader.readexactly(len(ANSWER)))
        writer.close()
        await writer.wait_closed()
    return out


HOOKS = (
    "client_connected",
    "server_connect",
    "server_connected",
    "requestheaders",
    "request",
    "responseheaders",
    "response",
    "client_disconnected",
    "server_disconnected",
)


class _Order:
    """Which hooks come, in which order (a flow's hooks by its request number)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.finished = asyncio.Event()
        for name in HOOKS:
            setattr(self, name, self._noting(name))

    def _noting(self, name: str):
        def hook(data) -> None:
            self.seen.append(name)
            if name in ("client_disconnected", "server_disconnected") and {
                "client_disconnected",
                "server_disconnected",
            } <= set(self.seen):
                self.finished.set()

        return hook


async def test_addons_see_the_hooks_of_mitmproxys_own_master_in_the_same_order():
    seen = {}
    for lean in (False, True):
        order = _Order()
        async with _proxy(order, lean=lean) as (port, _upstream):
            assert await _posts(port, 3) == [ANSWER] * 3
            async with asyncio.timeout(BOUND_S):
                await order.finished.wait()
        seen[lean] = order.seen
    assert seen[True] == seen[False]
    assert seen[True].count("request") == 3 and seen[True][0] == "client_connected"


class _TaskNames:
    """The name of the asyncio task each request hook runs in."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def request(self, flow) -> None:
        self.names.append(asyncio.current_task().get_name())


async def test_a_hook_no_addon_awaits_runs_in_the_connections_task_instead_of_a_task_of_its_own():
    names = {}
    for lean in (False, True):
        spy = _TaskNames()
        async with _proxy(spy, lean=lean) as (port, _upstream):
            assert await _posts(port, 2) == [ANSWER] * 2
        names[lean] = spy.names
    # (the task that reads the client's bytes is mitmproxy's "client connection handler")
    assert len(names[True]) == len(names[False]) == 2
    assert all(n.startswith("client connection handler") for n in names[True]), names
    assert not any(n.startswith("client connection handler") for n in names[False]), names


class _AwaitsThenTags:
    async def request(self, flow) -> None:
        await asyncio.sleep(0)  # (a turn of the loop: the proxy must wait for the hook to end)
        flow.request.headers["x-tag"] = "awaited"


class _ReturnsAwaitable:
    def request(self, flow):
        async def later() -> None:
            await asyncio.sleep(0)
            flow.request.headers["x-later"] = "yes"

        return later()


class _Tags:
    def __init__(self, name: str) -> None:
        self.name = name

    def request(self, flow) -> None:
        flow.request.headers[f"x-{self.name}"] = "ran"


async def test_a_hook_that_awaits_or_returns_an_awaitable_is_waited_for_before_the_request_goes_on():
    heads = []
    for addon in (_AwaitsThenTags(), _ReturnsAwaitable()):  # (a plain function returns the second)
        async with _proxy(addon, _Tags("after")) as (port, upstream):
            assert await _posts(port, 2) == [ANSWER] * 2
        heads.append(upstream.heads)
    awaited, later = heads
    assert len(awaited) == len(later) == 2
    assert all(b"x-tag: awaited" in h and b"x-after: ran" in h for h in awaited)
    assert all(b"x-later: yes" in h and b"x-after: ran" in h for h in later)


class _Intercepts:
    def __init__(self) -> None:
        self.flows: asyncio.Queue = asyncio.Queue()

    def request(self, flow) -> None:
        flow.intercept()
        self.flows.put_nowait(flow)


async def test_an_intercepted_flow_goes_on_to_the_upstream_as_it_was_when_resumed():
    interceptor = _Intercepts()
    async with _proxy(interceptor) as (port, upstream):
        posting = asyncio.create_task(_posts(port, 2))
        for _ in range(2):
            async with asyncio.timeout(BOUND_S):
                f = await interceptor.flows.get()
            f.request.headers["x-resumed"] = "yes"  # (set while it waits: must reach the upstream)
            f.resume()
        assert await posting == [ANSWER] * 2
    assert len(upstream.heads) == 2 and all(b"x-resumed: yes" in h for h in upstream.heads)


class _Fails:
    def request(self, flow) -> None:
        raise ValueError("this addon broke")


class _Halts:
    def request(self, flow) -> None:
        raise exceptions.AddonHalt()


async def test_a_failing_hook_is_logged_and_the_next_addon_still_runs_and_addonhalt_ends_the_chain(caplog):
    with caplog.at_level(logging.ERROR):
        async with _proxy(_Fails(), _Tags("next"), _Halts(), _Tags("halted")) as (port, upstream):
            assert await _posts(port) == [ANSWER]
    assert "Addon error: this addon broke" in caplog.text
    (head,) = upstream.heads
    assert b"x-next: ran" in head and b"x-halted" not in head
