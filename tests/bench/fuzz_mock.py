"""Hostile hosts against the mock, at scale: mutated JSON-RPC requests (lone surrogates, integers
beyond 64 bits, deep nesting, wrong types, batches) sent to the engine as a stdio session and to the
HTTP server over loopback. Counts requests without exactly one complete answer, and crashes.

    python tests/bench/fuzz_mock.py [N [SEED]]      # default 3000 (each over stdio and over HTTP), seed 12
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.replay_support import note, recording, req, res
from tracer.http.wire import Url, iter_body, open_request
from tracer.mock.engine import MockServer
from tracer.mock.http import MockHttpServer

INIT = req(
    1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "h"}}
)
REC = recording(
    ("c2s", INIT),
    ("s2c", res(1, {"protocolVersion": "2025-11-25", "capabilities": {}})),
    (
        "c2s",
        req(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"}, "_meta": {"progressToken": "p"}}),
    ),
    ("s2c", note("notifications/progress", {"progressToken": "p", "progress": 1})),
    ("s2c", res(2, {"content": [{"type": "text", "text": "hi"}]})),
    ("c2s", req(3, "tools/list")),
    ("s2c", res(3, {"tools": []})),
)


def hostile(rng: random.Random, depth: int = 0) -> str:
    """A JSON text a fuzzer would send: lone surrogates, integers beyond 64 bits, 1e308, nesting
    past orjson's 254, wrong types, in lists and objects."""
    r = rng.random()
    if depth > 3 or r < 0.3:
        return rng.choice(
            [
                '"\\ud800"',
                '"x\\udfffy"',
                str(2**65),
                str(-(2**70)),
                "1e308",
                "null",
                "true",
                '""',
                '"é"',
                "0",
                '"[[[["',
            ]
        )
    if r < 0.4:
        d = rng.choice([255, 300, 600])
        return "[" * d + "]" * d
    if r < 0.7:
        return "[" + ",".join(hostile(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"
    keys = ["name", "arguments", "_meta", "progressToken", "k"]
    return (
        "{"
        + ",".join(f'"{rng.choice(keys)}":{hostile(rng, depth + 1)}' for _ in range(rng.randint(0, 3)))
        + "}"
    )


def message(rng: random.Random, i: int) -> tuple[bytes, bool]:
    """(the line, whether it is a request that must get exactly one answer)."""
    rid = rng.choice([str(i), f'"r{i}"', str(2**64 + i), f'"\\ud800{i}"'])
    method = rng.choice(['"tools/call"', '"tools/list"', '"ping"', '"initialize"', '"\\ud800"', '"x/y"'])
    if rng.random() < 0.3:
        params = '{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":' + hostile(rng) + "}}"
    else:
        params = hostile(rng)
    body = f'{{"jsonrpc":"2.0","id":{rid},"method":{method},"params":{params}}}'
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return body.encode(), False
    return body.encode(), type(obj.get("params")) in (dict, list)


async def over_stdio(n: int, rng: random.Random) -> tuple[int, int]:
    server = MockServer(REC)
    session = server.session()
    out: list[bytes] = []

    async def emit(data: bytes) -> None:
        json.loads(data)  # every line a complete JSON document
        out.append(data)

    bad = 0
    for i in range(n):
        line, expect = message(rng, i)
        before = len(out)
        try:
            await session.receive(line, emit)
            await session.drain(5)
        except Exception as exc:
            print("stdio crash:", repr(exc)[:200], line[:120])
            bad += 1
            continue
        answers = [
            json.loads(d) for d in out[before:] if "id" in json.loads(d) and "method" not in json.loads(d)
        ]
        if expect and len(answers) != 1:
            bad += 1
            print("stdio: not one answer:", len(answers), line[:120])
    await session.close()
    return n, bad


async def over_http(n: int, rng: random.Random) -> tuple[int, int]:
    srv = MockHttpServer(MockServer(REC), "127.0.0.1", 0)
    host, port = await srv.start()
    url = Url.parse(f"http://{host}:{port}/mcp")
    bad = 0
    for i in range(n):
        line, _expect = message(rng, i)
        try:
            head, reader, writer = await open_request(
                url,
                "POST",
                [("Content-Type", "application/json"), ("Accept", "application/json, text/event-stream")],
                line,
                timeout=10,
            )
            raw = b"".join([c async for c in iter_body(reader, head.headers, until_close=True)])
            writer.close()
            if head.content_type == "application/json" and raw:
                json.loads(raw)
            elif head.content_type == "text/event-stream" and b"data: " not in raw:
                raise ValueError("an empty stream")
        except Exception as exc:
            bad += 1
            print("http: no complete answer:", repr(exc)[:200], line[:120])
    await srv.close()
    return n, bad


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 12)  # a fresh seed finds new cases
    for name, fn in (("stdio", over_stdio), ("http", over_http)):
        total, bad = asyncio.run(fn(n, rng))
        print(f"{name}: {bad} of {total} requests without one complete answer")


if __name__ == "__main__":
    main()
