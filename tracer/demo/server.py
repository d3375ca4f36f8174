"""A tiny stdio MCP server for `mcptrace demo`: speaks both protocol eras, with a few deliberate
spec violations so the viewer has something to show.

Hand-written on purpose (no SDK): a demo must be able to misbehave in exact, documented ways.
The era is decided by the first request, as dual-era servers do: `initialize` opens a legacy
2025-11-25 session, a request carrying the 2026-07-28 `_meta` opens a modern one. With
`--legacy-only` it answers `server/discover` with -32601, so a probing client falls back.

Deliberate violations (each one a rule the viewer and lint report):
- legacy `tools/call add` is answered with the id as a string ("4" for 4): MCP203, and the
  request is then never answered: MCP211;
- legacy `tools/call echo` logs with a notification that carries an id: MCP111;
- modern `tools/call forecast` returns a result without `resultType`: MCP320, and without
  `_meta` serverInfo: MCP314.
Everything else follows the spec, including a multi round-trip (MRTR) tool, `book_flight`, and
the -32602 a modern request without its required `_meta` deserves.

    python -m tracer.demo.server [--legacy-only]
"""

from __future__ import annotations

import argparse
import base64
import sys
import time
from typing import Any

import orjson

NAME, VERSION = "mcptrace-demo", "1.0.0"
LEGACY_VERSION, MODERN_VERSION = "2025-11-25", "2026-07-28"
META_PV = "io.modelcontextprotocol/protocolVersion"
META_SERVER = "io.modelcontextprotocol/serverInfo"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO = {"name": NAME, "version": VERSION}

TOOLS = [
    {
        "name": "echo",
        "description": "Return the text unchanged.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
    {
        "name": "count_slowly",
        "description": "Count to n, reporting progress.",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    },
    {
        "name": "forecast",
        "description": "Tomorrow's weather for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    {
        "name": "book_flight",
        "description": "Book a flight; asks the user to confirm the seat (MRTR).",
        "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
    },
]


class DemoServer:
    def __init__(self, *, legacy_only: bool = False, out=None, err=None):
        self.legacy_only = legacy_only
        self.era: str | None = None
        self.out = out or sys.stdout.buffer
        self.err = err or sys.stderr

    # -- wire --------------------------------------------------------------------------------

    def send(self, obj: dict[str, Any]) -> None:
        self.out.write(orjson.dumps(obj) + b"\n")
        self.out.flush()

    def log(self, text: str) -> None:
        self.err.write(f"[demo-server] {text}\n")
        self.err.flush()

    def result(self, msg_id: Any, result: dict[str, Any], *, modern_meta: bool = True) -> None:
        if self.era == "modern":
            result = {"resultType": "complete", **result}
            if modern_meta:
                result.setdefault("_meta", {})[META_SERVER] = SERVER_INFO
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def error(self, msg_id: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})

    # -- dispatch ----------------------------------------------------------------------------

    def handle(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        msg_id = msg.get("id")
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        if method is None or msg_id is None:
            return  # responses and notifications need no answer here
        if method == "initialize":
            self.era = "legacy"
            self.result(
                msg_id,
                {
                    "protocolVersion": LEGACY_VERSION,
                    "serverInfo": SERVER_INFO,
                    "capabilities": {"tools": {"listChanged": False}, "logging": {}},
                },
            )
            return
        if method == "server/discover":
            if self.legacy_only:
                self.error(msg_id, -32601, "Method not found: server/discover")
                return
            self.era = "modern"
            self.result(
                msg_id,
                {
                    "supportedVersions": [MODERN_VERSION],
                    "capabilities": {"tools": {}},
                    "ttlMs": 60000,
                    "cacheScope": "public",
                },
            )
            return
        if self.era is None and meta.get(META_PV):
            self.era = "modern"
        if self.era == "modern" and not isinstance(meta.get(META_CAPS), dict):
            # the spec's answer to a modern request without its required _meta fields
            self.error(msg_id, -32602, f"Invalid params: _meta lacks {META_CAPS}")
            return
        if method == "ping":
            self.result(msg_id, {})
        elif method == "tools/list":
            extra = {"ttlMs": 60000, "cacheScope": "public"} if self.era == "modern" else {}
            self.result(msg_id, {"tools": TOOLS, **extra})
        elif method == "tools/call":
            self.call(msg_id, params)
        else:
            self.error(msg_id, -32601, f"Method not found: {method}")

    def call(self, msg_id: Any, params: dict[str, Any]) -> None:
        name = params.get("name")
        args = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        self.log(f"tools/call {name} {orjson.dumps(args).decode()}")
        if name == "echo":
            if self.era == "legacy":  # deliberate: a notification must not carry an id (MCP111)
                self.send(
                    {
                        "jsonrpc": "2.0",
                        "id": 99,
                        "method": "notifications/message",
                        "params": {"level": "info", "data": f"echo: {args.get('text')}"},
                    }
                )
            self.result(msg_id, _text(str(args.get("text", ""))))
        elif name == "add":
            total = int(args.get("a", 0)) + int(args.get("b", 0))
            if self.era == "legacy":  # deliberate: the id comes back as a string (MCP203)
                self.send({"jsonrpc": "2.0", "id": str(msg_id), "result": _text(str(total))})
            else:
                self.result(msg_id, _text(str(total)))
        elif name == "count_slowly":
            token = (params.get("_meta") or {}).get("progressToken")
            n = int(args.get("n", 3))
            for i in range(1, n + 1):
                time.sleep(0.05)  # the demo's "work", so latency shows in the viewer
                if token is not None:
                    self.send(
                        {
                            "jsonrpc": "2.0",
                            "method": "notifications/progress",
                            "params": {"progressToken": token, "progress": i, "total": n},
                        }
                    )
            self.result(msg_id, _text(f"counted to {n}"))
        elif name == "forecast":
            time.sleep(0.02)
            city = str(args.get("city", "Paris"))
            # deliberate: no resultType (MCP320) and no serverInfo _meta (MCP314)
            self.send({"jsonrpc": "2.0", "id": msg_id, "result": _text(f"{city}: sunny, 21 °C")})
        elif name == "book_flight":
            self.book_flight(msg_id, params, args)
        else:
            self.error(msg_id, -32602, f"Unknown tool: {name}")

    def book_flight(self, msg_id: Any, params: dict[str, Any], args: dict[str, Any]) -> None:
        """MRTR: the first round asks the user to pick a seat; the retry carries the answer."""
        answers = params.get("inputResponses")
        state = params.get("requestState")
        if not answers:
            state = base64.urlsafe_b64encode(orjson.dumps({"to": args.get("to")})).decode().rstrip("=")
            self.result(
                msg_id,
                {
                    "resultType": "input_required",
                    "inputRequests": {
                        "seat": {
                            "method": "elicitation/create",
                            "params": {
                                "mode": "form",
                                "message": f"Which seat on the flight to {args.get('to')}?",
                                "requestedSchema": {
                                    "type": "object",
                                    "properties": {"seat": {"type": "string"}},
                                    "required": ["seat"],
                                },
                            },
                        }
                    },
                    "requestState": state,
                },
            )
            return
        seat = ((answers.get("seat") or {}).get("content") or {}).get("seat", "?")
        self.result(msg_id, _text(f"booked to {args.get('to')}, seat {seat} (state {state})"))


def _text(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tracer.demo.server", description="mcptrace's demo MCP server")
    p.add_argument("--legacy-only", action="store_true", help="answer server/discover with -32601")
    args = p.parse_args(argv)
    server = DemoServer(legacy_only=args.legacy_only)
    server.log(f"{NAME} {VERSION} ready on stdio" + (" (legacy only)" if args.legacy_only else ""))
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            msg = orjson.loads(line)
        except orjson.JSONDecodeError:
            server.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
            continue
        if isinstance(msg, dict):
            server.handle(msg)
    server.log("stdin closed, bye")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
