"""A HAR's records entry by entry, for the viewer's first screen: the same records as
tracer.inputs.har.read (and its read problems, given apart: the viewer says them), without parsing
the whole document first.

`har.read` parses the document whole and replays every exchange's steps sorted by time, so its first
record waits for the last entry (a 1 GB HAR: tens of seconds, and the document's objects in memory).
Here the entries are parsed one at a time as the file is read (the standard library's scanner, from
a window of the text), and a step goes out once no later entry can come before it: HAR writers list
entries about in `startedDateTime` order and no step of an entry is earlier than its start, so a
step earlier than the start of each of the last 1,024 entries is in its place
(tracer.http.flows.WireOrder). The order is checked as it goes; anything the whole-document reader
would read otherwise (an entry that starts before a step already given, a second `log` or
`entries`, a document broken before its end, text that is not UTF-8, NaN...) raises
`Unstreamable`, and the caller reads the file with `har.read` instead. A document cut short (valid
up to where it ends: tracer.inputs.harcut) gives the records of the entries whole before the cut,
as `har.read` does.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import IO, Any

from tracer.capture import ReadProblem
from tracer.http.flows import Step, WireOrder, replay_sorted
from tracer.inputs.har import _entry_steps, _ns, connect_apart, cut_problem, no_request
from tracer.inputs.harcut import begins_value
from tracer.model import Record

READ = 1 << 20  # bytes read at a time (doubled while one value does not fit)
_WS = " \t\n\r"


class Unstreamable(Exception):
    """The HAR is not one the entry-by-entry reader gives the whole-document reader's records for."""


class _Cut(Unstreamable):
    """The document ends before it is complete, all of it valid so far: the entries read are all
    har.read reads of it (tracer.inputs.harcut), so the conversion ends here instead of again whole."""


def _reject(name: str) -> Any:
    raise Unstreamable(f"{name} is not JSON")


class _Text:
    """The document's text from a binary stream, a window at a time, with a cursor."""

    def __init__(self, fh: IO[bytes]):
        self.fh = fh
        self.dec = codecs.getincrementaldecoder("utf-8")("strict")
        self.buf = ""
        self.i = 0
        self.eof = False
        self.cut_char = False
        self.want = READ
        self.json = json.JSONDecoder(parse_constant=_reject)
        self.newlines = 0  # in the text read (a cut document's read problem names its last line)
        self.apart = False  # the log's creator times `connect` apart (tracer.inputs.har.connect_apart)

    def more(self) -> bool:
        """Read more of the document into the window. False at its end."""
        if self.eof:
            return False
        data = self.fh.read(self.want)
        self.newlines += data.count(b"\n")
        try:
            text = self.dec.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            if data or exc.reason != "unexpected end of data":
                raise Unstreamable(f"not UTF-8: {exc}") from None
            # (a character cut where the file ends: a document cut short there, or not UTF-8)
            text, self.cut_char = "", True
        if not data:
            self.eof = True
        if self.i > READ:  # what was read is forgotten: the window holds the value being read
            self.buf, self.i = self.buf[self.i :], 0
        self.buf += text
        return bool(data) or bool(text)

    def peek(self) -> str:
        """The next character that is not white space ("" at the end of the document)."""
        while True:
            buf, i = self.buf, self.i
            n = len(buf)
            while i < n and buf[i] in _WS:
                i += 1
            self.i = i
            if i < n:
                return buf[i]
            if not self.more():
                return ""

    def expect(self, chars: str) -> str:
        c = self.peek()
        if not c:
            raise _Cut(f"the document ends where one of {chars!r} was expected")
        if c not in chars:
            raise Unstreamable(f"expected one of {chars!r} at character {self.i}")
        self.i += 1
        return c

    def value(self) -> Any:
        """The JSON value at the cursor, read whole."""
        self.peek()
        while True:
            try:
                obj, end = self.json.raw_decode(self.buf, self.i)
            except json.JSONDecodeError:
                # (most likely cut by the window's end: read more, twice as much each time so that
                # a value of any size is parsed a bounded number of times)
                self.want = min(self.want * 2, 1 << 30)
                if not self.more():
                    if begins_value(self.buf[self.i :]):
                        raise _Cut("the document ends inside a value") from None
                    raise Unstreamable("the document ends inside a value") from None
                continue
            except RecursionError:
                raise Unstreamable("nested too deeply") from None
            self.want = READ
            self.i = end
            return obj

    def key(self) -> str:
        if self.peek() == "":
            raise _Cut("the document ends where a key was expected")
        if self.peek() != '"':
            raise Unstreamable("an object key is not a string")
        key = self.value()
        self.expect(":")
        return key


def _members(text: _Text) -> Iterator[str]:
    """The keys of the object at the cursor, each left at its value for the caller to read."""
    text.expect("{")
    if text.peek() == "}":
        text.i += 1
        return
    while True:
        yield text.key()
        if text.expect(",}") == "}":
            return


def _entries(text: _Text) -> Iterator[Any]:
    """The document's log.entries, one at a time (each parsed when reached)."""
    seen_log = seen_entries = False
    for key in _members(text):
        if key != "log":
            text.value()
            continue
        if seen_log or text.peek() != "{":
            raise Unstreamable("a second log, or a log that is not an object")
        seen_log = True
        for name in _members(text):
            if name == "creator":
                apart = connect_apart({"creator": text.value()})
                if seen_entries and apart != text.apart:  # (har.read times the entries read by it)
                    raise Unstreamable("a log's creator after its entries that changes their timings")
                text.apart = apart
                continue
            if name != "entries":
                text.value()
                continue
            if seen_entries or text.peek() != "[":
                raise Unstreamable("a second log.entries, or one that is not a list")
            seen_entries = True
            text.expect("[")
            if text.peek() == "]":
                text.i += 1
                continue
            while True:
                yield text.value()
                if text.expect(",]") == "]":
                    break
    if not seen_entries:
        raise Unstreamable("no log.entries")
    if text.peek() != "":
        raise Unstreamable("text after the document")
    if text.cut_char:
        raise Unstreamable("not UTF-8: a character cut after the document")


def _steps(fh: IO[bytes], source: str, problems: list[ReadProblem]) -> Iterator[Step]:
    """Every entry's steps in wire order, as far as the entries read so far allow; PROBLEMS gets
    har.read's read problems (har.read gives them before its records, this at the end)."""
    order = WireOrder()
    text = _Text(fh)
    i = 0
    skipped: list[ReadProblem] = []
    try:
        for i, entry in enumerate(_entries(text), 1):
            if not isinstance(entry, dict) or not isinstance(entry.get("request"), dict):
                skipped.append(no_request(source, i))  # (har.read reports it and skips it)
                continue
            # (no step of an entry is earlier than its start: see har._entry_steps)
            order.add(i, _ns(entry.get("startedDateTime", "")), _entry_steps(entry, i, text.apart))
            yield from order.ready()
    except _Cut:
        # (a document cut short: har.read reads the entries whole before the cut, as here)
        try:
            end = fh.tell()
        except (OSError, ValueError):
            end = 0
        problems.append(cut_problem(source, end, text.newlines + 1, i))
    problems.extend(skipped)
    yield from order.rest()


def stream(fh: IO[bytes], source: str, problems: list[ReadProblem] | None = None) -> Iterator[Record]:
    """The records `har.read` gives for FH, as its entries are read; its read problems go to
    PROBLEMS, in har.read's order, once the document has been read. Raises Unstreamable (maybe
    after some records) when the file needs `har.read`."""
    try:
        yield from replay_sorted(_steps(fh, source, problems if problems is not None else []), source)
    except (Unstreamable, OSError):
        raise
    except Exception as exc:  # whatever a hostile file trips here, har.read reads it (or says why)
        raise Unstreamable(f"{type(exc).__name__}: {exc}") from None
