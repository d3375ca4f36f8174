"""The conversation of tests/longsession.py: one realistic MCP session's messages, step by step
(what the records are made of; the module that imports this one turns them into records).
"""

from __future__ import annotations

from collections.abc import Iterator

from tracer.model import Direction

MODES = ("stdio-legacy", "stdio-modern", "http-legacy", "http-modern")
T0 = 1_796_000_000_000_000_000
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
CLIENT = {"name": "mcptrace-fixture-client", "version": "1.0.0"}
SERVER = {"name": "mcptrace-fixture", "version": "1.0.0"}
META = {
    f"io.modelcontextprotocol/{k}": v
    for k, v in (
        ("protocolVersion", MODERN),
        ("clientInfo", CLIENT),
        ("clientCapabilities", {"elicitation": {}}),
        ("logLevel", "info"),
    )
}
SERVER_META = {"io.modelcontextprotocol/serverInfo": SERVER}
TOOLS = [
    {
        "name": "echo",
        "description": "Return the text unchanged (and log one info line).",
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
        "name": "fail",
        "description": "Always fails: the result has isError true.",
        "inputSchema": {"type": "object", "properties": {"reason": {"type": "string"}}},
    },
    {
        "name": "slow",
        "description": "Count to `steps`, reporting progress at each step; cancellable.",
        "inputSchema": {
            "type": "object",
            "properties": {"steps": {"type": "integer"}},
            "required": ["steps"],
        },
    },
    {
        "name": "deploy",
        "description": "Deploy after the user confirms.",
        "inputSchema": {"type": "object", "properties": {"env": {"type": "string"}}, "required": ["env"]},
    },
]

# (direction, message, how it travels over HTTP): "call" a request answered as JSON, "stream" a
# request answered on an SSE stream (the messages tagged "on" until its result), "note" a client
# notification (202), "on" a server message on the current stream, "get" a server message on the
# GET stream, "reply" the client's answer to a server request (202), "cut" the client cancels the
# current stream's request (the stream ends without a result).
Step = tuple[Direction, dict, str]
CACHED = frozenset(
    {
        "server/discover",
        "tools/list",
        "resources/read",
        "resources/list",
        "prompts/list",
        "resources/templates/list",
    }
)
C2S, S2C = Direction.C2S, Direction.S2C


class Session:
    """The JSON-RPC messages of one session, in wire order, with how each travels."""

    def __init__(self, modern: bool):
        self.modern = modern
        self.next_id = 0
        self.server_id = 0
        self.cycle = 0

    def _req(self, method: str, params: dict | None = None) -> dict:
        self.next_id += 1
        msg: dict = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if self.modern:
            params = dict(params or {})
            params["_meta"] = {**META, **params.get("_meta", {})}
        if params is not None:
            msg["params"] = params
        return msg

    def _res(self, req: dict, result: dict) -> dict:
        if self.modern:
            cache = {"ttlMs": 0, "cacheScope": "private"} if req["method"] in CACHED else {}
            result = {"resultType": "complete", **cache, **result, "_meta": SERVER_META}
        return {"jsonrpc": "2.0", "id": req["id"], "result": result}

    def opening(self) -> Iterator[Step]:
        if self.modern:
            req = self._req("server/discover")
            yield C2S, req, "call"
            yield (
                S2C,
                self._res(
                    req,
                    {
                        "supportedVersions": [MODERN],
                        "capabilities": {"tools": {}, "resources": {}, "prompts": {}, "logging": {}},
                        "serverInfo": SERVER,
                    },
                ),
                "call",
            )
            return
        req = self._req(
            "initialize",
            {
                "protocolVersion": LEGACY,
                "capabilities": {"roots": {"listChanged": True}},
                "clientInfo": CLIENT,
            },
        )
        yield C2S, req, "call"
        yield (
            S2C,
            self._res(
                req,
                {
                    "protocolVersion": LEGACY,
                    "serverInfo": SERVER,
                    "capabilities": {
                        "logging": {},
                        "prompts": {"listChanged": False},
                        "resources": {"listChanged": False, "subscribe": True},
                        "tools": {"listChanged": False},
                    },
                },
            ),
            "call",
        )
        yield C2S, {"jsonrpc": "2.0", "method": "notifications/initialized"}, "note"
        req = self._req("logging/setLevel", {"level": "info"})
        yield C2S, req, "call"
        yield S2C, self._res(req, {}), "call"

    def cycle_steps(self) -> Iterator[Step]:
        self.cycle += 1
        n = self.cycle
        req = self._req("tools/call", {"name": "echo", "arguments": {"text": f"hello {n}"}})
        yield C2S, req, "stream"
        yield (
            S2C,
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "logger": "fixture", "data": f"echo called with hello {n}"},
            },
            "on",
        )
        yield (
            S2C,
            self._res(
                req,
                {
                    "content": [{"type": "text", "text": f"hello {n}"}],
                    "isError": False,
                    "structuredContent": {"result": f"hello {n}"},
                },
            ),
            "on",
        )
        req = self._req("tools/call", {"name": "add", "arguments": {"a": n, "b": 3}})
        yield C2S, req, "call"
        yield (
            S2C,
            self._res(
                req,
                {
                    "content": [{"type": "text", "text": str(n + 3)}],
                    "isError": False,
                    "structuredContent": {"result": n + 3},
                },
            ),
            "call",
        )
        req = self._req("tools/call", {"name": "fail", "arguments": {"reason": "on purpose"}})
        yield C2S, req, "call"
        yield (
            S2C,
            self._res(
                req,
                {
                    "content": [{"type": "text", "text": "Error executing tool fail: on purpose"}],
                    "isError": True,
                },
            ),
            "call",
        )
        uri = f"fixture://items/{n}"
        req = self._req("resources/read", {"uri": uri})
        yield C2S, req, "call"
        yield (
            S2C,
            self._res(req, {"contents": [{"uri": uri, "mimeType": "text/plain", "text": f"item {n}"}]}),
            "call",
        )
        req = self._req("prompts/get", {"name": "review", "arguments": {"code": f"print({n})"}})
        yield C2S, req, "call"
        yield (
            S2C,
            self._res(
                req,
                {
                    "description": "Ask for a review of some code.",
                    "messages": [
                        {
                            "role": "user",
                            "content": {"type": "text", "text": f"Please review this code:\nprint({n})"},
                        }
                    ],
                },
            ),
            "call",
        )
        yield from self._slow(3, cancel=False)
        yield from self._slow(5, cancel=True)
        if n % 4 == 0 and not self.modern:  # (ping is removed in 2026-07-28)
            req = self._req("ping")
            yield C2S, req, "call"
            yield S2C, {"jsonrpc": "2.0", "id": req["id"], "result": {}}, "call"
        if n % 8 == 0:
            yield from self._tools_list(n)
        if n % 8 == 4:
            yield from self._mrtr(n) if self.modern else self._server_request(n)

    def _slow(self, steps: int, cancel: bool) -> Iterator[Step]:
        token = self.next_id + 1
        req = self._req(
            "tools/call", {"name": "slow", "arguments": {"steps": steps}, "_meta": {"progressToken": token}}
        )
        yield C2S, req, "stream"
        for i in range(1, 2 if cancel else steps + 1):
            yield (
                S2C,
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {
                        "progressToken": token,
                        "progress": i,
                        "total": steps,
                        "message": f"step {i}/{steps}",
                    },
                },
                "on",
            )
        if cancel:
            yield (
                C2S,
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": req["id"], "reason": "caller cancelled"},
                },
                "cut",
            )
            return
        yield (
            S2C,
            self._res(
                req,
                {
                    "content": [{"type": "text", "text": f"done after {steps} steps"}],
                    "isError": False,
                    "structuredContent": {"result": f"done after {steps} steps"},
                },
            ),
            "on",
        )

    def _tools_list(self, n: int) -> Iterator[Step]:
        req = self._req("tools/list")
        yield C2S, req, "call"
        cursor = f"page2-{n}"
        yield S2C, self._res(req, {"tools": TOOLS[:3], "nextCursor": cursor}), "call"
        req = self._req("tools/list", {"cursor": cursor})
        yield C2S, req, "call"
        yield S2C, self._res(req, {"tools": TOOLS[3:]}), "call"

    def _mrtr(self, n: int) -> Iterator[Step]:
        args = {"env": f"stage-{n}"}
        req = self._req("tools/call", {"name": "deploy", "arguments": args})
        yield C2S, req, "call"
        state = f"rs-{n}"
        yield (
            S2C,
            {
                "jsonrpc": "2.0",
                "id": req["id"],
                "result": {
                    "resultType": "input_required",
                    "requestState": state,
                    "inputRequests": {
                        "confirm": {
                            "method": "elicitation/create",
                            "params": {
                                "message": f"Deploy to stage-{n}?",
                                "requestedSchema": {"type": "object", "properties": {}},
                            },
                        }
                    },
                    "_meta": SERVER_META,
                },
            },
            "call",
        )
        req = self._req(
            "tools/call",
            {
                "name": "deploy",
                "arguments": args,
                "requestState": state,
                "inputResponses": {"confirm": {"action": "accept", "content": {}}},
            },
        )
        yield C2S, req, "call"
        yield (
            S2C,
            self._res(
                req, {"content": [{"type": "text", "text": f"deployed to stage-{n}"}], "isError": False}
            ),
            "call",
        )

    def _server_request(self, n: int) -> Iterator[Step]:
        self.server_id += 1
        yield S2C, {"jsonrpc": "2.0", "id": self.server_id, "method": "roots/list"}, "get"
        yield (
            C2S,
            {
                "jsonrpc": "2.0",
                "id": self.server_id,
                "result": {"roots": [{"uri": f"file:///work/project-{n}", "name": f"project {n}"}]},
            },
            "reply",
        )
        uri = f"fixture://items/{n}"
        req = self._req("resources/subscribe", {"uri": uri})
        yield C2S, req, "call"
        yield S2C, self._res(req, {}), "call"
        yield (
            S2C,
            {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": uri}},
            "get",
        )
        req = self._req("resources/unsubscribe", {"uri": uri})
        yield C2S, req, "call"
        yield S2C, self._res(req, {}), "call"


def steps(modern: bool, messages: int) -> Iterator[Step]:
    """At least MESSAGES messages of one session (whole cycles)."""
    s = Session(modern)
    count = 0
    for step in s.opening():
        count += 1
        yield step
    while count < messages:
        for step in s.cycle_steps():
            count += 1
            yield step
