"""A host built with the official MCP Python SDK that traces itself with OpenTelemetry: the SDK then
puts each request's W3C `traceparent` into `params._meta` (SEP-414), as an instrumented host does.

    python tests/otel_host.py --era modern -- mcptrace stdio --otlp URL -- python fixtures/sdk/server.py
    python tests/otel_host.py --era legacy --url http://127.0.0.1:PORT/mcp
    python tests/otel_host.py --era modern --pause -- ...   # after half the calls, print "paused" and
                                                            # wait for a line on stdin before the rest
    python tests/otel_host.py --unsampled -- ...   # the host samples its own traces out: its
                                                   # traceparents say so (flags 00), its spans are none

Prints one JSON line per operation (results without `_meta`), then {"op": "spans", "spans": [...]}:
the host's own spans (name, trace and span id, parent), which its requests' traceparents point at.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

MODES = {"legacy": "legacy", "modern": "2026-07-28", "auto": "auto"}


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k != "_meta"}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def emit(op: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"op": op, **fields}, sort_keys=True) + "\n")
    sys.stdout.flush()


async def session(args: argparse.Namespace, tracer) -> None:
    target: Any = args.url or StdioServerParameters(command=args.command[0], args=args.command[1:])
    async with Client(target, mode=MODES[args.era], cache=None) as client:
        with tracer.start_as_current_span("host turn"):
            tools = await client.list_tools()
            emit("list_tools", names=sorted(t.name for t in tools.tools))
            for a, b in ((1, 2), (3, 4)):
                res = await client.call_tool("add", {"a": a, "b": b})
                emit("call_tool", name="add", result=_clean(res.model_dump(mode="json", exclude_none=True)))
            if args.pause:
                emit("paused")
                await anyio.to_thread.run_sync(sys.stdin.readline)
            res = await client.call_tool("fail", {"reason": "on purpose"})
            emit("call_tool", name="fail", result=_clean(res.model_dump(mode="json", exclude_none=True)))
            for a, b in ((5, 6), (7, 8)):
                res = await client.call_tool("add", {"a": a, "b": b})
                emit("call_tool", name="add", result=_clean(res.model_dump(mode="json", exclude_none=True)))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1 :]
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url")
    parser.add_argument("--era", choices=sorted(MODES), default="modern")
    parser.add_argument("--pause", action="store_true")
    parser.add_argument("--unsampled", action="store_true")
    args = parser.parse_args(argv)
    args.command = command
    spans = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF) if args.unsampled else TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    trace.set_tracer_provider(provider)
    anyio.run(session, args, provider.get_tracer("otel-host"))
    provider.force_flush()
    emit(
        "spans",
        spans=[
            {
                "name": s.name,
                "trace_id": f"{s.context.trace_id:032x}",
                "span_id": f"{s.context.span_id:016x}",
                "parent": f"{s.parent.span_id:016x}" if s.parent else None,
            }
            for s in spans.get_finished_spans()
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
