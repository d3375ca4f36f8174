"""The official TypeScript reference server, @modelcontextprotocol/server-everything, as a test peer.

Where npm exists it is installed into .ci/node on first use (tests/node_peers.py); where Node is
absent the tests that need it are skipped (they cannot run here). One scripted SDK session drives it the same way through every door (direct, the tee,
the proxy), so results are comparable across runs.
"""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client

from tests.node_peers import npm_binary

REPO = Path(__file__).resolve().parent.parent
EVERYTHING = REPO / ".ci" / "node" / "node_modules" / ".bin" / "mcp-server-everything"
BOUND_S = 60


def everything_binary() -> Path:
    return npm_binary("@modelcontextprotocol/server-everything", EVERYTHING.name)


def _without_meta(v):
    if isinstance(v, dict):
        return {k: _without_meta(x) for k, x in v.items() if k != "_meta"}
    if isinstance(v, list):
        return [_without_meta(x) for x in v]
    return v


def dump(model) -> object:
    """An SDK result as comparable JSON (`_meta` left out: it carries per-run values)."""
    return _without_meta(model.model_dump(mode="json", by_alias=True, exclude_none=True))


async def scripted_session(target, mode: str, echo: str) -> list:
    """One scripted session against server-everything (`target`: stdio parameters, a URL or a
    transport context); the results of every call."""
    out = []
    with anyio.fail_after(BOUND_S):
        async with Client(target, mode=mode, cache=None) as c:
            out.append(c.protocol_version)
            out.append(sorted(t.name for t in (await c.list_tools()).tools))
            out.append(dump(await c.call_tool("echo", {"message": echo})))
            out.append(dump(await c.call_tool("get-sum", {"a": 2, "b": 40})))
            resources = (await c.list_resources()).resources
            out.append(dump(await c.read_resource(resources[0].uri)))
            out.append(sorted(p.name for p in (await c.list_prompts()).prompts))
            out.append(dump(await c.get_prompt("simple-prompt", {})))
    return out
