"""The official TypeScript reference server (@modelcontextprotocol/server-everything, via npm)
through the tee, driven by the official Python SDK client: identical results, clean capture.

CI installs it into .ci/node (`.ci/run`). Where Node is absent the test cannot run and is skipped;
where npm exists but the package is missing, it fails and says how to install it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tests.test_tee_relay import read_records
from tracer.analyser import analyse_all
from tracer.model import Kind, RecordType

REPO = Path(__file__).resolve().parent.parent
EVERYTHING = REPO / ".ci" / "node" / "node_modules" / ".bin" / "mcp-server-everything"
TEE = [sys.executable, "-m", "tracer", "stdio", "-q"]
BOUND_S = 60


def everything() -> list[str]:
    if shutil.which("node") is None:
        pytest.skip("Node.js is not installed: server-everything cannot run here")
    if not EVERYTHING.exists():
        pytest.fail(f"npm is present but {EVERYTHING} is missing; install it with: npm install --prefix "
                    f".ci/node @modelcontextprotocol/server-everything (as .ci/run does)")
    return [str(EVERYTHING), "stdio"]


def _dump(model) -> object:
    def clean(v):
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items() if k != "_meta"}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return clean(model.model_dump(mode="json", by_alias=True, exclude_none=True))


async def session(command: list[str], mode: str) -> list:
    """One scripted session; the results of every call, comparable across runs."""
    out = []
    params = StdioServerParameters(command=command[0], args=command[1:])
    with anyio.fail_after(BOUND_S):
        async with Client(params, mode=mode, cache=None) as c:
            out.append(c.protocol_version)
            out.append(sorted(t.name for t in (await c.list_tools()).tools))
            out.append(_dump(await c.call_tool("echo", {"message": "hello through the tee"})))
            out.append(_dump(await c.call_tool("get-sum", {"a": 2, "b": 40})))
            resources = (await c.list_resources()).resources
            out.append(_dump(await c.read_resource(resources[0].uri)))
            out.append(sorted(p.name for p in (await c.list_prompts()).prompts))
            out.append(_dump(await c.get_prompt("simple-prompt", {})))
    return out


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_server_everything_answers_the_same_through_the_tee_and_its_capture_lints_clean(tmp_path, mode):
    cmd = everything()
    cap = tmp_path / "everything.jsonl"
    direct = await session(cmd, mode)
    teed = await session([*TEE, "-o", str(cap), "--", *cmd], mode)
    assert teed == direct
    assert "echo" in teed[1] and "Echo: hello through the tee" in str(teed[2])
    lint = subprocess.run([sys.executable, "-m", "tracer", "lint", "--fail-on", "warning", str(cap)],
                          capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    records = read_records(cap)
    msgs, _ = analyse_all([r for r in records if r.type is not RecordType.HEADER])
    requests = [m for m in msgs if m.kind is Kind.REQUEST]
    assert requests and all(m.partner_seq is not None for m in requests)
    if mode == "auto":  # the dual-era probe, answered -32601 by this legacy-only server, then initialize
        assert [m.method for m in requests[:2]] == ["server/discover", "initialize"]
    assert any(r.type is RecordType.STDERR for r in records)  # its start-up line, captured from stderr
