"""Which official definition a message must satisfy, per protocol version, and its compiled validator.

The schema alone cannot say which shape a message should have: its `*ResultResponse` unions accept any
object with a `resultType` (InputRequiredResult is open), and legacy schemas have one generic response
envelope. So, as the official SDKs do (they parse `tools/call` with CallToolRequest and its answer with
CallToolResult), the dispatch is ours:

- request / notification: by `method`, to the definition whose `method` is that `const` (derived from
  the schema, so a refresh that adds a method needs no code change). Legacy schemas (2024-11-05 to
  2025-06-18) define the method types without the JSON-RPC envelope; there the envelope definition is
  checked too (`allOf`). A method the version does not define gets the envelope only.
- result: by the method of the request it answers (`RESULT_BY_METHOD`); in 2026-07-28 by `resultType`
  first (`input_required` -> InputRequiredResult); a 2025-11-25 task-augmented request (params
  carry `task`) is answered by CreateTaskResult. The JSON-RPC response envelope is always checked.
- error: by `error.code` where the version defines that code (2026-07-28: ParseError ... and the three
  MCP errors, e.g. -32022 UnsupportedProtocolVersionError; 2025-11-25: -32042), else the envelope.

Each (version, target) is compiled once with jsonschema-rs, lazily, against a registry holding the
whole schema document, and kept for the life of the process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import jsonschema_rs

from tracer.protocol import MODERN_VERSION
from tracer.schemas import defs_key, load_schema

# The definition of the result that answers each request method. Only used where the version defines
# both the method (as a JSON-RPC request) and the result definition.
RESULT_BY_METHOD = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "logging/setLevel": "EmptyResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
    "completion/complete": "CompleteResult",
    "prompts/get": "GetPromptResult",
    "prompts/list": "ListPromptsResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "tools/call": "CallToolResult",
    "tools/list": "ListToolsResult",
    "sampling/createMessage": "CreateMessageResult",
    "roots/list": "ListRootsResult",
    "elicitation/create": "ElicitResult",
    "tasks/get": "GetTaskResult",
    "tasks/result": "GetTaskPayloadResult",
    "tasks/list": "ListTasksResult",
    "tasks/cancel": "CancelTaskResult",
    "server/discover": "DiscoverResult",
    "subscriptions/listen": "SubscriptionsListenResult",
}
# 2025-11-25: requests whose params may carry `task` (TaskAugmentedRequestParams) get CreateTaskResult.
TASK_AUGMENTABLE = frozenset({"tools/call", "sampling/createMessage", "elicitation/create"})
# Error codes some version gives a definition of its own (the others get the generic error envelope).
CODES_WITH_DEFINITIONS = frozenset({-32700, -32600, -32601, -32602, -32603, -32020, -32021, -32022, -32042})
INPUT_REQUIRED = "input_required"
COMPLETE = "complete"

_UNION_ALIAS = re.compile(r"^(Client|Server)(Request|Notification|Result)$|^JSONRPC")


@dataclass(frozen=True, slots=True)
class Target:
    """One compiled check: the definition a message must satisfy in one version."""

    version: str
    definition: str  # what the report names, e.g. "CallToolResult"
    validator: Any  # jsonschema_rs validator
    schema: dict  # what was compiled: a small wrapper whose $refs point into the registry's document
    note: str | None = None  # why the generic envelope was used


def _const(node: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(node, dict):
            return None
        node = node.get(k)
    return node


class Catalog:
    """Dispatch tables and compiled validators of one protocol version."""

    def __init__(self, version: str):
        self.version = version
        doc = load_schema(version)
        self.dialect = doc["$schema"]
        key = defs_key(doc)
        self.defs: dict[str, Any] = doc[key]
        self.uri = f"urn:mcptrace:mcp-schema:{version}"
        self._ref_prefix = f"{self.uri}#/{key}/"
        self._registry = jsonschema_rs.Registry([(self.uri, doc)])
        self.requests, self.notifications = self._method_tables()
        self.results = {m: d for m, d in RESULT_BY_METHOD.items() if m in self.requests and d in self.defs}
        self.error_defs, self.error_envelopes = self._error_tables()
        self.request_env = "JSONRPCRequest"
        self.notification_env = "JSONRPCNotification"
        self.result_env = (
            "JSONRPCResultResponse" if "JSONRPCResultResponse" in self.defs else "JSONRPCResponse"
        )
        self.error_env = "JSONRPCErrorResponse" if "JSONRPCErrorResponse" in self.defs else "JSONRPCError"
        self.has_tasks = "CreateTaskResult" in self.defs
        self.modern = version == MODERN_VERSION
        self._targets: dict[tuple, Target] = {}

    # -- tables derived from the schema --------------------------------------------------------

    def _method_tables(self) -> tuple[dict[str, str], dict[str, str]]:
        requests: dict[str, str] = {}
        notes: dict[str, str] = {}
        typed = []
        for name, d in self.defs.items():
            if _UNION_ALIAS.match(name):
                continue
            method = _const(d, "properties", "method", "const")
            if isinstance(method, str) and name.endswith(("Request", "Notification")):
                typed.append((name, method, "jsonrpc" in d.get("properties", {})))
        # From 2025-11-25 on the method types carry the envelope; in 2026-07-28 the ones without it
        # (CreateMessageRequest, ElicitRequest, ListRootsRequest) only travel inside an
        # InputRequiredResult and are no JSON-RPC messages of that version.
        enveloped = any(has for _, _, has in typed)
        for name, method, has in typed:
            if enveloped and not has:
                continue
            (requests if name.endswith("Request") else notes)[method] = name
        self.method_defs_have_envelope = enveloped
        return requests, notes

    def _error_tables(self) -> tuple[dict[int, str], dict[int, str]]:
        bare: dict[int, str] = {}
        envelopes: dict[int, str] = {}
        for name, d in self.defs.items():
            code = _const(d, "properties", "code", "const")
            if type(code) is int:
                bare[code] = name  # an `error` object with a fixed code (ParseError, ...)
            for branch in _const(d, "properties", "error", "allOf") or ():
                code = _const(branch, "properties", "code", "const")
                if type(code) is int:
                    envelopes[code] = name  # a whole response (UnsupportedProtocolVersionError, ...)
        return bare, envelopes

    # -- compiled targets ----------------------------------------------------------------------

    def _ref(self, name: str) -> dict[str, str]:
        return {"$ref": self._ref_prefix + name}

    def _target(self, key: tuple, definition: str, body: dict[str, Any], note: str | None = None) -> Target:
        schema = {"$schema": self.dialect, **body}
        # Formats (uri, byte, uri-template) are annotations only, as 2020-12 has them by default; we
        # assert none in draft-07 either, so every version is judged alike (MCP612 checks base64).
        validator = jsonschema_rs.validator_for(schema, registry=self._registry, validate_formats=False)
        t = Target(self.version, definition, validator, schema, note)
        self._targets[key] = t
        return t

    def request(self, method: str | None) -> Target:
        """None: a method no version defines (callers fold those together so the cache stays small)."""
        key = ("request", method)
        t = self._targets.get(key)
        if t is not None:
            return t
        name = self.requests.get(method) if method is not None else None
        if name is None:
            return self._target(
                key,
                self.request_env,
                self._ref(self.request_env),
                f"the method is no request of {self.version}: envelope only",
            )
        if self.method_defs_have_envelope:
            return self._target(key, name, self._ref(name))
        return self._target(key, name, {"allOf": [self._ref(self.request_env), self._ref(name)]})

    def notification(self, method: str | None) -> Target:
        key = ("notification", method)
        t = self._targets.get(key)
        if t is not None:
            return t
        name = self.notifications.get(method) if method is not None else None
        if name is None:
            return self._target(
                key,
                self.notification_env,
                self._ref(self.notification_env),
                f"the method is no notification of {self.version}: envelope only",
            )
        if self.method_defs_have_envelope:
            return self._target(key, name, self._ref(name))
        return self._target(key, name, {"allOf": [self._ref(self.notification_env), self._ref(name)]})

    def result(self, method: str | None, result: Any, request_params: dict | None) -> Target:
        """The result definition for an answer to `method` (None: the request is unknown)."""
        variant = None
        if self.modern and type(result) is dict:
            rt = result.get("resultType")
            if rt == INPUT_REQUIRED:
                variant = INPUT_REQUIRED
            elif type(rt) is str and rt != COMPLETE:
                variant = "other"  # e.g. an extension's "task": only the generic Result applies
        elif (
            self.has_tasks
            and method in TASK_AUGMENTABLE
            and request_params is not None
            and "task" in request_params
        ):
            variant = "task"
        key = ("result", method, variant)
        t = self._targets.get(key)
        if t is not None:
            if variant == "other":  # the note names this result's own value, not the cached one's
                return replace(t, note=_unknown_result_type(result, self.version))
            return t
        if variant == INPUT_REQUIRED:
            name, note = "InputRequiredResult", None
        elif variant == "task":
            name, note = "CreateTaskResult", None
        elif variant == "other":
            name, note = None, _unknown_result_type(result, self.version)
        elif method is None:
            name, note = None, "the answered request is unknown: envelope only"
        else:
            name = self.results.get(method)
            note = None if name else f"{method} has no result definition in {self.version}: envelope only"
        if name is None:
            return self._target(key, self.result_env, self._ref(self.result_env), note)
        body = {"allOf": [self._ref(self.result_env)], "properties": {"result": self._ref(name)}}
        return self._target(key, name, body, note)

    def error(self, code: Any) -> Target:
        code = code if type(code) is int else None
        key = ("error", code)
        t = self._targets.get(key)
        if t is not None:
            return t
        env = self.error_envelopes.get(code) if code is not None else None
        if env is not None:
            return self._target(key, env, {"allOf": [self._ref(self.error_env), self._ref(env)]})
        bare = self.error_defs.get(code) if code is not None else None
        if bare is not None:
            body = {"allOf": [self._ref(self.error_env)], "properties": {"error": self._ref(bare)}}
            return self._target(key, bare, body)
        return self._target(key, self.error_env, self._ref(self.error_env))

    def definition(self, name: str) -> Target:
        """Any definition on its own (for the official per-definition examples)."""
        key = ("definition", name)
        t = self._targets.get(key)
        if t is None:
            if name not in self.defs:
                raise KeyError(f"{self.version} defines no {name!r}")
            t = self._target(key, name, self._ref(name))
        return t


@cache
def catalog(version: str) -> Catalog:
    return Catalog(version)


__all__ = ["CODES_WITH_DEFINITIONS", "RESULT_BY_METHOD", "Catalog", "Target", "catalog"]


def _unknown_result_type(result: dict, version: str) -> str:
    return f"resultType {result.get('resultType')!r} is not defined by {version}"
