"""The typed model of a capture record, checked where a record is read (the one boundary for
untrusted capture input: nothing past `tracer.capture.record_from_dict` trusts a raw field).

A capture file may be hand-edited, written by another tool, or crafted; every member the reader
and the analyser rely on is checked here for its JSON type (and integers for the signed 64-bit
range the viewer's row table and the pairing arrays hold). A member of the wrong type raises
`RecordFieldError` (a ValueError) naming it, which the reader reports as a broken capture record
with its line number; reading goes on. Members this version does not know are kept unchecked:
nothing reads them (a newer writer's additions stay readable).

Hand-written rather than a pydantic or msgspec model, measured (tests/bench/bench_record_model.py):
checking the envelope of an HTTP record already parsed by orjson, these checks took 1 unit of time,
msgspec.convert 1.6 and a pydantic model 4.3 to 6.9. msgspec decoding the line straight into a Struct
would beat orjson + these checks on HTTP records (about 1.5x), but not orjson alone on the plain stdio
message record, which is most of every capture and never reaches these checks (its fast path only
type-tests seven members), so the reader keeps one parser.
"""

from __future__ import annotations

from typing import Any

_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1


class RecordFieldError(ValueError):
    """A capture record member of the wrong type."""


def _what(v: Any) -> str:
    t = type(v)
    if t is bool:
        return "a boolean"
    if t is int:  # (where an integer is expected, only one out of range is wrong)
        return "an integer" if _I64_MIN <= v <= _I64_MAX else "an integer beyond 64 bits"
    if t is dict:
        return "an object"
    if t is list:
        return "an array"
    if t is float:
        return "a number with a fraction or exponent"
    if t is str:
        return "a string"
    return "null" if v is None else t.__name__


def is_int64(v: Any) -> bool:
    return type(v) is int and _I64_MIN <= v <= _I64_MAX


_NONE = type(None)
# The JSON types each member may have (None: absent); integers are also range-checked.
_INT = frozenset({int, _NONE})
_STR = frozenset({str, _NONE})
_KEY = frozenset({str, int, _NONE})  # used as a dict key or compared: a string or an integer
_BOOL = frozenset({bool, _NONE})
_HEADERS = frozenset({list, dict, _NONE})  # and each pair checked (_headers_ok)
_EXPECTED = {
    _INT: "an integer",
    _STR: "a string",
    _KEY: "a string or an integer",
    _BOOL: "a boolean",
    _HEADERS: "a list of [name, value] string pairs",
}


def _headers_ok(v: Any) -> bool:
    """[[name, value], ...] as written; a {name: value} object as older captures wrote it."""
    if type(v) is list:
        try:  # (unpacking tests the length: a fifth faster than len() and two subscripts)
            for p in v:
                if type(p) is not list:
                    return False
                name, value = p
                if type(name) is not str or type(value) is not str:
                    return False
        except ValueError:
            return False
        return True
    if type(v) is dict:
        for x in v.values():  # (JSON object keys are strings)
            if type(x) is not str:
                return False
    return True


HTTP_MEMBERS: dict[str, frozenset] = {
    "method": _STR,
    "url": _STR,
    "status": _INT,
    "flow": _KEY,
    "content_type": _STR,
    "request_t_ns": _INT,
    "req_headers": _HEADERS,
    "resp_headers": _HEADERS,
    "error": _STR,
    "body_bytes": _INT,
    "server": _STR,
    "http_version": _STR,
}
SSE_MEMBERS: dict[str, frozenset] = {"id": _STR, "event": _STR, "stream": _KEY, "retry": _INT}
DATA_MEMBERS: dict[str, frozenset] = {
    "event": _STR,
    "stream": _KEY,
    "reason": _STR,
    "why": _STR,
    "code": _INT,
    "signal": _KEY,
    "id": _STR,
    "retry": _INT,
    "name": _STR,
    "uri": _STR,
    "url": _STR,
    "first": _BOOL,
    "count": _INT,
    "text": _STR,
    "level": _STR,
    "server": _STR,
    "events": _INT,
    "messages": _INT,
    "retry_seen": _BOOL,
    "unterminated": _STR,
    "tool": _STR,
    "redacted": _INT,  # (a message or stderr line: occurrences of a known credential hidden in it)
}


def _members(obj: dict, name: str, spec: dict[str, frozenset]) -> None:
    # (one pass over the members present, no call per member: HTTP captures read this per record)
    sget = spec.get
    for key, v in obj.items():
        allowed = sget(key)
        if allowed is None:
            continue
        t = type(v)
        if (
            t not in allowed
            or (t is int and not _I64_MIN <= v <= _I64_MAX)
            or (allowed is _HEADERS and not _headers_ok(v))
        ):
            raise RecordFieldError(
                f"'{name}.{key}' is {_what(v) if t not in allowed else 'malformed'}, not {_EXPECTED[allowed]}"
            )


def _object(obj: dict, name: str, spec: dict[str, frozenset]) -> dict | None:
    v = obj.get(name)
    if v is None:
        return None
    if type(v) is not dict:
        raise RecordFieldError(f"'{name}' is {_what(v)}, not an object")
    _members(v, name, spec)
    return v


def check_envelope(
    obj: dict,
) -> tuple[str, str, int | None, bool, bool, dict | None, dict | None, dict | None]:
    """(transport, conn, offset, eol, dir_inferred, http, sse, data) of a stored record, each of its
    type; raises RecordFieldError for the first member that is not."""
    get = obj.get
    transport = get("transport", "stdio")
    if type(transport) is not str:
        raise RecordFieldError(f"'transport' is {_what(transport)}, not a string")
    conn = get("conn", "0")
    if type(conn) is not str:
        if not is_int64(conn):  # an integer connection id is read as its digits
            raise RecordFieldError(f"'conn' is {_what(conn)}, not a string")
        conn = str(conn)
    offset = get("offset")
    if offset is not None and not (is_int64(offset) and offset >= 0):
        raise RecordFieldError(
            f"'offset' is {_what(offset) if type(offset) is not int else 'negative'}, not a byte offset"
        )
    eol = get("eol", True)
    if type(eol) is not bool:
        raise RecordFieldError(f"'eol' is {_what(eol)}, not a boolean")
    inferred = get("dir_inferred", False)
    if type(inferred) is not bool:
        raise RecordFieldError(f"'dir_inferred' is {_what(inferred)}, not a boolean")
    return (
        transport,
        conn,
        offset,
        eol,
        inferred,
        _object(obj, "http", HTTP_MEMBERS),
        _object(obj, "sse", SSE_MEMBERS),
        _object(obj, "data", DATA_MEMBERS),
    )


HEADER_MEMBERS: dict[str, frozenset] = {
    "format": _STR,
    "version": _INT,
    "tool": _STR,
    "started": _STR,
    "transport": _STR,
    "upstream": _STR,
    "label": _STR,
    "redacted": _BOOL,
}


def check_header(obj: dict) -> None:
    """The members of a header record that the summary, the viewer and the exporters show."""
    _members(obj, "header", HEADER_MEMBERS)
    command = obj.get("command")
    if command is not None and (type(command) is not list or any(type(x) is not str for x in command)):
        raise RecordFieldError(f"'header.command' is {_what(command)}, not a list of strings")


def check_int64(name: str, v: Any) -> None:
    if not is_int64(v):
        raise RecordFieldError(f"'{name}' is {_what(v)}, not an integer")


def check_t_ns(v: Any) -> None:
    """A timestamp: nanoseconds since 1970, so that the difference of two (a latency) is itself a
    64-bit integer, as the summary's and the viewer's tables hold it."""
    if not is_int64(v) or v < 0:
        raise RecordFieldError(
            f"'t_ns' is {_what(v) if type(v) is not int else 'negative'}, not a time in nanoseconds"
        )
