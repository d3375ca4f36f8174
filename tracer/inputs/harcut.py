"""A HAR document cut short (an export interrupted, a disk full, a file still being written): the
entries that are whole before the cut, so that the house rule for a broken line holds for a HAR too
(the broken part is reported where it is, and the rest is read).

A document is cut when all of it is a beginning of some JSON document: the standard library's parser
(which checks everything before the place it stops at) stops only because the text ends there. A
document broken anywhere else is not cut and reads as before: one read problem, no entries.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

from tracer.classify import _reject_constant

_WS = " \t\n\r"
# What the parser stops at when the text ends inside a number (`1.`, `2e+`), a literal (`tr`) or an
# escape (`\u00`): all of them are the beginning of a value, not a mistake.
_NUMBER_TAIL = re.compile(r"(?:\.|[eE][+-]?)\Z")
# (the parser stops at the `u` of an escape the text ends in, even a whole one, and at a high
# surrogate's when the text ends in its pair)
_ESCAPE_TAIL = re.compile(r"u[0-9a-fA-F]{0,4}(?:\\(?:u[0-9a-fA-F]{0,4})?)?\Z")
_LITERALS = ("true", "false", "null")


def _ends_at_cut(text: str, exc: json.JSONDecodeError) -> bool:
    end = len(text.rstrip(_WS))
    if exc.pos >= end:
        return True  # (a value, a key, a `,` or a `:` was expected where the text ends)
    rest = text[exc.pos :]  # (white space after a literal, a number or an escape begun is no JSON)
    if exc.msg.startswith("Unterminated string"):
        return True  # (no closing quote before the end: everything before it was checked)
    if exc.msg.startswith("Expecting value"):
        return rest == "-" or any(lit.startswith(rest) and lit != rest for lit in _LITERALS)
    if exc.msg.startswith("Expecting ',' delimiter"):
        return _NUMBER_TAIL.match(rest) is not None
    if exc.msg.startswith("Invalid \\uXXXX escape"):
        return _ESCAPE_TAIL.match(rest) is not None
    return False


def _text(data: bytes) -> str | None:
    """DATA as text, a UTF-8 character cut at the end left out; None when it is not UTF-8."""
    try:
        return codecs.getincrementaldecoder("utf-8")("strict").decode(data, final=False)
    except UnicodeDecodeError:
        return None


def cut_short(data: bytes) -> str | None:
    """DATA's text when it is a HAR (a JSON document) cut short, else None."""
    text = _text(data)
    if text is None or not text.strip(_WS):
        return None
    try:
        json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return text if _ends_at_cut(text, exc) else None
    except (ValueError, RecursionError):  # (NaN, nested too deeply: broken, not cut)
        return None
    return None  # (whole: not cut)


class _Walk:
    """The cut document's log.entries (the last log's last entries, as a JSON parser keeps the last
    of repeated keys), each whole entry parsed, up to where the text ends. Every part of TEXT is
    known to be a beginning of valid JSON (cut_short), so a value that does not parse is the cut."""

    def __init__(self, text: str):
        self.text = text
        self.i = 0
        self.dec = json.JSONDecoder(parse_constant=_reject_constant)
        self.entries: list[Any] = []
        self.creator: Any = None  # (the log's writer: tracer.inputs.har.connect_apart reads it)

    def peek(self) -> str:
        text, i = self.text, self.i
        while i < len(text) and text[i] in _WS:
            i += 1
        self.i = i
        return text[i] if i < len(text) else ""

    def value(self) -> tuple[bool, Any]:
        """(True, the value at the cursor), or (False, None) at the cut."""
        self.peek()
        try:
            obj, self.i = self.dec.raw_decode(self.text, self.i)
        except (ValueError, RecursionError):  # (a nesting at the limit here: the read stops at it)
            return False, None
        return True, obj

    def members(self):
        """The keys of the object at the cursor, each left at its value; stops at the cut."""
        self.i += 1  # (the `{`)
        while self.peek() == '"':
            ok, key = self.value()
            if not ok or self.peek() != ":":
                return
            self.i += 1
            yield key
            c = self.peek()
            if c != ",":
                return  # (`}`: only a value of the outer object can follow; or the cut)
            self.i += 1

    def run(self) -> list[Any]:
        if self.peek() != "{":
            return []
        for key in self.members():
            if key == "log":
                self.entries, self.creator = [], None
            if key != "log" or self.peek() != "{":
                if not self.value()[0]:
                    return self.entries
                continue
            for name in self.members():
                if name == "entries":
                    self.entries = []
                if name != "entries" or self.peek() != "[":
                    ok, value = self.value()
                    if not ok:
                        return self.entries
                    if name == "creator":
                        self.creator = value
                    continue
                self.i += 1  # (the `[`)
                while self.peek() not in ("", "]"):
                    ok, entry = self.value()
                    if not ok:
                        return self.entries
                    self.entries.append(entry)
                    if self.peek() == ",":
                        self.i += 1
                self.i += 1  # (the `]`, or past the end)
            self.i += 1  # (the log's `}`)
        return self.entries


def cut_log(text: str) -> dict:
    """The log of TEXT (a document cut_short said is cut): its whole entries and its creator, as
    far as the cut lets them be read."""
    walk = _Walk(text)
    entries = walk.run()
    return {"entries": entries, "creator": walk.creator}


def begins_value(text: str) -> bool:
    """Whether TEXT, where a document ends, is the beginning of a JSON value (a value cut short)."""
    try:
        json.loads("[" + text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return _ends_at_cut("[" + text, exc)
    except (ValueError, RecursionError):
        return False
    return False
