"""MCP101-MCP109: the JSON-RPC envelope (JSON, `jsonrpc`, object, kind, method, params, ids). Each
rule reads one message on its own.
"""

from __future__ import annotations

from tracer.catalog.registry import method_starts, rule
from tracer.era import possible_versions
from tracer.model import KIND_BATCH as _KIND_BATCH  # (enum members as globals: tracer.model)
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import L1, L2, since

INVALID = (Kind.INVALID,)

REQ_NOTE = (Kind.REQUEST, Kind.NOTIFICATION)

JSONRPC = "JSON-RPC 2.0 §4; spec/2026-07-28/basic/index.mdx:L27"

_L3_UP = since("2025-06-18")

_L1_ONLY, _L2_ONLY = frozenset({L1}), frozenset({L2})


def _a_batch_rule_runs(m: Analysed) -> bool:
    """MCP120 (2025-06-18 on), MCP121 (2024-11-05) or MCP123 (2025-03-26) covers every version the
    message may speak."""
    versions = possible_versions(m)
    return versions <= _L3_UP or versions <= _L1_ONLY or versions <= _L2_ONLY


def _json_type(v) -> str:
    if v is None:
        return "null"
    t = type(v)
    if t is list:
        return "an array"
    if t is dict:
        return "an object"
    return {str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(t, t.__name__)


_TRANSPORT_REJECTED_BODIES = (Kind.NOTIFICATION, Kind.RESULT, Kind.ERROR)


@rule(
    "MCP101",
    "not-json",
    Severity.ERROR,
    kinds=INVALID,
    spec="JSON-RPC §4/§5.1 (Parse error); spec/2026-07-28/basic/transports/index.mdx:L29",
)
def not_json(m: Analysed, s):
    """The message is not parseable JSON, or not UTF-8.

    Every MCP message MUST be a JSON-RPC 2.0 message encoded in UTF-8; a receiver answers what it
    cannot parse with -32700 (Parse error). On stdio, lines that are not JSON (or too deep, or not
    UTF-8) are reported by MCP801/MCP802/MCP803 instead, with the stream offset and the bytes, so
    a banner line is one finding, not two.
    Example: `{"jsonrpc": "2.0", "id": 1,` (cut short).
    """
    if m.problem in ("not-json", "not-utf8", "too-deep"):
        if m.rec.transport == "stdio":
            return
        yield f"{m.reason} (a receiver answers -32700 Parse error)"


@rule(
    "MCP102",
    "bad-jsonrpc-version",
    Severity.ERROR,
    kinds=INVALID,
    spec='JSON-RPC §4, §5; schema `jsonrpc: {"const": "2.0"}`',
)
def bad_jsonrpc_version(m: Analysed, s):
    """`jsonrpc` is missing or is not exactly the string "2.0".

    Example: `{"jsonrpc": "1.0", "id": 1, "method": "tools/list"}`.
    """
    if m.problem == "bad-jsonrpc":
        yield Hit(m.reason or 'jsonrpc is not "2.0"', path="$.jsonrpc")


@rule(
    "MCP103",
    "not-an-object",
    Severity.ERROR,
    kinds=(Kind.INVALID, Kind.BATCH),
    spec="JSON-RPC §4, §6 (an empty array is an Invalid Request); JSONRPCMessage union in "
    "schema/2026-07-28/schema.ts:L26",
)
def not_an_object(m: Analysed, s):
    """The top-level JSON value (or a batch member) is not an object.

    Arrays at the top level are batches (MCP120-MCP123); anything else is no JSON-RPC message.
    An empty array `[]` is no message in any version: where the version is known MCP120, MCP121 or
    MCP123 reports it, else (traffic of unknown version) this rule does.
    On stdio a bare scalar line is MCP801's (a stray line), so only batch members are reported here.
    Example: `"hello"` or `42`.
    """
    if m.kind is _KIND_BATCH:
        if m.obj == [] and not _a_batch_rule_runs(m):
            yield "an empty array is no batch and no message in any JSON-RPC version (Invalid Request)"
        return
    if m.problem == "not-object":
        if m.rec.transport == "stdio" and m.batch_seq is None:
            return
        yield m.reason or "not a JSON object"


@rule("MCP104", "unclassifiable", Severity.ERROR, kinds=INVALID, spec="JSON-RPC §4, §4.1, §5")
def unclassifiable(m: Analysed, s):
    """The object has no `method` and neither `result` nor `error`, so it is no request,
    notification or response.

    Example: `{"jsonrpc": "2.0", "id": 3}`.
    """
    if m.problem == "unclassifiable":
        yield m.reason or "cannot classify"


@rule(
    "MCP105",
    "method-not-string",
    Severity.ERROR,
    kinds=INVALID,
    spec='JSON-RPC §4; schema `"method": {"type": "string"}`',
)
def method_not_string(m: Analysed, s):
    """`method` is not a string. Example: `{"jsonrpc": "2.0", "id": 1, "method": 7}`."""
    if m.problem == "method-not-string":
        yield Hit(f"method is {type(m.obj.get('method')).__name__}, not a string", path="$.method")


@rule(
    "MCP106",
    "reserved-rpc-method",
    Severity.ERROR,
    kinds=REQ_NOTE,
    spec="JSON-RPC §4",
    possible=method_starts("rpc."),
)
def reserved_rpc_method(m: Analysed, s):
    """The method name begins with `rpc.`, which JSON-RPC reserves for rpc-internal methods.

    Example: `{"jsonrpc": "2.0", "id": 1, "method": "rpc.discover"}`.
    """
    if m.method is None or not m.method.startswith("rpc."):
        return None
    return Hit(f"method {m.method!r} uses the reserved prefix 'rpc.'", path="$.method")


@rule(
    "MCP107",
    "params-not-object",
    Severity.ERROR,
    kinds=REQ_NOTE,
    spec='schema `JSONRPCRequest.params.type = "object"`; spec/2026-07-28/basic/index.mdx:L40-42',
)
def params_not_object(m: Analysed, s):
    """`params` is present but is not a JSON object. MCP never uses by-position (array) params.

    Example: `{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": ["echo"]}`.
    """
    obj = m.obj
    if "params" not in obj or type(obj["params"]) is dict:
        return None
    return Hit(f"params is {_json_type(obj['params'])}, not an object", path="$.params")


@rule(
    "MCP108",
    "null-request-id",
    Severity.ERROR,
    kinds=INVALID,
    spec="spec/2026-07-28/basic/index.mdx:L47; spec/2025-11-25/basic/index.mdx:L47",
)
def null_request_id(m: Analysed, s):
    """A request `id` is `null`. MCP request ids MUST NOT be null.

    Example: `{"jsonrpc": "2.0", "id": null, "method": "tools/list"}`.
    """
    if m.problem == "null-id" and m.method is not None:
        yield Hit("request id is null", path="$.id")


@rule(
    "MCP109",
    "bad-id-type",
    Severity.ERROR,
    kinds=INVALID,
    spec='spec/2026-07-28/basic/index.mdx:L46; schema `RequestId.type = ["string", "integer"]`',
)
def bad_id_type(m: Analysed, s):
    """A request or result `id` is not a string or an integer: a boolean, an object, an array, a
    number with a fractional part such as `1.5`, or (for a result) null or missing.

    Example: `{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}`.
    """
    if m.problem == "bad-id" or (m.problem == "null-id" and m.method is None):
        yield Hit(m.reason or "id is not a string or an integer", path="$.id")
