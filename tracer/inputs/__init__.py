"""Every input `lint`, `view`, `replay` and `mock` read, detected from content (not the file name).

A reader turns a binary file into `Record`s (and `ReadProblem`s for lines it could not read, which
never stop it). Readers register here; the CLI adds the ones that need mitmproxy (.mitm flows).
"""

from __future__ import annotations

import importlib
import io
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO

from tracer.capture import ReadProblem, read_capture
from tracer.inputs.settle import settle
from tracer.model import Record, RecordType

HEAD_BYTES = 64 * 1024

Reader = Callable[[IO[bytes], str], Iterator["Record | ReadProblem"]]


@dataclass(frozen=True)
class InputFormat:
    name: str
    description: str
    sniff: Callable[[bytes], bool]  # looks at the first HEAD_BYTES of the file
    read: Reader
    priority: int = 50  # lower is tried first
    # whether the file's record order is the wire order: only mcptrace's own captures (the tee and
    # the proxy number records as they happen); the others are settled (tracer.inputs.settle)
    exact_order: bool = False
    # the viewer's lazy rows (tracer.inputs.lazy): what a record needs beyond its line, and the
    # record made again from its line and that; None: the viewer converts the input first
    context: Callable[[Record], int] | None = None
    rebuild: Callable[[bytes, int, str, int, str, int], Record] | None = None
    # a format converted in the background (HAR, .mitm): its last rows read ahead of the conversion,
    # provisional (capture lines with seq 0: tracer.inputs.tail), or None when there are none
    tail: Callable[[str], list[bytes] | None] | None = None


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


def decidable(head: bytes) -> bool:
    """Whether detection can tell the format of an input still being written (a followed file, a
    slow stream) that begins with HEAD: its first HEAD_BYTES are there (detection decides, even on
    no format), or whole lines detection recognises (a last line may be cut anywhere), or the start
    of a format that is no lines (a HAR's `{"log":`, a flow file's first tnetstring)."""
    if len(head) >= HEAD_BYTES:
        return True
    head = head.removeprefix(BOM)
    nl = head.rfind(b"\n")
    if nl >= 0 and detect(head[: nl + 1]) is not None:
        return True
    found = detect(head)
    return found is not None and found.name in ("har", "mitm")


def decidable_file(path: str) -> bool:
    """`decidable` on the file at PATH as it is now (True when it cannot be read: opening it says why)."""
    try:
        with open(path, "rb") as fh:
            return decidable(fh.read(HEAD_BYTES))
    except OSError:
        return True


@dataclass
class OpenInput:
    path: str
    format: InputFormat
    records: Iterator[Record | ReadProblem]
    fh: IO[bytes]
    size: int | None = None  # bytes of a regular file (None: a pipe, a FIFO, standard input)

    def position(self) -> int:
        """Bytes read so far (for progress bars)."""
        try:
            return self.fh.tell() if not self.fh.closed else 0
        except (OSError, ValueError):
            return 0


STDIN = "-"
BOM = b"\xef\xbb\xbf"


class _HeadThenRest(io.RawIOBase):
    """A stream that cannot seek back (a pipe, a FIFO, standard input), read again from its start:
    first the head that was read for sniffing, then the rest of the stream as it comes. Wrapped in
    a BufferedReader, readers iterate it line by line at the same speed as a file."""

    def __init__(self, head: bytes, rest: IO[bytes]):
        self._head = memoryview(head)
        self._rest = rest
        self._pos = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(buf), len(self._head))
            buf[:n] = self._head[:n]
            self._head = self._head[n:]
        else:
            n = self._rest.readinto(buf) or 0
        self._pos += n
        return n

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        if not self.closed:
            try:
                self._rest.close()
            finally:
                super().close()


def _open_stream(path: str) -> tuple[IO[bytes], int | None]:
    """The binary stream of an input path ("-": standard input) and its size when it is a file."""
    if path == STDIN:
        # our own descriptor for fd 0, so closing the input leaves sys.stdin alone
        try:
            fh = os.fdopen(os.dup(0), "rb")
        except OSError as exc:
            raise InputError(f"standard input: {exc.strerror or exc}") from None
    else:
        if os.path.isdir(path):
            raise InputError(f"{path}: is a directory")
        try:
            fh = open(path, "rb")  # noqa: SIM115 (closed by the generator)
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fh.fileno())
    except OSError:
        return fh, None
    return fh, (st.st_size if stat.S_ISREG(st.st_mode) else None)


def _display(path: str) -> str:
    return "standard input" if path == STDIN else path


def _no_message(path: str, forced: InputFormat, head: bytes) -> InputError:
    looks = detect(head)
    what = (
        f"it looks like {looks.description} (--input-format {looks.name}, or leave detection on)"
        if looks is not None
        else "it is not a format mcptrace recognises"
    )
    return InputError(f"{_display(path)}: read as {forced.name}, it holds no message; {what}")


# Records held back while a forced format proves it reads the input (bounded memory: past this
# many records without a message, reading goes on as asked).
PROOF_RECORDS = 4096


def _proven(
    records: Iterator[Record | ReadProblem], path: str, forced: InputFormat, head: bytes
) -> Iterator[Record | ReadProblem]:
    """A forced --input-format that reads no message (and no capture header) from a non-empty
    input that detection would not read as that format is the wrong format, not a clean input:
    an InputError before anything is reported."""
    held: list[Record | ReadProblem] = []
    for item in records:
        held.append(item)
        if (
            not isinstance(item, ReadProblem) and item.type in (RecordType.MESSAGE, RecordType.HEADER)
        ) or len(held) >= PROOF_RECORDS:
            break
    else:
        raise _no_message(path, forced, head)

    def chained() -> Iterator[Record | ReadProblem]:
        yield from held
        held.clear()
        yield from records

    return chained()


def _proven_within(fh: IO[bytes], start: int, n: int, path: str, forced: InputFormat, head: bytes) -> bool:
    """Whether the first N bytes of FH from START prove a forced format (`_proven` on them alone):
    a reader that needs the whole document to give its first record (a HAR) reads it as a document
    cut short, whose whole entries are its messages. FH is left at START."""
    fh.seek(start)
    prefix = fh.read(n)
    fh.seek(start)
    try:
        _proven(forced.read(io.BytesIO(prefix), path), path, forced, head)
    except Exception:  # (no message in the prefix, or a reader tripped by its cut end: not proven here)
        return False
    return True


def reading(
    fh: IO[bytes], path: str, reader: InputFormat, *, settled: bool = True
) -> Iterator[Record | ReadProblem]:
    """READER's records of FH (closed at their end), settled unless the format's order is exact
    (or not SETTLED: the caller settles them); a reader that fails on the input raises InputError."""

    def records() -> Iterator[Record | ReadProblem]:
        with fh:
            try:
                yield from reader.read(fh, path)
            except OSError as exc:  # the disk or the pipe failed mid-read: what was read stands
                raise InputError(f"{_display(path)}: {exc.strerror or exc}") from None
            except Exception as exc:
                # A reader that a hostile file still trips up: the input cannot be read, which is an
                # input error (one line, exit 2), not an internal one. MCPTRACE_DEBUG shows the bug.
                if os.environ.get("MCPTRACE_DEBUG"):
                    raise
                raise InputError(
                    f"{_display(path)}: cannot be read as {reader.description}: {type(exc).__name__}: {exc}"
                ) from None

    return records() if reader.exact_order or not settled else settle(records())


def open_input(path: str, *, fmt: str | None = None, proof_bytes: int | None = None) -> OpenInput:
    """Open an input ("-": standard input; pipes and FIFOs too): its format and a streaming
    iterator of its records. The format is sniffed from the first HEAD_BYTES; a stream that cannot
    seek is read on from there without being read twice. PROOF_BYTES: a forced format is proven on
    that many first bytes of a file when they hold a message, else on the whole input (the viewer's
    check, which reads nothing else: a HAR's proof would parse the whole document)."""
    _ensure_builtin()
    chosen = None
    if fmt is not None:
        chosen = next((f for f in FORMATS if f.name == fmt), None)
        if chosen is None:
            raise InputError(f"unknown input format {fmt!r} (known: {', '.join(f.name for f in FORMATS)})")
    fh, size = _open_stream(path)
    try:
        head = fh.read(HEAD_BYTES)
    except OSError as exc:
        fh.close()
        raise InputError(f"{_display(path)}: {exc.strerror or exc}") from None
    skip = len(BOM) if head.startswith(BOM) else 0  # Windows tools start UTF-8 text files with one
    head = head[skip:]
    if not head.strip():
        fh.close()
        raise InputError(f"{_display(path)}: empty {'input' if size is None else 'file'}, nothing to read")
    if chosen is None:
        chosen = detect(head)
        if chosen is None:
            fh.close()
            raise InputError(
                f"{_display(path)}: not a recognised MCP capture (expected mcptrace JSONL, NDJSON of "
                f"JSON-RPC messages, an MCP host log, HAR, or a mitmproxy flow file)"
            )
    if size is not None:
        fh.seek(skip)
    else:
        fh = io.BufferedReader(_HeadThenRest(head, fh), buffer_size=HEAD_BYTES)
    items = reading(fh, path, chosen)
    # Only a forced format that detection would not choose is proven: one it would choose reads
    # as detected, lazily (the proof reads to the first message, which for a HAR or a .mitm file
    # is the whole file: the viewer parsed it before its background converter began), and could
    # never fail (a HAR with no entries is a clean input, not the wrong format; a reader that
    # stops on the input says so while reading, as for a detected one).
    if fmt is not None and detect(head) is not chosen:
        within = proof_bytes is not None and size is not None and size - skip > proof_bytes
        if within and _proven_within(fh, skip, proof_bytes, path, chosen, head):
            return OpenInput(path, chosen, items, fh, size)
        try:
            items = _proven(items, path, chosen, head)
        except BaseException:
            fh.close()
            raise
    return OpenInput(path, chosen, items, fh, size)


_BUILTIN_DONE = False


def _har_tail(path: str) -> list[bytes] | None:
    from tracer.inputs.hartail import read_har_tail

    return read_har_tail(path)


def _deferred(module: str, name: str) -> Callable:
    """Function NAME of reader module MODULE (tracer.inputs.har...), imported when first called.
    Most runs read mcptrace's own captures, whose sniffer is tried first and says yes: the other
    readers (and what they import, the HTTP replay of a HAR) are then never loaded, which took
    5 ms of every start-up with bytecode cached and 25 ms without. Detection calls the same
    sniffers in the same order, so its answers are the same."""
    fn: Callable | None = None

    def call(*args):
        nonlocal fn
        if fn is None:
            fn = getattr(importlib.import_module(module), name)
        return fn(*args)

    call.__name__ = call.__qualname__ = f"{module}.{name}"
    return call


def _ensure_builtin() -> None:
    global _BUILTIN_DONE
    if _BUILTIN_DONE:
        return
    _BUILTIN_DONE = True
    har, hostlog, ndjson = "tracer.inputs.har", "tracer.inputs.hostlog", "tracer.inputs.ndjson"
    register(
        InputFormat(
            "capture", "mcptrace capture (JSONL)", _sniff_capture, read_capture, priority=10, exact_order=True
        )
    )
    register(
        InputFormat(
            "har",
            "HTTP Archive (HAR)",
            _deferred(har, "sniff"),
            _deferred(har, "read"),
            priority=20,
            tail=_har_tail,
        )
    )
    register(
        InputFormat(
            "hostlog",
            "MCP host log (Claude Desktop mcp*.log style)",
            _deferred(hostlog, "sniff"),
            _deferred(hostlog, "read"),
            priority=30,
            context=_deferred(hostlog, "context"),
            rebuild=_deferred(hostlog, "rebuild"),
        )
    )
    register(
        InputFormat(
            "ndjson",
            "NDJSON: one JSON-RPC message per line",
            _deferred(ndjson, "sniff"),
            _deferred(ndjson, "read"),
            priority=90,
            context=_deferred(ndjson, "context"),
            rebuild=_deferred(ndjson, "rebuild"),
        )
    )
