"""The last entries of a HAR read ahead of its conversion (tracer.inputs.tail for line formats):
what `G` shows while the background conversion is still on its way to the end.

A HAR is one JSON document, so its end cannot be read from a line boundary. Here the last
WINDOW bytes are searched for the first `{` that starts a whole entry: a JSON object with a
`request` object and a `startedDateTime` string, followed by `,` or `]` (inside a JSON string no
object can start: its quotes would be escaped). From there the entries are read one after the
other to the end of `log.entries`, and replayed among themselves as `har.read` replays them all.
What such a row cannot know is what the entries before the window decide (its seq, its entry's
number, the connection and session names the recorder gives): it is provisional, as
tracer.inputs.tail says, and the viewer drops it once the conversion has reached the end.
"""

from __future__ import annotations

import json
import os
import re

from tracer.http.flows import replay
from tracer.inputs.har import _entry_steps
from tracer.inputs.lazy import record_line

WINDOW = 1 << 20  # bytes of the document's end searched (a few hundred MCP-sized entries)
ATTEMPTS = 256  # `{` tried before giving up (a hostile window of nested objects stays cheap)
_WS = " \t\n\r"
HEAD = 4096  # bytes of the document's beginning searched for its creator
_MITMPROXY = re.compile(rb'"creator"\s*:\s*\{\s*"name"\s*:\s*"mitmproxy"')


def _entry(obj: object) -> bool:
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("request"), dict)
        and isinstance(obj.get("startedDateTime"), str)
    )


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


def _last_entries(text: str) -> list[dict]:
    """The whole entries at the end of TEXT, from the first one found to the end of the list."""
    dec = json.JSONDecoder()
    i = text.find("{")
    for _ in range(ATTEMPTS):
        if i < 0:
            return []
        try:
            obj, end = dec.raw_decode(text, i)
        except (ValueError, RecursionError):
            i = text.find("{", i + 1)
            continue
        j = _skip_ws(text, end)
        if _entry(obj) and j < len(text) and text[j] in ",]":
            break
        i = text.find("{", i + 1)
    else:
        return []
    entries = [obj]
    while text[j] == ",":
        try:
            obj, end = dec.raw_decode(text, _skip_ws(text, j + 1))
        except (ValueError, RecursionError):
            break
        j = _skip_ws(text, end)
        if not isinstance(obj, dict) or j >= len(text) or text[j] not in ",]":
            break
        entries.append(obj)
    return entries


def _connect_apart(path: str) -> bool:
    """Whether the HAR's head names mitmproxy as its writer (tracer.inputs.har.connect_apart): its
    `creator` comes before its entries, in the first bytes (a preview guesses no further)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD)
    except OSError:
        return False
    return _MITMPROXY.search(head) is not None


def read_har_tail(path: str, *, nbytes: int = WINDOW, rows: int = 512) -> list[bytes] | None:
    """Capture lines (seq 0, no entry number) of the last entries of the HAR at PATH, or None."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            fh.seek(max(0, size - nbytes))
            data = fh.read(nbytes)
    except OSError:
        return None
    start = 0
    while start < min(4, len(data)) and 0x80 <= data[start] < 0xC0:  # (inside a UTF-8 character)
        start += 1
    try:
        text = data[start:].decode("utf-8")
    except UnicodeDecodeError:
        return None
    entries = _last_entries(text)
    apart = _connect_apart(path)
    steps = []
    for i, entry in enumerate(entries, 1):
        if isinstance(entry.get("request"), dict):
            try:
                steps.extend(_entry_steps(entry, i, apart))
            except Exception:  # (har.read reads it; this is a preview only)
                return None
    lines: list[bytes] = []
    try:
        for rec in replay(steps, path):
            rec.seq = 0  # (pending, as its entry's number)
            rec.line = 0
            lines.append(record_line(rec))
    except Exception:
        return None
    return lines[-rows:] or None
