"""A JSON / JSONC reader that remembers where every value is, so host configs can be edited in place.

Host config files are the user's: comments (VS Code, Zed), key order, spacing and unknown keys must
survive an edit. So nothing is ever re-serialised; the parser records the byte span of each value
and an edit replaces one span's text. Accepted beyond JSON: `//` and `/* */` comments and trailing
commas (what VS Code's and Zed's JSONC allow). Works on `str` offsets; files are UTF-8.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any


class JsoncError(ValueError):
    def __init__(self, message: str, text: str, pos: int):
        line = text.count("\n", 0, pos) + 1
        col = pos - (text.rfind("\n", 0, pos) + 1) + 1
        super().__init__(f"line {line} column {col}: {message}")


@dataclass
class Node:
    start: int
    end: int  # exclusive
    value: Any = None  # scalars: the value; containers: see members/items
    kind: str = "scalar"  # scalar, object, array
    members: list[tuple[str, Node]] = field(default_factory=list)  # objects, in file order
    items: list[Node] = field(default_factory=list)  # arrays

    def get(self, key: str) -> Node | None:
        if self.kind != "object":
            return None
        found = None
        for k, v in self.members:
            if k == key:
                found = v  # the last duplicate wins, as in JSON.parse
        return found

    def plain(self) -> Any:
        """The value as Python data (objects as dicts)."""
        if self.kind == "object":
            return {k: v.plain() for k, v in self.members}
        if self.kind == "array":
            return [v.plain() for v in self.items]
        return self.value


class _Parser:
    def __init__(self, text: str):
        self.t = text
        self.i = 0

    def fail(self, message: str) -> JsoncError:
        return JsoncError(message, self.t, self.i)

    def skip(self) -> None:
        t, n = self.t, len(self.t)
        while self.i < n:
            c = t[self.i]
            if c in " \t\r\n\ufeff":
                self.i += 1
            elif t.startswith("//", self.i):
                j = t.find("\n", self.i)
                self.i = n if j < 0 else j + 1
            elif t.startswith("/*", self.i):
                j = t.find("*/", self.i + 2)
                if j < 0:
                    raise self.fail("unterminated /* comment")
                self.i = j + 2
            else:
                return

    def value(self, depth: int = 0) -> Node:
        if depth > 200:
            raise self.fail("nested too deeply")
        self.skip()
        if self.i >= len(self.t):
            raise self.fail("unexpected end of file")
        c = self.t[self.i]
        if c == "{":
            return self.obj(depth)
        if c == "[":
            return self.arr(depth)
        if c == '"':
            start = self.i
            return Node(start, self.string_end(), self.string(start))
        start = self.i
        while self.i < len(self.t) and self.t[self.i] not in ",]}/ \t\r\n":
            self.i += 1
        word = self.t[start : self.i]
        try:
            return Node(start, self.i, json.loads(word))
        except ValueError:
            self.i = start
            raise self.fail(f"unexpected {word[:20]!r}") from None

    def string(self, start: int) -> str:
        """The string literal from START to here; a raw control character or an escape JSON does
        not have is a syntax error with its place, as any other (json.loads raised it bare)."""
        try:
            return json.loads(self.t[start : self.i])
        except json.JSONDecodeError as exc:
            self.i = start + exc.pos
            raise self.fail(f"bad string: {exc.msg.removesuffix(' at')}") from None

    def string_end(self) -> int:
        t, i = self.t, self.i + 1
        while i < len(t):
            c = t[i]
            if c == "\\":
                i += 2
            elif c == '"':
                self.i = i + 1
                return self.i
            elif c == "\n":
                break
            else:
                i += 1
        raise self.fail("unterminated string")

    def obj(self, depth: int) -> Node:
        node = Node(self.i, 0, kind="object")
        self.i += 1
        while True:
            self.skip()
            if self.t.startswith("}", self.i):
                self.i += 1
                node.end = self.i
                return node
            if not self.t.startswith('"', self.i):
                raise self.fail("expected a quoted key")
            k0 = self.i
            self.string_end()
            key = self.string(k0)
            self.skip()
            if not self.t.startswith(":", self.i):
                raise self.fail("expected ':'")
            self.i += 1
            node.members.append((key, self.value(depth + 1)))
            self.skip()
            if self.t.startswith(",", self.i):
                self.i += 1
            elif not self.t.startswith("}", self.i):
                raise self.fail("expected ',' or '}'")

    def arr(self, depth: int) -> Node:
        node = Node(self.i, 0, kind="array")
        self.i += 1
        while True:
            self.skip()
            if self.t.startswith("]", self.i):
                self.i += 1
                node.end = self.i
                return node
            node.items.append(self.value(depth + 1))
            self.skip()
            if self.t.startswith(",", self.i):
                self.i += 1
            elif not self.t.startswith("]", self.i):
                raise self.fail("expected ',' or ']'")


def parse(text: str) -> Node:
    """The document's root value with spans; JsoncError (with line and column) when it is not JSONC.
    An empty document (only whitespace and comments) is an empty object at the end."""
    p = _Parser(text)
    p.skip()
    if p.i >= len(text):
        return Node(len(text), len(text), kind="object")
    root = p.value()
    p.skip()
    if p.i < len(text):
        raise p.fail("unexpected text after the document")
    return root


# A lone surrogate (`"\ud800"` in the file, which json reads) is not text UTF-8 can write: it goes
# back as the same escape, so the config reads as it did and writing it cannot fail.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def dumps(value: Any) -> str:
    """A value as it is written into a config: JSON, one line, non-ASCII kept readable."""
    text = json.dumps(value, ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


__all__ = ["JsoncError", "Node", "dumps", "parse"]
