"""Where the keys of a TOML document are, so Codex's config.toml can be edited in place.

tomllib gives the values (and says whether the file is valid TOML); this scanner gives the span
of each `key = value` of each table, so an edit replaces one value's text and every comment,
blank line and other table stays as it was. It follows the TOML 1.0 grammar far enough to find
where a value ends: basic, literal and multi-line strings, nested arrays and inline tables,
comments; anything else runs to the end of its line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

_BARE = re.compile(r"[A-Za-z0-9_-]+")


@dataclass
class KeyValue:
    key: tuple[str, ...]
    line_start: int  # start of the key's line (for inserting beside it)
    value_start: int
    value_end: int  # exclusive; the rest of the line (a comment) is not part of it


@dataclass
class Table:
    name: tuple[str, ...]  # () for the root table
    header_end: int  # end of the header line (the first key/value may follow)
    end: int  # where the next table starts (or the end of the text)
    entries: list[KeyValue] = field(default_factory=list)

    def find(self, *key: str) -> KeyValue | None:
        return next((kv for kv in self.entries if kv.key == key), None)


def _keys(text: str, i: int, stop: str) -> tuple[tuple[str, ...], int]:
    """A dotted key starting at I, up to STOP (']' or '='); returns the key and the index of STOP."""
    parts: list[str] = []
    n = len(text)
    while True:
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] == '"':
            j = _string_end(text, i)
            parts.append(json.loads(text[i:j]))
            i = j
        elif i < n and text[i] == "'":
            j = text.index("'", i + 1)
            parts.append(text[i + 1 : j])
            i = j + 1
        else:
            m = _BARE.match(text, i)
            if not m:
                raise ValueError(f"offset {i}: expected a key")
            parts.append(m.group())
            i = m.end()
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] == ".":
            i += 1
            continue
        if text.startswith(stop, i):
            return tuple(parts), i
        raise ValueError(f"offset {i}: expected {stop!r}")


def _string_end(text: str, i: int) -> int:
    if text.startswith('"""', i):
        j = i + 3
        while True:
            j = text.index('"""', j)
            if text[j - 1] != "\\" or text[j - 2] == "\\":
                while text.startswith('"', j + 3):  # up to two quotes may end the content
                    j += 1
                return j + 3
            j += 1
    if text.startswith("'''", i):
        j = text.index("'''", i + 3)
        while text.startswith("'", j + 3):
            j += 1
        return j + 3
    if text[i] == "'":
        return text.index("'", i + 1) + 1
    j = i + 1
    while text[j] != '"':
        j += 2 if text[j] == "\\" else 1
    return j + 1


def _value_end(text: str, i: int) -> int:
    n = len(text)
    c = text[i] if i < n else ""
    if c in "\"'":
        return _string_end(text, i)
    if c in "[{":
        close = "]" if c == "[" else "}"
        j = i + 1
        while True:
            while j < n and text[j] in " \t\r\n,":
                j += 1
            if j >= n:
                raise ValueError(f"offset {i}: unterminated {c}")
            if text[j] == "#":
                eol = text.find("\n", j)
                j = n if eol < 0 else eol
            elif text[j] == close:
                return j + 1
            elif c == "{":  # key = value
                _, j = _keys(text, j, "=")
                j += 1
                while j < n and text[j] in " \t":
                    j += 1
                j = _value_end(text, j)
            else:
                j = _value_end(text, j)
    m = re.compile(r"[^\s,\]}#]+(?:[ T][0-9:.+Z-]+)?").match(text, i)  # numbers, booleans, dates
    if not m:
        raise ValueError(f"offset {i}: expected a value")
    return m.end()


def scan(text: str) -> list[Table]:
    """Every table of TEXT (the root table first) with its key/value spans. Raises ValueError on
    text it cannot follow; call it only on text tomllib accepted."""
    tables = [Table((), 0, len(text))]
    i, n = 0, len(text)
    while i < n:
        line_start = i
        while i < n and text[i] in " \t":
            i += 1
        if i >= n:
            break
        c = text[i]
        if c in "\r\n":
            i += 1
            continue
        if c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if c == "[":
            double = text.startswith("[[", i)
            name, j = _keys(text, i + (2 if double else 1), "]")
            j += 2 if double else 1
            eol = text.find("\n", j)
            eol = n if eol < 0 else eol + 1
            tables[-1].end = line_start
            tables.append(Table(name, eol, n))
            i = eol
            continue
        key, j = _keys(text, i, "=")
        j += 1
        while j < n and text[j] in " \t":
            j += 1
        end = _value_end(text, j)
        tables[-1].entries.append(KeyValue(key, line_start, j, end))
        eol = text.find("\n", end)
        i = n if eol < 0 else eol + 1
    return tables


def dumps_value(value) -> str:
    """A string or a list of strings as a TOML value (basic strings: JSON's escapes are TOML's)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in value) + "]"


__all__ = ["KeyValue", "Table", "dumps_value", "scan"]
