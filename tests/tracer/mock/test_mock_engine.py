"""The mock's behaviour in-process: what it sends, in which order, and what it waits for."""

from __future__ import annotations

import asyncio
import json

from tests.replay_support import note, recording, req, res
from tracer.mock.engine import MockServer

INIT = req(
    1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "h"}}
)


class Host:
    """Collects what the mock sends, and lets a test wait until a given message has arrived."""

    def __init__(self) -> None:
        self.seen: list[dict] = []
        self.changed = asyncio.Event()

    async def emit(self, data: bytes) -> None:
        self.seen.append(json.loads(data))
        self.changed.set()

    async def until(self, pred, bound: float = 5.0) -> dict:
        async def wait() -> dict:
            while True:
                for m in self.seen:
                    if pred(m):
                        return m
                self.changed.clear()
                await self.changed.wait()

        return await asyncio.wait_for(wait(), bound)


async def test_an_answer_recorded_after_the_hosts_cancel_waits_for_the_callers_cancel():
    rec = recording(
        ("c2s", INIT),
        ("s2c", res(1, {"protocolVersion": "2025-11-25"})),
        ("c2s", req(5, "tools/call", {"name": "slow"})),
        ("c2s", note("notifications/cancelled", {"requestId": 5})),
        ("s2c", {"jsonrpc": "2.0", "id": 5, "error": {"code": -32800, "message": "Request cancelled"}}),
    )
    session = MockServer(rec).session()
    host = Host()
    await session.receive(json.dumps(req(50, "tools/call", {"name": "slow"})).encode(), host.emit)
    await session.receive(json.dumps(req(51, "ping")).encode(), host.emit)
    await host.until(lambda m: m.get("id") == 51)  # the mock is alive...
    assert not any(m.get("id") == 50 for m in host.seen)  # ...and holds the cancelled call's answer
    await session.receive(json.dumps(note("notifications/cancelled", {"requestId": 50})).encode(), host.emit)
    answer = await host.until(lambda m: m.get("id") == 50)
    assert answer["error"]["code"] == -32800
    await session.close()


async def test_a_recorded_server_request_is_asked_with_the_mocks_own_id_and_awaited_before_the_answer():
    rec = recording(
        ("c2s", INIT),
        ("s2c", res(1, {"protocolVersion": "2025-11-25"})),
        ("c2s", req(2, "tools/call", {"name": "greet"})),
        ("s2c", req(0, "elicitation/create", {"message": "Name?"})),
        ("c2s", res(0, {"action": "accept", "content": {"name": "Ada"}})),
        ("s2c", res(2, {"content": [{"type": "text", "text": "Hello, Ada!"}]})),
    )
    session = MockServer(rec).session()
    host = Host()
    await session.receive(json.dumps(req("call-1", "tools/call", {"name": "greet"})).encode(), host.emit)
    ask = await host.until(lambda m: m.get("method") == "elicitation/create")
    assert ask["params"] == {"message": "Name?"}
    assert ask["id"] == 1  # the mock numbers its own requests; the recorded id 0 is not reused
    assert not any(m.get("id") == "call-1" for m in host.seen)  # nothing until the host answers
    await session.receive(
        json.dumps(res(ask["id"], {"action": "accept", "content": {"name": "Bob"}})).encode(), host.emit
    )
    answer = await host.until(lambda m: m.get("id") == "call-1")
    assert (
        answer["result"]["content"][0]["text"] == "Hello, Ada!"
    )  # the recorded answer, whatever the host said
    await session.close()


async def test_recorded_bytes_are_sent_unchanged_when_the_ids_agree():
    raw_answer = b'{"jsonrpc":"2.0","id":2,"result":{"z":1,"a":[1, 2]}}'
    rec = recording(("c2s", INIT), ("s2c", res(1, {})), ("c2s", req(2, "tools/list")), ("s2c", raw_answer))
    session = MockServer(rec).session()
    sent: list[bytes] = []

    async def emit(data: bytes) -> None:
        sent.append(data)

    await session.receive(json.dumps(req(2, "tools/list")).encode(), emit)
    await session.receive(json.dumps(req("2", "tools/list")).encode(), emit)
    await session.drain(5.0)
    assert sent[0] == raw_answer  # same id, same JSON type: the recorded bytes themselves
    assert json.loads(sent[1])["id"] == "2"  # "2" is not 2: re-serialised with the caller's id
    await session.close()
