"""Structural JSON diff for replay: which paths of a recorded answer changed in the new one.

Paths are JSONPath-like (`$.result.content[0].text`). Volatile parts are ignored: the JSON-RPC
`id` (the replayer may renumber), MRTR `requestState` (opaque, usually sealed with a nonce and an
expiry), timestamps (keys named like one, or two values that are both ISO 8601 date-times), and
whatever paths the user names with `--ignore` (same syntax, plus `*` for any key or index and `..`
for any depth: `$..createdAt`, `$.result.content[*].text`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tracer.jsonpath import json_path

Path = tuple[str | int, ...]

# Keys whose values are clocks: equal in meaning even when the digits differ.
TIMESTAMP_KEYS = frozenset(
    k.lower()
    for k in (
        "timestamp",
        "ts",
        "time",
        "date",
        "datetime",
        "now",
        "createdAt",
        "updatedAt",
        "modifiedAt",
        "lastModified",
        "lastUpdated",
        "expiresAt",
        "startedAt",
        "endedAt",
        "finishedAt",
        "created",
        "updated",
        "modified",
        "created_at",
        "updated_at",
        "expires_at",
        "started_at",
        "generatedAt",
    )
)
_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$")
# Always ignored: the JSON-RPC id, and MRTR's opaque state (a new server seals it afresh each time).
DEFAULT_IGNORES = ("$.id", "$.result.requestState")


@dataclass(frozen=True, slots=True)
class Difference:
    path: str
    change: str  # "changed", "added" (only in the new answer), "removed" (only in the recorded one), "type"
    recorded: Any = None
    new: Any = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "change": self.change}
        if self.change != "added":
            out["recorded"] = self.recorded
        if self.change != "removed":
            out["new"] = self.new
        return out


# -- paths -----------------------------------------------------------------------------------------


def format_path(path: Iterable[str | int]) -> str:
    """The path of a difference, spelled like every finding's (tracer.jsonpath)."""
    return json_path(path)


class PatternError(ValueError):
    """An --ignore path that cannot be parsed."""


_ANY = ("any",)
_DEEP = ("deep",)


def _unquote(inner: str) -> str:
    """A quoted key of a pattern: a JSON string as the paths print it (`["caf\\u00e9"]`), or any
    quoted text with `\\"` and `\\\\` escapes."""
    if inner[0] == '"':
        try:
            key = json.loads(inner)
        except ValueError:
            pass
        else:
            if type(key) is str:
                return key
    return inner[1:-1].replace('\\"', '"').replace("\\\\", "\\")


def parse_pattern(text: str) -> tuple[tuple, ...]:
    """`$.a.b[0]`, `a.b`, `$..ts`, `$.x[*]`, `$["odd key"]` -> tokens ("key", s) / ("index", n) / any / deep."""
    s = text.strip()
    if not s:
        raise PatternError("empty path")
    if s.startswith("$"):
        s = s[1:]
    elif not s.startswith((".", "[")):
        s = "." + s
    tokens: list[tuple] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == ".":
            if s.startswith("..", i):
                tokens.append(_DEEP)
                i += 2
                if i < n and s[i] == "[":
                    continue
            else:
                i += 1
            j = i
            while j < n and s[j] not in ".[":
                j += 1
            name = s[i:j]
            if not name:
                raise PatternError(f"{text!r}: empty key at position {i + 1}")
            tokens.append(_ANY if name == "*" else ("key", name))
            i = j
        elif c == "[":
            close = _find_close(s, i, text)
            inner = s[i + 1 : close].strip()
            if inner == "*":
                tokens.append(_ANY)
            elif inner[:1] in ("'", '"'):
                if len(inner) < 2 or inner[-1] != inner[0]:
                    raise PatternError(f"{text!r}: unterminated quoted key")
                tokens.append(("key", _unquote(inner)))
            elif re.fullmatch(r"-?\d+", inner):
                tokens.append(("index", int(inner)))
            else:
                raise PatternError(f"{text!r}: expected an index, * or a quoted key inside [...]")
            i = close + 1
        else:
            raise PatternError(f"{text!r}: unexpected {c!r} at position {i + 1}")
    if tokens and tokens[-1] is _DEEP:
        raise PatternError(f"{text!r}: '..' must be followed by a key")
    return tuple(tokens)


def _find_close(s: str, start: int, text: str) -> int:
    quote = None
    i = start + 1
    while i < len(s):
        c = s[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in ("'", '"'):
            quote = c
        elif c == "]":
            return i
        i += 1
    raise PatternError(f"{text!r}: missing ']'")


def _match(tokens: tuple, path: Path) -> bool:
    """Does the pattern match this path exactly (a match on a prefix ignores the whole subtree)?"""
    if not tokens:
        return not path
    tok = tokens[0]
    if tok is _DEEP:
        return any(_match(tokens[1:], path[k:]) for k in range(len(path)))
    if not path:
        return False
    seg = path[0]
    if tok is _ANY:
        ok = True
    elif tok[0] == "key":
        ok = type(seg) is str and seg == tok[1]
    else:
        ok = type(seg) is int and seg == tok[1]
    return ok and _match(tokens[1:], path[1:])


class Ignores:
    """The set of paths a diff skips."""

    def __init__(self, patterns: Iterable[str] = (), *, defaults: bool = True):
        texts = list(DEFAULT_IGNORES if defaults else ()) + list(patterns)
        self.texts = texts
        self.patterns = [parse_pattern(t) for t in texts]

    def __call__(self, path: Path) -> bool:
        return any(_match(p, path) for p in self.patterns)


# -- the diff --------------------------------------------------------------------------------------


def is_timestamp_pair(key: str | int | None, a: Any, b: Any) -> bool:
    if type(key) is str and key.lower() in TIMESTAMP_KEYS:
        return True
    return type(a) is str and type(b) is str and bool(_ISO_DATETIME.match(a)) and bool(_ISO_DATETIME.match(b))


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if type(v) is bool:
        return "boolean"
    if type(v) in (int, float):
        return "number"
    if type(v) is str:
        return "string"
    if type(v) is list:
        return "array"
    return "object"


def diff(recorded: Any, new: Any, ignores: Ignores | None = None, *, limit: int = 200) -> list[Difference]:
    """Every path where `new` differs from `recorded`, in document order (at most `limit`)."""
    ign = ignores if ignores is not None else Ignores()
    out: list[Difference] = []
    _walk(recorded, new, (), None, ign, out, limit)
    return out


def _walk(
    a: Any, b: Any, path: Path, key: str | int | None, ign: Ignores, out: list[Difference], limit: int
) -> None:
    if len(out) >= limit or (path and ign(path)):
        return
    ta, tb = _type_name(a), _type_name(b)
    if ta != tb:
        if not is_timestamp_pair(key, a, b):
            out.append(Difference(format_path(path), "type", a, b))
        return
    if ta == "object":
        for k in a:
            if k in b:
                _walk(a[k], b[k], (*path, k), k, ign, out, limit)
            elif not ign((*path, k)):
                out.append(Difference(format_path((*path, k)), "removed", a[k], None))
        for k in b:
            if k not in a and not ign((*path, k)):
                out.append(Difference(format_path((*path, k)), "added", None, b[k]))
    elif ta == "array":
        for i in range(max(len(a), len(b))):
            p = (*path, i)
            if i >= len(b):
                if not ign(p):
                    out.append(Difference(format_path(p), "removed", a[i], None))
            elif i >= len(a):
                if not ign(p):
                    out.append(Difference(format_path(p), "added", None, b[i]))
            else:
                _walk(a[i], b[i], p, i, ign, out, limit)
    elif a != b and not is_timestamp_pair(key, a, b):
        out.append(Difference(format_path(path), "changed", a, b))
