"""One place that writes untrusted values as JSON, with two named policies.

Whatever a peer sent can reach a serializer: JSON allows lone surrogate escapes ("\\ud800"), integers
of any size and any depth, and orjson refuses all three (lone surrogates are not UTF-8, it holds
64-bit integers, it stops at 254 levels). Both policies let orjson do the common case and the
standard library the rest, so the result is always one valid JSON document; they differ in what
they owe the reader:

- `readable` (reports, the viewer's previews and details, exported spans): lone surrogates become
  the visible text `\\ud800` (valid UTF-8 everywhere, readable), integers stay exact, values nested
  deeper than `MAX_DEPTH` become a short note. `safe_text` does the same for a string shown or
  written as text (a finding's message on a UTF-8 stdout). The module-level `dumps`, `dumps_text`,
  `tame` and `safe_text` are this policy; `terminal_text` also escapes what a terminal would obey.
- `wire_exact` (what the mock answers and replay sends): the host matches an answer to its request
  by the exact id, so the value goes as sent, a lone surrogate as its `\\ud800` escape, any depth
  the interpreter can walk; past that, `Unserializable` (the caller then leaves the value out).

`loads` reads back what either wrote (orjson, else the standard library: escaped lone surrogates
and integers beyond 64 bits, which orjson refuses or reads as infinity).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

MAX_DEPTH = 200  # below orjson's 254 and far below the interpreter's recursion limit
TOO_DEEP = "… (nested deeper than {} levels)"


class Unserializable(ValueError):
    """A value `wire_exact` cannot write (deeper than the interpreter's recursion limit, NaN...)."""


def loads(data: bytes | str) -> Any:
    """What `dumps` (either policy) wrote, read back exactly, by the standard library: orjson reads an
    integer beyond 64 bits as a float without a word (2**64 + 1 would come back as 2**64, a
    different JSON-RPC id). Raises ValueError."""
    return json.loads(data)


# -- readable ------------------------------------------------------------------------------------


def safe_text(text: str) -> str:
    """`text` as valid UTF-8 text: each lone surrogate becomes its escape, `\\ud800`."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


# What a terminal (or a CI log viewer) obeys instead of showing: C0 controls (ESC starts a sequence
# that restyles, moves the cursor or sets the title; a newline would forge a report line), DEL, C1,
# and the bidirectional marks, embeddings, overrides and isolates that reorder what is read.
_OBEYED = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(text: str, keep: str = "") -> str:
    """`safe_text`, and each character a terminal would obey written as its escape (`\\x1b`,
    `\\u202e`), except those in `keep`: for a report line that quotes what a peer sent."""
    if text.isprintable():
        return text
    escaped = _OBEYED.sub(lambda m: m.group() if m.group() in keep else _escape(m), text)
    return safe_text(escaped)


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


# -- wire exact ----------------------------------------------------------------------------------


def _wire_dumps(value: Any, *, sort_keys: bool = False) -> bytes:
    try:
        if sort_keys:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
        return orjson.dumps(value)
    except (orjson.JSONEncodeError, TypeError):
        pass
    try:
        # ensure_ascii: a lone surrogate goes as its escape, the bytes stay valid UTF-8
        return json.dumps(
            value, ensure_ascii=True, separators=(",", ":"), sort_keys=sort_keys, allow_nan=False
        ).encode("ascii")
    except (ValueError, TypeError, RecursionError) as exc:
        raise Unserializable(str(exc) or type(exc).__name__) from None


def _wire_compact(value: Any, limit: int = 160) -> str:
    """A short one-line rendering for messages and logs; never raises."""
    try:
        text = _wire_dumps(value).decode()
    except Unserializable:
        text = f"<{type(value).__name__} too deep to show>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


class _Policy:
    """A serializer policy: `dumps(value, ...) -> bytes`, `loads(data)`, `compact(value)` (one line,
    for messages and logs; never raises)."""

    __slots__ = ("compact", "dumps", "loads", "name")

    def __init__(self, name: str, dumps, compact) -> None:
        self.name = name
        self.dumps = dumps
        self.loads = loads
        self.compact = compact

    def __repr__(self) -> str:
        return f"<safejson policy {self.name}>"


def _readable_compact(value: Any, limit: int = 160) -> str:
    text = dumps_text(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


readable = _Policy("readable", dumps, _readable_compact)  # dumps(value, option=0)
wire_exact = _Policy("wire_exact", _wire_dumps, _wire_compact)  # dumps(value, *, sort_keys=False)

__all__ = [
    "MAX_DEPTH",
    "Unserializable",
    "dumps",
    "dumps_text",
    "loads",
    "readable",
    "safe_text",
    "tame",
    "wire_exact",
]
