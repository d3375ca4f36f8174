"""An official-SDK client that is interrupted on purpose (tests/addons/test_fault_stops.py): it completes
one tools/call, then starts a long `slow` call (fixtures/sdk/server.py), saying `calling slow` just
before and `in flight` once its first progress notification arrived (a streamed answer); it then
waits until its peer goes away.

    python tests/fault_client.py --url http://127.0.0.1:8788/mcp
    python tests/fault_client.py -- mcptrace stdio -o cap.jsonl -- python fixtures/sdk/server.py
"""

from __future__ import annotations

import sys

import anyio
from mcp import Client, StdioServerParameters


async def main(argv: list[str]) -> int:
    if argv[0] == "--url":
        target: object = argv[1]
    else:
        command = argv[argv.index("--") + 1 :]
        target = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(target, mode="legacy", cache=None, read_timeout_seconds=120) as client:
        await client.call_tool("echo", {"text": "before the stop"})
        print("answered", flush=True)

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            print("in flight", flush=True)

        print("calling slow", flush=True)
        await client.call_tool("slow", {"steps": 5, "step_seconds": 60}, progress_callback=on_progress)
    return 0


if __name__ == "__main__":
    try:
        code = anyio.run(main, sys.argv[1:])
    except BaseException:  # the peer was stopped under it: that is the point; its own end is not tested
        code = 3
    sys.exit(code)
