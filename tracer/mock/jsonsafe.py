"""JSON for the mock's answers that never raises on what a host can send.

orjson refuses three things a JSON parser accepts (tracer.classify keeps them): strings with lone
surrogates (`"\\ud800"` is legal JSON), integers beyond 64 bits and nesting deeper than 254. The mock
echoes the caller's id and quotes its params, so each of these used to cost the whole answer (or,
over stdio, the mock). Here orjson does the common case and the standard library the rest, with
`\\uXXXX` escapes, so the bytes are valid UTF-8 JSON that says what the caller sent.

Why not `tracer.safejson` (the project's serializer for reports and previews): that one writes a
lone surrogate as the visible text `\\ud800` and cuts values past 200 levels, right for a reader
but wrong for an answer: the host matches the answer to its request by the exact id, so the mock
writes the id (and what it echoes) as sent, `\\ud800` escape included, and says Unserializable
only past the interpreter's recursion limit (the error answer then leaves the value out).
"""

from __future__ import annotations

import json
from typing import Any

import orjson


class Unserializable(ValueError):
    """A value neither encoder can write (deeper than the interpreter's recursion limit, NaN...)."""


def dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    try:
        if sort_keys:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        pass
    try:
        return json.dumps(
            value, ensure_ascii=True, separators=(",", ":"), sort_keys=sort_keys, allow_nan=False
        ).encode("ascii")
    except (ValueError, TypeError, RecursionError) as exc:
        raise Unserializable(str(exc) or type(exc).__name__) from None


def loads(data: bytes) -> Any:
    """Read back what `dumps` wrote (orjson refuses the escaped lone surrogates)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def compact(value: Any, limit: int = 160) -> str:
    """A short one-line rendering for messages and logs; never raises."""
    try:
        text = dumps(value).decode()
    except Unserializable:
        text = f"<{type(value).__name__} too deep to show>"
    return text if len(text) <= limit else text[: limit - 1] + "…"
