"""Classify one message on its own: request, notification, result, error, invalid, or batch.

Classification never needs history. It follows JSON-RPC 2.0 member rules (method+id = request,
method without id = notification, result = result, error = error), with MCP's stricter ids: an id
must be a string or an integer, never null, a fraction, a boolean, an object or an array.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import orjson

from tracer.model import KIND_BATCH as _KIND_BATCH  # (enum members as globals: tracer.model)
from tracer.model import KIND_ERROR as _KIND_ERROR
from tracer.model import KIND_INVALID as _KIND_INVALID
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Kind
from tracer.protocol import META_SUBSCRIPTION_ID

_MISSING = object()


@dataclass(slots=True)
class Classified:
    kind: Kind
    obj: Any = None
    method: str | None = None
    id: Any = None
    idkey: tuple | None = None
    reason: str | None = None  # why it is invalid
    problem: str | None = None  # machine code for the reason (see REASONS)
    members: list[Classified] | None = None
    json_ok: bool = True


# Machine codes for invalid messages, and the rule that reports each.
REASONS = {
    "not-utf8": "MCP101",
    "not-json": "MCP101",
    "not-object": "MCP103",
    "bad-jsonrpc": "MCP102",
    "unclassifiable": "MCP104",
    "method-not-string": "MCP105",
    "null-id": "MCP108",
    "bad-id": "MCP109",
    "result-and-error": "MCP113",
    "too-deep": "MCP101",
}


def id_key(value: Any) -> tuple | None:
    """The id with its JSON type: `1` and `"1"` differ; `1` and `1.0` are the same JSON number."""
    t = type(value)
    if t is str:
        return ("s", value)
    if t is int:
        return ("n", value)
    if t is float and value.is_integer():
        return ("n", int(value))
    return None


def id_problem(value: Any) -> str | None:
    """Why a request/response id is not acceptable for MCP, or None."""
    t = type(value)
    if t is str or t is int:
        return None
    if value is None:
        return "null-id"
    if t is float:
        return None if value.is_integer() else "bad-id"
    return "bad-id"


def _describe_id(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is bool:
        return "a boolean"
    if type(value) is float:
        return f"the number {value!r} (not an integer)"
    if type(value) is dict:
        return "an object"
    if type(value) is list:
        return "an array"
    return type(value).__name__


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(raw: bytes | str) -> tuple[Any, str | None, str | None]:
    """(value, problem code, reason). orjson first; the standard library only for what orjson refuses
    but JSON allows (integers beyond 64 bits, lone surrogate escapes)."""
    try:
        return orjson.loads(raw), None, None
    except orjson.JSONDecodeError as exc:
        first = str(exc)
    if isinstance(raw, bytes | bytearray | memoryview):
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, "not-utf8", f"not UTF-8: invalid byte at offset {exc.start}"
    else:
        text = raw
    if not text.strip():
        return None, "not-json", "empty message"
    try:
        return json.loads(text, parse_constant=_reject_constant), None, None
    except RecursionError:
        return None, "too-deep", "JSON nested too deeply to parse"
    except ValueError:
        if "recursion limit" in first:
            return None, "too-deep", "JSON nested too deeply to parse"
        return None, "not-json", f"not JSON: {first}"


def _float_key(obj: dict) -> bool:
    """Whether a value the analysis keys on (the id, a cancel's `requestId`, a progress token, a
    subscription id) came from orjson as a float: written with a fraction or an exponent, or an
    integer beyond 64 bits, which orjson rounds (18446744073709551617 and ...618 would be one
    token). Only those few places are looked at: a walk of every value would cost each message."""
    if type(obj.get("id")) is float:
        return True
    params = obj.get("params")
    if type(params) is dict:
        if type(params.get("requestId")) is float or type(params.get("progressToken")) is float:
            return True
        meta = params.get("_meta")
    else:
        result = obj.get("result")
        meta = result.get("_meta") if type(result) is dict else None
    return type(meta) is dict and (
        type(meta.get("progressToken")) is float or type(meta.get(META_SUBSCRIPTION_ID)) is float
    )


def _has_float_key(obj: Any) -> bool:
    t = type(obj)
    if t is dict:
        return _float_key(obj)
    if t is list:
        return any(type(m) is dict and _float_key(m) for m in obj)
    return False


def exact_json(raw: bytes | str, fallback: Any) -> Any:
    """The standard library's parse of `raw`, which keeps integers beyond 64 bits exact (orjson
    turns them into floats, so `2**64 + 1` would become `2**64`). `fallback` if it cannot."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes | bytearray | memoryview) else raw
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError, UnicodeDecodeError):
        return fallback


_SUB = META_SUBSCRIPTION_ID
_NO_META: dict = {}
_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_REQUEST, _NOTIFICATION, _RESULT, _ERROR = Kind.REQUEST, Kind.NOTIFICATION, Kind.RESULT, Kind.ERROR


def classify_common(raw: bytes | str) -> tuple | None:
    """The hot path of `classify_raw`, for the messages nearly all traffic is made of: one JSON
    object with `"jsonrpc": "2.0"` that is a request (string or integer id), a notification, or a
    result/error with such an id. Returns (kind, obj, method, id, idkey), exactly what
    `classify_raw` gives for it, with no `Classified` built; None for anything else (then call
    `classify_raw`, which sorts out every other case and says why)."""
    try:
        obj = _loads(raw)
    except _JSONDecodeError:
        return None
    if type(obj) is not dict:
        return None
    get = obj.get
    if get("jsonrpc") != "2.0":
        return None
    method = get("method", _MISSING)
    msg_id = get("id", _MISSING)
    ti = type(msg_id)
    if type(method) is str:
        # (what _float_key looks at, inline and only where each kind carries it: every message's path)
        params = get("params")
        if type(params) is dict:  # (`in` first: cheaper than a .get for what is nearly always absent)
            meta = params.get("_meta")
            if type(meta) is not dict:
                meta = _NO_META
            if msg_id is _MISSING:
                if (
                    ("progressToken" in params and type(params["progressToken"]) is float)
                    or ("requestId" in params and type(params["requestId"]) is float)
                    or (_SUB in meta and type(meta[_SUB]) is float)
                ):
                    return None
                return (_NOTIFICATION, obj, method, None, None)
            if "progressToken" in meta and type(meta["progressToken"]) is float:
                return None
        elif msg_id is _MISSING:
            return (_NOTIFICATION, obj, method, None, None)
        kind = _REQUEST
    elif method is _MISSING and ("result" in obj) != ("error" in obj):
        if "result" in obj:
            kind = _RESULT
            result = obj["result"]
            if type(result) is dict and "_meta" in result:
                meta = result["_meta"]
                if type(meta) is dict and _SUB in meta and type(meta[_SUB]) is float:
                    return None
        else:
            kind = _ERROR
        method = None
    else:
        return None
    if ti is int:
        return (kind, obj, method, msg_id, ("n", msg_id))
    if ti is str:
        return (kind, obj, method, msg_id, ("s", msg_id))
    return None  # no id on a response, or an id of another type (a float id is re-read exactly)


def classify_raw(raw: bytes | str) -> Classified:
    obj, problem, reason = parse_json(raw)
    if problem is not None:
        return Classified(_KIND_INVALID, reason=reason, problem=problem, json_ok=False)
    if _has_float_key(obj):
        # Rare: an id, requestId or token written as a number orjson could only give as a float (a
        # fraction, an exponent, or an integer beyond 64 bits). Re-read it exactly so 1.0 stays a
        # float while 18446744073709551617 stays that integer.
        obj = exact_json(raw, obj)
    return classify_value(obj)


def classify_value(obj: Any, *, in_batch: bool = False) -> Classified:
    t = type(obj)
    if t is dict:
        # The common case first (a well-formed message), without building anything twice.
        get = obj.get
        if get("jsonrpc") == "2.0":
            method = get("method", _MISSING)
            if type(method) is str:
                if "id" not in obj:
                    return Classified(_KIND_NOTIFICATION, obj, method)
                msg_id = obj["id"]
                ti = type(msg_id)
                if ti is int:
                    return Classified(_KIND_REQUEST, obj, method, msg_id, ("n", msg_id))
                if ti is str:
                    return Classified(_KIND_REQUEST, obj, method, msg_id, ("s", msg_id))
            elif method is _MISSING and "id" in obj and ("result" in obj) != ("error" in obj):
                msg_id = obj["id"]
                ti = type(msg_id)
                kind = _KIND_RESULT if "result" in obj else _KIND_ERROR
                if ti is int:
                    return Classified(kind, obj, None, msg_id, ("n", msg_id))
                if ti is str:
                    return Classified(kind, obj, None, msg_id, ("s", msg_id))
        return _classify_object(obj)
    if t is list and not in_batch:
        return Classified(_KIND_BATCH, obj=obj, members=[classify_value(m, in_batch=True) for m in obj])
    what = "an array" if t is list else "null" if obj is None else f"a {type(obj).__name__}"
    return Classified(Kind.INVALID, obj=obj, reason=f"not a JSON object (it is {what})", problem="not-object")


def _classify_object(obj: dict) -> Classified:
    """Every case of a JSON object, with the reason when it is not a valid message."""
    jsonrpc = obj.get("jsonrpc", _MISSING)
    if jsonrpc != "2.0" or type(jsonrpc) is not str:
        why = "missing" if jsonrpc is _MISSING else f'{jsonrpc!r}, not "2.0"'
        return Classified(
            _KIND_INVALID,
            obj=obj,
            reason=f"jsonrpc is {why}",
            problem="bad-jsonrpc",
            method=obj.get("method") if type(obj.get("method")) is str else None,
        )
    method = obj.get("method", _MISSING)
    msg_id = obj.get("id", _MISSING)
    if method is not _MISSING:
        if type(method) is not str:
            return Classified(
                _KIND_INVALID, obj=obj, reason="method is not a string", problem="method-not-string"
            )
        if msg_id is _MISSING:
            return Classified(_KIND_NOTIFICATION, obj=obj, method=method)
        bad = id_problem(msg_id)
        if bad is not None:
            return Classified(
                _KIND_INVALID,
                obj=obj,
                method=method,
                id=msg_id,
                problem=bad,
                reason=f"request id is {_describe_id(msg_id)}",
            )
        return Classified(_KIND_REQUEST, obj=obj, method=method, id=msg_id, idkey=id_key(msg_id))
    has_result = "result" in obj
    has_error = "error" in obj
    if has_result and has_error:
        return Classified(
            _KIND_INVALID,
            obj=obj,
            id=None if msg_id is _MISSING else msg_id,
            idkey=id_key(msg_id),
            reason="has both result and error",
            problem="result-and-error",
        )
    if not has_result and not has_error:
        return Classified(
            _KIND_INVALID,
            obj=obj,
            id=None if msg_id is _MISSING else msg_id,
            idkey=id_key(msg_id),
            reason="neither method nor result/error: cannot classify",
            problem="unclassifiable",
        )
    if has_result:
        if msg_id is _MISSING or id_problem(msg_id) is not None:
            what = "missing" if msg_id is _MISSING else _describe_id(msg_id)
            return Classified(
                _KIND_INVALID,
                obj=obj,
                id=None if msg_id is _MISSING else msg_id,
                reason=f"result id is {what}",
                problem="null-id" if msg_id is None else "bad-id",
            )
        return Classified(_KIND_RESULT, obj=obj, id=msg_id, idkey=id_key(msg_id))
    # An error response: the id may be absent or null when the request's id could not be read
    # (JSON-RPC -32700/-32600); MCP117/MCP118 judge that, classification accepts it.
    if msg_id is _MISSING or msg_id is None:
        return Classified(_KIND_ERROR, obj=obj, id=None)
    if id_problem(msg_id) is not None:
        return Classified(
            Kind.INVALID, obj=obj, id=msg_id, reason=f"error id is {_describe_id(msg_id)}", problem="bad-id"
        )
    return Classified(_KIND_ERROR, obj=obj, id=msg_id, idkey=id_key(msg_id))
