"""One short legacy session of the official Python SDK client (`Client`, its own Streamable HTTP
transport) for tests whose recorder buffers SSE answers (stock mitmdump, a HAR): every answer is
one event, so nothing waits on a stream's first event. With `--wrong`, its request ids count from
1001 (as tests/wrong_client.py's do: no other session is ever at its point) and it ends with a
`resources/subscribe` the fixture server's capabilities do not allow (MCP418).

    python tests/plain_client.py --url http://127.0.0.1:8788/mcp [--wrong]
"""

from __future__ import annotations

import argparse
import sys
import warnings

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

FIRST_ID = 1001
_dispatcher_init = JSONRPCDispatcher.__init__


def _wrong_ids(self, *args, **kwargs) -> None:
    _dispatcher_init(self, *args, **kwargs)
    self._next_id = FIRST_ID - 1  # the SDK allocates ids as ++_next_id


async def run(url: str, wrong: bool) -> bool:
    async with Client(url, mode="legacy") as client:
        tools = await client.list_tools()
        sums = [await client.call_tool("add", {"a": n, "b": 1}) for n in range(3)]
        prompt = await client.get_prompt("review", {"code": "print(1)"})
        if wrong:
            try:
                await client.subscribe_resource("fixture://static/greeting")
            except MCPError:  # the server may refuse it: the request went out either way
                pass
    return bool(tools.tools) and len(sums) == 3 and bool(prompt.messages)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", required=True)
    parser.add_argument("--wrong", action="store_true")
    args = parser.parse_args()
    if args.wrong:
        warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
        JSONRPCDispatcher.__init__ = _wrong_ids
    return 0 if anyio.run(run, args.url, args.wrong) else 1


if __name__ == "__main__":
    sys.exit(main())
