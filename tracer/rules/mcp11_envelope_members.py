"""MCP110-MCP119: ids, results and errors of the JSON-RPC envelope, and `_meta`'s type. Each rule reads one message on its own."""

from __future__ import annotations

from tracer.catalog.registry import MESSAGE_KINDS, method_starts, rule
from tracer.classify import exact_json
from tracer.http.state import current
from tracer.model import KIND_REQUEST as _KIND_REQUEST  # (enum members as globals: tracer.model)
from tracer.model import Analysed, Hit, Kind, Severity
from tracer.protocol import ALL_REQUEST_METHODS, MODERN_EXTENSION_REQUESTS
from tracer.rules.mcp10_envelope import _TRANSPORT_REJECTED_BODIES, INVALID, _json_type

MAX_ERROR_MESSAGE = 300


_AN_OBJECT: dict = {}


_REQUEST_METHODS = ALL_REQUEST_METHODS | MODERN_EXTENSION_REQUESTS


_UNREADABLE_ID_CODES = (-32700, -32600)


def _integral_float(v) -> bool:
    return type(v) is float and v.is_integer()


def _is_int(v) -> bool:
    return (type(v) is int) or (type(v) is float and v.is_integer())


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
    return flow.body_kind in _TRANSPORT_REJECTED_BODIES or flow.body_kind is _KIND_REQUEST


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
