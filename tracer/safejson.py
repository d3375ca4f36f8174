"""One safe way to write untrusted values: reports, the viewer's previews and details, mock answers.

Whatever a peer sent can reach a serializer: JSON allows lone surrogate escapes ("\\ud800"), integers
of any size and any depth, and orjson refuses all three (lone surrogates are not UTF-8, it holds
64-bit integers, it stops at 254 levels). `dumps` is orjson when it can and a tamed copy otherwise:
lone surrogates become the visible text `\\ud800` (valid UTF-8 everywhere, readable), integers stay
exact (the standard library writes them), values nested deeper than `MAX_DEPTH` become a short note.
The result is always one valid JSON document. `safe_text` does the same for a string shown or
written as text (a finding's message on a UTF-8 stdout).
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

MAX_DEPTH = 200  # below orjson's 254 and far below the interpreter's recursion limit
TOO_DEEP = "… (nested deeper than {} levels)"


def safe_text(text: str) -> str:
    """`text` as valid UTF-8 text: each lone surrogate becomes its escape, `\\ud800`."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def tame(value: Any, max_depth: int = MAX_DEPTH) -> Any:
    """A copy of a JSON value that every serializer takes (integers are kept exact: only the
    standard library writes those beyond 64 bits)."""
    return _tame(value, max_depth)


def _tame(value: Any, depth: int) -> Any:
    t = type(value)
    if t is str:
        return safe_text(value)
    if t is int or t is bool or value is None:
        return value
    if t is float:
        return value if math.isfinite(value) else None
    if depth <= 0:
        return TOO_DEEP.format(MAX_DEPTH)
    if t is dict:
        return {
            safe_text(k) if type(k) is str else safe_text(str(k)): _tame(v, depth - 1)
            for k, v in value.items()
        }
    if t is list or t is tuple:
        return [_tame(v, depth - 1) for v in value]
    if isinstance(value, str):  # StrEnum and kin
        return safe_text(str(value))
    if isinstance(value, int):  # IntEnum
        return int(value)
    return safe_text(str(value))


def dumps(value: Any, option: int = 0) -> bytes:
    """orjson.dumps(value, option=option), or the same document of a tamed copy when orjson refuses
    the value. Understands OPT_INDENT_2, OPT_APPEND_NEWLINE and OPT_SORT_KEYS."""
    try:
        return orjson.dumps(value, option=option)
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError
        pass
    text = json.dumps(
        _tame(value, MAX_DEPTH),
        ensure_ascii=False,
        allow_nan=False,
        indent=2 if option & orjson.OPT_INDENT_2 else None,
        separators=None if option & orjson.OPT_INDENT_2 else (",", ":"),
        sort_keys=bool(option & orjson.OPT_SORT_KEYS),
    )
    out = text.encode("utf-8")
    return out + b"\n" if option & orjson.OPT_APPEND_NEWLINE else out


def dumps_text(value: Any, option: int = 0) -> str:
    return dumps(value, option).decode("utf-8")


def loads(data: bytes | str) -> Any:
    """What `dumps` wrote, read back: orjson, or the standard library for the integers beyond
    64 bits orjson refuses (it reads 10**400 as infinity, an error). Raises ValueError."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
