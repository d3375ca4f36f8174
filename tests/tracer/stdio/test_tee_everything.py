"""The official TypeScript reference server (@modelcontextprotocol/server-everything, via npm)
through the tee, driven by the official Python SDK client: identical results, clean capture.

CI installs it into .ci/node (`.ci/run`). Where Node is absent the test cannot run and is skipped;
where npm exists but the package is missing, it fails and says how to install it.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from mcp import StdioServerParameters

from tests.everything_peer import everything_binary, scripted_session
from tests.tracer.stdio.test_tee_relay import read_records
from tracer.analyser import analyse_all
from tracer.model import Kind, RecordType

TEE = [sys.executable, "-m", "tracer", "stdio", "-q"]


def everything() -> list[str]:
    return [str(everything_binary()), "stdio"]


async def session(command: list[str], mode: str) -> list:
    return await scripted_session(
        StdioServerParameters(command=command[0], args=command[1:]), mode, "hello through the tee"
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_server_everything_answers_the_same_through_the_tee_and_its_capture_lints_clean(tmp_path, mode):
    cmd = everything()
    cap = tmp_path / "everything.jsonl"
    direct = await session(cmd, mode)
    teed = await session([*TEE, "-o", str(cap), "--", *cmd], mode)
    assert teed == direct
    assert "echo" in teed[1] and "Echo: hello through the tee" in str(teed[2])
    lint = subprocess.run(
        [sys.executable, "-m", "tracer", "lint", "--fail-on", "warning", str(cap)],
        capture_output=True,
        text=True,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    records = read_records(cap)
    msgs, _ = analyse_all([r for r in records if r.type is not RecordType.HEADER])
    requests = [m for m in msgs if m.kind is Kind.REQUEST]
    assert requests and all(m.partner_seq is not None for m in requests)
    if mode == "auto":  # the dual-era probe, answered -32601 by this legacy-only server, then initialize
        assert [m.method for m in requests[:2]] == ["server/discover", "initialize"]
    assert any(r.type is RecordType.STDERR for r in records)  # its start-up line, captured from stderr
