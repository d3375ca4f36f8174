"""Every input `lint`, `view`, `replay` and `mock` read, detected from content (not the file name).

A reader turns a binary file into `Record`s (and `ReadProblem`s for lines it could not read, which
never stop it). Readers register here; the CLI adds the ones that need mitmproxy (.mitm flows).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO

from tracer.capture import ReadProblem, read_capture
from tracer.model import Record

HEAD_BYTES = 64 * 1024

Reader = Callable[[IO[bytes], str], Iterator["Record | ReadProblem"]]


@dataclass(frozen=True)
class InputFormat:
    name: str
    description: str
    sniff: Callable[[bytes], bool]  # looks at the first HEAD_BYTES of the file
    read: Reader
    priority: int = 50  # lower is tried first


FORMATS: list[InputFormat] = []


def register(fmt: InputFormat) -> None:
    FORMATS[:] = sorted([f for f in FORMATS if f.name != fmt.name] + [fmt], key=lambda f: f.priority)


class InputError(Exception):
    """An input that cannot be read at all (missing, unreadable, not a format we know)."""


def _sniff_capture(head: bytes) -> bool:
    first = head.lstrip()[:4096]
    return first.startswith(b"{") and b'"format":"mcptrace"' in first.replace(b" ", b"")


def detect(head: bytes) -> InputFormat | None:
    _ensure_builtin()
    for fmt in FORMATS:
        try:
            if fmt.sniff(head):
                return fmt
        except Exception:  # a sniffer must never take the whole lint down
            continue
    return None


@dataclass
class OpenInput:
    path: str
    format: InputFormat
    records: Iterator[Record | ReadProblem]
    fh: IO[bytes]

    def position(self) -> int:
        """Bytes read so far (for progress bars)."""
        try:
            return self.fh.tell() if not self.fh.closed else 0
        except (OSError, ValueError):
            return 0


def open_input(path: str, *, fmt: str | None = None) -> OpenInput:
    """Open an input file: its format and a streaming iterator of its records."""
    _ensure_builtin()
    if os.path.isdir(path):
        raise InputError(f"{path}: is a directory")
    try:
        fh = open(path, "rb")  # noqa: SIM115 (closed by the generator)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    try:
        head = fh.read(HEAD_BYTES)
    except OSError as exc:
        fh.close()
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    if fmt is not None:
        chosen = next((f for f in FORMATS if f.name == fmt), None)
        if chosen is None:
            fh.close()
            raise InputError(f"unknown input format {fmt!r} (known: {', '.join(f.name for f in FORMATS)})")
    else:
        if not head.strip():
            fh.close()
            raise InputError(f"{path}: empty file, nothing to read")
        chosen = detect(head)
        if chosen is None:
            fh.close()
            raise InputError(
                f"{path}: not a recognised MCP capture (expected mcptrace JSONL, NDJSON of JSON-RPC "
                f"messages, an MCP host log, HAR, or a mitmproxy flow file)"
            )
    fh.seek(0)

    def records() -> Iterator[Record | ReadProblem]:
        with fh:
            yield from chosen.read(fh, path)

    return OpenInput(path, chosen, records(), fh)


_BUILTIN_DONE = False


def _ensure_builtin() -> None:
    global _BUILTIN_DONE
    if _BUILTIN_DONE:
        return
    _BUILTIN_DONE = True
    from tracer.inputs import har, hostlog, ndjson

    register(InputFormat("capture", "mcptrace capture (JSONL)", _sniff_capture, read_capture, priority=10))
    register(InputFormat("har", "HTTP Archive (HAR)", har.sniff, har.read, priority=20))
    register(InputFormat("hostlog", "MCP host log (Claude Desktop mcp*.log style)", hostlog.sniff,
                         hostlog.read, priority=30))
    register(InputFormat("ndjson", "NDJSON: one JSON-RPC message per line", ndjson.sniff, ndjson.read,
                         priority=90))
