"""Real traffic through the schema safety net: the official TypeScript server-everything, driven by the
official Python SDK client through `mcptrace stdio`, passes MCP150-MCP152 (no false positives on the
reference implementation's images, resource links, structured content, progress, completions, errors).

The SDK's own server is covered by the recorded captures (tests/tracer/schemas/test_schema_rules.py).
"""

from __future__ import annotations

import sys

from mcp import Client, StdioServerParameters, types

from tests.everything_peer import REPO, everything_binary
from tracer.analyser import analyse_all
from tracer.capture import read_capture
from tracer.rules import select_rules

CALLS = [
    ("echo", {"message": "hello"}),
    ("get-sum", {"a": 1, "b": 2}),
    ("get-tiny-image", {}),
    ("get-annotated-message", {"messageType": "error", "includeImage": True}),
    ("get-resource-links", {"count": 2}),
    ("get-resource-reference", {"resourceType": "Text", "resourceId": 1}),
    ("get-structured-content", {"location": "New York"}),
    ("trigger-long-running-operation", {"duration": 1, "steps": 2}),
    ("no-such-tool", {}),  # answered with `isError: true`
]


async def test_server_everything_traffic_passes_the_schema_rules(tmp_path):
    server = everything_binary()
    cap = tmp_path / "everything.jsonl"
    target = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tracer", "stdio", "-o", str(cap), "--", str(server), "stdio"],
        cwd=str(REPO),
    )

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        return None

    async with Client(target, mode="auto", cache=None, read_timeout_seconds=60) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"echo", "get-tiny-image", "get-structured-content"} <= tools
        for name, args in CALLS:
            await client.call_tool(name, args, progress_callback=on_progress)
        resources = (await client.list_resources()).resources
        for r in resources[:3]:
            await client.read_resource(r.uri)
        await client.list_resource_templates()
        await client.read_resource("demo://resource/dynamic/blob/1")
        await client.list_prompts()
        await client.get_prompt("simple-prompt")
        await client.get_prompt("args-prompt", {"city": "Paris", "state": "IDF"})
        await client.complete(
            types.PromptReference(type="ref/prompt", name="completable-prompt"),
            {"name": "department", "value": "E"},
        )

    with open(cap, "rb") as fh:
        records = [r for r in read_capture(fh) if hasattr(r, "raw")]
    msgs, _ = analyse_all(records, select_rules(["MCP150", "MCP151", "MCP152"]))
    assert len(msgs) > 40
    assert {m.era.value for m in msgs} >= {
        "legacy"
    }  # answers the discover probe with -32601, then initialize
    kinds = {m.kind.value for m in msgs}
    assert {"request", "result", "notification"} <= kinds
    assert [f"{m.seq} {f.message}" for m in msgs for f in m.findings] == []
