"""Generate large, realistic captures (our JSONL format) for the laziness test and the benchmarks.

A legacy session: initialize, then rounds of tools/call with a progress notification, a result
(every 50th an error) and now and then a stderr line. Lines are written as CaptureWriter writes
them, in big batches, so a 1 GB file takes seconds, not minutes.

    python tests/gencapture.py OUT.jsonl --messages 2000000 [--pad 300]
"""

from __future__ import annotations

import argparse
import os

import orjson

T0 = 1_795_000_000_000_000_000


def _line(
    seq: int,
    t: int,
    direction: str | None,
    obj: dict | None,
    rtype: str = "message",
    text: str | None = None,
    conn: str = "stdio-1",
) -> bytes:
    rec = {"type": rtype, "seq": seq, "t_ns": t}
    if direction:
        rec["dir"] = direction
    rec["transport"] = "stdio"
    rec["conn"] = conn
    rec["text"] = text if text is not None else orjson.dumps(obj).decode()
    return orjson.dumps(rec)


def generate(path: str | os.PathLike, messages: int, pad: int = 200, connections: int = 1) -> int:
    """Write a capture with about `messages` message records; returns the number of lines. With
    `connections` > 1 the rounds are spread over that many concurrent sessions (stdio-1, stdio-2...),
    each opened by its own handshake."""
    filler = "lorem ipsum dolor sit amet " * (pad // 27 + 1)
    filler = filler[:pad]
    head = {
        "type": "header",
        "format": "mcptrace",
        "version": 1,
        "tool": "mcptrace/gen",
        "t_ns": T0,
        "started": "2026-11-18T00:00:00.000Z",
        "transport": "stdio",
        "command": ["python", "server.py"],
    }
    lines = [orjson.dumps(head)]
    seq = 0
    t = T0
    written = 0

    conn = "stdio-1"

    def add(direction, obj, rtype="message", text=None):
        nonlocal seq, t
        seq += 1
        t += 250_000
        lines.append(_line(seq, t, direction, obj, rtype, text, conn))

    with open(path, "wb") as fh:
        for c in range(1, connections + 1):
            conn = f"stdio-{c}"
            add(
                "c2s",
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "gen", "version": "1"},
                    },
                },
            )
            add(
                "s2c",
                {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "gen", "version": "1"},
                    },
                },
            )
            add("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"})
            written += 3
        i = 0
        while written < messages:
            i += 1
            conn = f"stdio-{i % connections + 1}"
            add(
                "c2s",
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {
                        "name": "search",
                        "arguments": {"query": f"q{i} {filler}"},
                        "_meta": {"progressToken": i},
                    },
                },
            )
            add(
                "s2c",
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": i, "progress": 1},
                },
            )
            if i % 50 == 0:
                add(
                    "s2c",
                    {"jsonrpc": "2.0", "id": i, "error": {"code": -32603, "message": "backend timeout"}},
                )
            else:
                add(
                    "s2c",
                    {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": filler}]}},
                )
            written += 3
            if i % 97 == 0:
                add(None, None, "stderr", f"worker {i}: cache miss")
            if len(lines) >= 20000:
                fh.write(b"\n".join(lines) + b"\n")
                lines.clear()
        if lines:
            fh.write(b"\n".join(lines) + b"\n")
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--messages", type=int, default=200_000)
    p.add_argument("--pad", type=int, default=200, help="bytes of filler text per tool call and result")
    a = p.parse_args()
    print(generate(a.out, a.messages, a.pad))
