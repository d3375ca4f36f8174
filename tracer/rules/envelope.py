"""MCP1xx: the JSON-RPC envelope. Each rule reads one message on its own."""

from __future__ import annotations

from tracer.classify import exact_json
from tracer.era import possible_versions
from tracer.http.state import current
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import ALL_REQUEST_METHODS, L1, L2, MODERN_EXTENSION_REQUESTS, since
from tracer.rules.registry import MESSAGE_KINDS, method_starts, rule

INVALID = (Kind.INVALID,)
REQ_NOTE = (Kind.REQUEST, Kind.NOTIFICATION)
JSONRPC = "JSON-RPC 2.0 §4; spec/2026-07-28/basic/index.mdx:L27"


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
    if m.kind is Kind.BATCH:
        if m.obj == [] and not _a_batch_rule_runs(m):
            yield "an empty array is no batch and no message in any JSON-RPC version (Invalid Request)"
        return
    if m.problem == "not-object":
        if m.rec.transport == "stdio" and m.batch_seq is None:
            return
        yield m.reason or "not a JSON object"


_L3_UP = since("2025-06-18")
_L1_ONLY, _L2_ONLY = frozenset({L1}), frozenset({L2})


def _a_batch_rule_runs(m: Analysed) -> bool:
    """MCP120 (2025-06-18 on), MCP121 (2024-11-05) or MCP123 (2025-03-26) covers every version the
    message may speak."""
    versions = possible_versions(m)
    return versions <= _L3_UP or versions <= _L1_ONLY or versions <= _L2_ONLY


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


def _json_type(v) -> str:
    if v is None:
        return "null"
    t = type(v)
    if t is list:
        return "an array"
    if t is dict:
        return "an object"
    return {str: "a string", bool: "a boolean", int: "a number", float: "a number"}.get(t, t.__name__)


def _integral_float(v) -> bool:
    return type(v) is float and v.is_integer()


def _really_float(m: Analysed, *path: str) -> bool:
    """orjson reads integers beyond 64 bits as floats: re-read the message exactly to tell
    `1.0` (written with a fraction) from 18446744073709551617 (a plain integer)."""
    if m.batch_seq is not None:
        return True
    value = exact_json(m.rec.raw, None)
    for key in path:
        value = value.get(key) if type(value) is dict else None
    return type(value) is float


@rule(
    "MCP110",
    "integral-id-written-as-float",
    Severity.WARNING,
    spec="JSON-RPC §4 (Numbers SHOULD NOT contain fractional parts) (inferred)",
)
def integral_id_written_as_float(m: Analysed, s):
    """An `id` or `progressToken` is an integral number written with a fraction or exponent
    (`1.0`, `1e3`). Peers may not match `1.0` to `1`.

    Example: `{"jsonrpc": "2.0", "id": 1.0, "method": "tools/list"}`.
    """
    meta = m.meta
    # the common case in one test (it runs on every message): no float id, no progressToken anywhere
    if (
        type(m.id) is not float
        and (meta is None or "progressToken" not in meta)
        and m.method != "notifications/progress"
    ):
        return None
    out = None
    if _integral_float(m.id):
        out = [Hit(f"id {m.id!r} is an integer written with a fraction or exponent", path="$.id")]
    if (
        meta is not None
        and _integral_float(meta.get("progressToken"))
        and _really_float(m, "params", "_meta", "progressToken")
    ):
        out = (out or []) + [
            Hit(
                "progressToken is an integer written with a fraction or exponent",
                path="$.params._meta.progressToken",
            )
        ]
    if m.method == "notifications/progress":
        p = m.params
        if (
            p is not None
            and _integral_float(p.get("progressToken"))
            and _really_float(m, "params", "progressToken")
        ):
            out = (out or []) + [
                Hit(
                    "progressToken is an integer written with a fraction or exponent",
                    path="$.params.progressToken",
                )
            ]
    return out


@rule(
    "MCP111",
    "notification-with-id",
    Severity.ERROR,
    kinds=(Kind.REQUEST,),
    possible=method_starts("notifications/"),
    spec="spec/2026-07-28/basic/index.mdx:L172; spec/2025-11-25/basic/index.mdx:L108",
)
def notification_with_id(m: Analysed, s):
    """A notification method (`notifications/*`) is sent with an `id`. Notifications MUST NOT
    include an ID.

    Example: `{"jsonrpc": "2.0", "id": 4, "method": "notifications/initialized"}`.
    """
    if m.method is None or not m.method.startswith("notifications/"):
        return None
    return Hit(f"{m.method} is a notification but carries id {m.id!r}", path="$.id")


_REQUEST_METHODS = ALL_REQUEST_METHODS | MODERN_EXTENSION_REQUESTS


@rule(
    "MCP112",
    "request-without-id",
    Severity.ERROR,
    kinds=(Kind.NOTIFICATION,),
    spec="schema: per-method request types require `id` (e.g. CallToolRequest.required)",
)
def request_without_id(m: Analysed, s):
    """A method the schema defines as a request (for example `tools/call`, `initialize`,
    `server/discover`) is sent without an `id`, as a notification, so it can never be answered.

    Example: `{"jsonrpc": "2.0", "method": "tools/list"}`.
    """
    if m.method not in _REQUEST_METHODS:
        return None
    return f"{m.method} is a request method but has no id"


@rule(
    "MCP113",
    "result-and-error",
    Severity.ERROR,
    kinds=INVALID,
    spec="spec/2024-11-05/basic/messages.mdx:L51; JSON-RPC §5",
)
def result_and_error(m: Analysed, s):
    """A response has both `result` and `error`. (A response with neither is MCP104.)

    Example: `{"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": -1, "message": "x"}}`.
    """
    if m.problem == "result-and-error":
        yield "response has both result and error"


@rule(
    "MCP114",
    "result-not-object",
    Severity.ERROR,
    kinds=(Kind.RESULT,),
    spec="spec/2026-07-28/basic/index.mdx:L71-72; schema `Result` is an object",
)
def result_not_object(m: Analysed, s):
    """`result` is not a JSON object (for example `null`, an array or a string).

    Example: `{"jsonrpc": "2.0", "id": 1, "result": null}`.
    """
    r = m.obj.get("result")
    if type(r) is dict:
        return None
    return Hit(f"result is {_json_type(r)}, not an object", path="$.result")


_AN_OBJECT: dict = {}


def _is_int(v) -> bool:
    return (type(v) is int) or (type(v) is float and v.is_integer())


@rule(
    "MCP115",
    "malformed-error",
    Severity.ERROR,
    kinds=(Kind.ERROR,),
    spec='spec/2026-07-28/basic/index.mdx:L104-105; schema `Error.required = ["code", "message"]`',
)
def malformed_error(m: Analysed, s):
    """The error object is malformed: not an object, `code` or `message` missing, `code` not an
    integer, or `message` not a string.

    Example: `{"jsonrpc": "2.0", "id": 1, "error": {"code": "oops"}}`.
    """
    err = m.obj.get("error")
    if type(err) is not dict:
        return Hit(f"error is {_json_type(err)}, not an object", path="$.error")
    code, msg = err.get("code"), err.get("message")
    if _is_int(code) and type(msg) is str:
        return None
    out = []
    if "code" not in err:
        out.append(Hit("error has no code", path="$.error"))
    elif not _is_int(code):
        out.append(Hit(f"error.code is {code!r}, not an integer", path="$.error.code"))
    if "message" not in err:
        out.append(Hit("error has no message", path="$.error"))
    elif type(msg) is not str:
        out.append(Hit(f"error.message is {_json_type(msg)}, not a string", path="$.error.message"))
    return out


MAX_ERROR_MESSAGE = 300


@rule(
    "MCP116",
    "long-error-message",
    Severity.WARNING,
    kinds=(Kind.ERROR,),
    spec="schema/2026-07-28/schema.ts:L247 (concise single sentence); JSON-RPC §5.1",
)
def long_error_message(m: Analysed, s):
    """`error.message` is not a concise single sentence: it spans lines or is longer than 300
    characters (put details in `error.data`).

    Example: an error whose message is a whole Python traceback.
    """
    err = m.error
    msg = err.get("message") if err else None
    if type(msg) is not str or (len(msg) <= MAX_ERROR_MESSAGE and "\n" not in msg.strip()):
        return None
    why = "spans several lines" if "\n" in msg.strip() else f"is {len(msg)} characters long"
    return Hit(
        f"error.message {why}; keep it one short sentence and put details in data", path="$.error.message"
    )


_UNREADABLE_ID_CODES = (-32700, -32600)
_TRANSPORT_REJECTED_BODIES = (Kind.NOTIFICATION, Kind.RESULT, Kind.ERROR)


def _no_id_by_transport(m: Analysed, s) -> bool:
    """Streamable HTTP lets an error without id answer an HTTP-level rejection: a foreign `Origin`
    ("MUST respond with HTTP 403 Forbidden. The HTTP response body MAY comprise a JSON-RPC error
    response that has no id") and a notification or response the server cannot accept (an HTTP error
    status whose body "MAY comprise a JSON-RPC error response that has no id"). A request rejected by
    the transport is answered by the HTTP status too: a legacy server's 400 to a modern request
    ("rejected per server validation with 400 Bad Request", 2026-07-28 versioning), a 400 for a
    missing session, a 404 for an expired one (2025-11-25 transports). The body of such an answer
    is the transport's, not a JSON-RPC response to the request, so it may lack the id too. So is
    the error body of a refused GET or DELETE (a server without a GET stream "MUST ... return HTTP
    405 Method Not Allowed", 2025-11-25 transports): that HTTP request carried no JSON-RPC message
    whose id it could name."""
    http = m.rec.http
    if http is None or m.rec.sse is not None:
        return False
    status = http.get("status")
    if type(status) is not int or status < 400:
        return False
    cur = current(m.rec, s)
    flow = cur.flow if cur is not None else None
    if flow is None:
        return False
    if status == 403 and "origin" in flow.req_map:
        return True
    if flow.body_kind is None and flow.method in ("GET", "DELETE"):
        return True
    return flow.body_kind in _TRANSPORT_REJECTED_BODIES or flow.body_kind is Kind.REQUEST


@rule(
    "MCP117",
    "error-without-id",
    Severity.ERROR,
    kinds=(Kind.ERROR,),
    spec="spec/2026-07-28/basic/index.mdx:L103; spec/2025-11-25/basic/index.mdx:L89",
)
def error_without_id(m: Analysed, s):
    """An error response has no `id` (or `"id": null`) although its code says the request's id was
    readable: only -32700 (Parse error) and -32600 (Invalid Request) may go without one.

    Over Streamable HTTP, an error carried by an HTTP error status (a 403 to a foreign `Origin`, a
    rejected notification or response, a request the transport refused: a legacy server's 400 to a
    modern probe, 404 for an expired session; a 405 to a GET or DELETE, which carried no JSON-RPC
    message) may go without an id: the HTTP status answers.

    Example: `{"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}}`.
    """
    if m.id is not None:
        return None
    err = m.error
    code = err.get("code") if err else None
    if code in _UNREADABLE_ID_CODES or _no_id_by_transport(m, s):
        return None
    return Hit(f"error {code!r} has no id, but only -32700/-32600 errors may omit it", path="$")


@rule(
    "MCP118",
    "error-id-null",
    Severity.WARNING,
    kinds=(Kind.ERROR,),
    spec="JSON-RPC §5; schema/2025-11-25 `JSONRPCErrorResponse.id?`; schema/2024-11-05 `JSONRPCError`",
)
def error_id_null(m: Analysed, s):
    """An error response carries `"id": null`. JSON-RPC wants null when the id could not be read,
    but MCP's RequestId is a string or an integer: from 2025-11-25 omit `id` instead.

    Only the errors that may lack an id are judged here (-32700, -32600, and over Streamable HTTP
    the answer to a 403 Origin rejection, to a rejected notification or response, to a refused
    request or to a refused GET or DELETE): a null id on any other error is MCP117's error, not
    reported twice.

    Example: `{"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}`.
    """
    if m.id is not None or "id" not in m.obj:
        return None
    err = m.error
    if (err.get("code") if err else None) not in _UNREADABLE_ID_CODES and not _no_id_by_transport(m, s):
        return None  # MCP117 reports it
    return Hit(
        'error response has "id": null; MCP ids are strings or integers (omit id instead)', path="$.id"
    )


@rule(
    "MCP119",
    "meta-not-object",
    Severity.ERROR,
    kinds=MESSAGE_KINDS,
    needs="_meta",
    spec="schema: `_meta?: {...}` in RequestParams, NotificationParams and Result of every version",
)
def meta_not_object(m: Analysed, s):
    """`params._meta` or `result._meta` is present but is not an object.

    Example: `{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": "x"}}`.
    """
    # the common case in one test (every modern message has a _meta): m.meta is params._meta when
    # that is an object
    params, result = m.params, m.result
    if (params is None or m.meta is not None or "_meta" not in params) and (
        result is None or type(result.get("_meta", _AN_OBJECT)) is dict
    ):
        return None
    obj = m.obj
    out = None
    for key in ("params", "result"):
        part = obj.get(key)
        if type(part) is dict and "_meta" in part and type(part["_meta"]) is not dict:
            out = out or []
            out.append(
                Hit(f"{key}._meta is {_json_type(part['_meta'])}, not an object", path=f"$.{key}._meta")
            )
    return out


BATCH = (Kind.BATCH,)


@rule(
    "MCP120",
    "batch-removed",
    Severity.ERROR,
    kinds=BATCH,
    versions=since("2025-06-18"),
    spec="spec/2025-06-18/changelog.mdx:L12; spec/2026-07-28/basic/transports/stdio.mdx:L12",
)
def batch_removed(m: Analysed, s):
    """A JSON array (a JSON-RPC batch) is on the wire. Batching was removed in 2025-06-18: every
    message is a single request, notification or response.

    Example: `[{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]` in a 2025-06-18 session.
    """
    yield f"JSON-RPC batch of {len(m.obj)} messages; batching was removed in 2025-06-18"


@rule(
    "MCP121",
    "batch-in-2024-11-05",
    Severity.WARNING,
    kinds=BATCH,
    versions=frozenset({L1}),
    spec="schema/2024-11-05/schema.ts:L2 (JSONRPCMessage has no batch type) (inferred)",
)
def batch_in_2024_11_05(m: Analysed, s):
    """A batch array in 2024-11-05 traffic: that version's message union has no batch type (MCP
    added batching only in 2025-03-26).

    Example: `[{"jsonrpc": "2.0", "method": "notifications/initialized"}]` in a 2024-11-05 session.
    """
    yield "JSON-RPC batch in a 2024-11-05 session; that version defines no batches"


@rule(
    "MCP122",
    "initialize-in-batch",
    Severity.ERROR,
    kinds=BATCH,
    versions=frozenset({L2}),
    spec="spec/2025-03-26/basic/lifecycle.mdx:L72-76",
)
def initialize_in_batch(m: Analysed, s):
    """An `initialize` request is inside a batch; it MUST NOT be part of a JSON-RPC batch.

    Example: `[{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {...}}]`.
    """
    for i, member in enumerate(m.obj):
        if type(member) is dict and member.get("method") == "initialize":
            yield Hit("initialize is inside a batch", path=f"$[{i}]")


@rule(
    "MCP123",
    "malformed-batch",
    Severity.ERROR,
    kinds=BATCH,
    versions=frozenset({L2}),
    spec="spec/2025-03-26/basic/transports.mdx:L90-95; JSON-RPC §6",
)
def malformed_batch(m: Analysed, s):
    """The batch is empty, or mixes responses with requests/notifications (a batch holds either
    requests and notifications, or responses).

    Example: `[]`, or `[{"jsonrpc":"2.0","id":1,"result":{}}, {"jsonrpc":"2.0","method":"x"}]`.
    """
    members = m.members or []
    if not m.obj:
        yield "empty batch (JSON-RPC: Invalid Request)"
        return
    calls = sum(1 for x in members if x.kind in (Kind.REQUEST, Kind.NOTIFICATION))
    answers = sum(1 for x in members if x.kind in (Kind.RESULT, Kind.ERROR))
    if calls and answers:
        yield f"batch mixes {calls} requests/notifications with {answers} responses"
