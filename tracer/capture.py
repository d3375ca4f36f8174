"""Capture format v1: JSONL, one record per line, appended and flushed as it happens.

Line 1 is a header record; then `message`, `stderr`, `http` and `event` records. The raw bytes of a
message are stored as `text` when they are valid UTF-8, else as `b64`. A reader streams the file,
tolerates a torn last line (a killed writer), and reports a broken line by its number and goes on.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from tracer import __version__
from tracer.lines import LINE_MAX, LongLine, capped_readline, rest_of_line, skip_rest, torn_reason
from tracer.model import REC_HEADER as _REC_HEADER
from tracer.model import REC_MESSAGE as _MESSAGE  # (enum members as globals: tracer.model)
from tracer.model import REC_MESSAGE as _REC_MESSAGE
from tracer.model import REC_STDERR as _REC_STDERR
from tracer.model import Direction, Record, RecordType
from tracer.output import FORMAT_NAME, open_output
from tracer.recordmodel import check_envelope, check_header, check_int64, check_t_ns
from tracer.redact import redact_event_data, redact_header_record, redact_http
from tracer.safejson import dumps as safe_dumps

FORMAT_VERSION = 1
# The most buffers one writev(2) takes (Linux: 1024); a batch of more lines is joined first.
_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "writev") and "SC_IOV_MAX" in os.sysconf_names else 0


def now_iso(t_ns: int | None = None) -> str:
    t = (t_ns if t_ns is not None else time.time_ns()) / 1e9
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def header_record(
    transport: str,
    *,
    command: list[str] | None = None,
    upstream: str | None = None,
    label: str | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    t = time.time_ns()
    head: dict[str, Any] = {
        "type": "header",
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "tool": f"mcptrace/{__version__}",
        "started": now_iso(t),
        "t_ns": t,
        "transport": transport,
    }
    if command is not None:
        head["command"] = command
    if upstream is not None:
        head["upstream"] = upstream
    if label:
        head["label"] = label
    if extra:
        head.update(extra)
    return head


def _bytes_fields(raw: bytes, out: dict[str, Any]) -> None:
    try:
        out["text"] = raw.decode("utf-8")
    except UnicodeDecodeError:
        out["b64"] = base64.b64encode(raw).decode("ascii")


def record_to_dict(rec: Record, *, redact: bool = True) -> dict[str, Any]:
    """The JSON object a record is stored as (only the fields that are set)."""
    out: dict[str, Any] = {"type": rec.type.value, "seq": rec.seq, "t_ns": rec.t_ns}
    if rec.dir is not None:
        out["dir"] = rec.dir.value
    out["transport"] = rec.transport
    out["conn"] = rec.conn
    if rec.type in (_REC_MESSAGE, _REC_STDERR) or rec.raw:
        _bytes_fields(rec.raw, out)
    if rec.offset is not None:
        out["offset"] = rec.offset
    if not rec.eol:
        out["eol"] = False
    if rec.dir_inferred:
        out["dir_inferred"] = True
    if rec.http is not None:
        # headers and URL redacted, session ids hashed (the same id, the same stored value)
        out["http"] = redact_http(rec.http) if redact else dict(rec.http)
    if rec.sse is not None:
        out["sse"] = rec.sse
    if rec.data is not None:
        out["data"] = redact_event_data(rec.data) if redact else rec.data
    return out


_RTYPES = {t.value: t for t in RecordType}
_DIRS = {d.value: d for d in Direction}


# The members the writer gives a plain stdio message record (record_to_dict): by far the most
# common record, so `record_from_dict` builds it with no per-member `get` (see `_fast_record`).
# (Seven members that all index without a KeyError are exactly these seven: cheaper to find out
# than comparing key sets.)
_PLAIN_MESSAGE_LEN = len(("type", "seq", "t_ns", "dir", "transport", "conn", "text"))


def _fast_record(obj: dict[str, Any], line: int, source: str) -> Record | None:
    """The fast path of `record_from_dict` for a record with exactly the plain message members,
    each of the type the writer gives it; None for anything else: the general path then decides,
    so the result is the same whichever path builds it."""
    if len(obj) != _PLAIN_MESSAGE_LEN:
        return None
    try:
        d = obj["dir"]
        text = obj["text"]
        seq = obj["seq"]
        t_ns = obj["t_ns"]
        conn = obj["conn"]
        rtype = obj["type"]
        transport = obj["transport"]
    except KeyError:  # seven members, but not these seven
        return None
    if (
        rtype != "message"
        or type(d) is not str
        or type(text) is not str
        or type(seq) is not int
        or type(t_ns) is not int
        or type(conn) is not str
        or type(transport) is not str
        or (seq | t_ns) >> 63
    ):  # either beyond 2**63-1 (orjson reads to 2**64-1) or negative: the
        return None  # general path decides
    direction = _DIRS.get(d)
    if direction is None:
        return None
    try:
        raw = text.encode()
    except UnicodeEncodeError:  # lone surrogates: the general path keeps them
        return None
    return Record(
        _MESSAGE,
        seq,
        t_ns,
        direction,
        raw,
        transport,
        conn,
        None,
        True,
        False,
        None,
        None,
        None,
        line,
        source,
    )


def record_from_dict(obj: dict[str, Any], *, line: int = 0, source: str = "") -> Record:
    """Build a record from its stored object; raises ValueError with a reason when malformed."""
    rec = _fast_record(obj, line, source)
    if rec is not None:
        return rec
    get = obj.get
    t = get("type")
    rtype = _RTYPES.get(t) if type(t) is str else None  # (a list or an object is no type either)
    if rtype is None:
        raise ValueError(f"unknown record type {get('type')!r}")
    if rtype is _REC_HEADER:
        t_ns = get("t_ns", 0)
        check_t_ns(t_ns)
        check_header(obj)
        return Record(_REC_HEADER, data=obj, line=line, source=source, t_ns=t_ns)
    text = get("text")
    if text is not None:
        if type(text) is not str:
            raise ValueError("'text' is not a string")
        try:
            raw = text.encode()
        except UnicodeEncodeError:  # lone surrogates: keep them, the message is then invalid
            raw = text.encode("utf-8", "surrogatepass")
    elif "b64" in obj:
        if type(obj["b64"]) is not str:
            raise ValueError("'b64' is not a string")
        try:
            raw = base64.b64decode(obj["b64"], validate=True)
        except (ValueError, TypeError):
            raise ValueError("'b64' is not valid base64") from None
    else:
        raw = b""
    d = get("dir")
    if d is None:
        if rtype is _MESSAGE:
            raise ValueError("message record without 'dir'")
        direction = None
    else:
        direction = _DIRS.get(d) if type(d) is str else None
        if direction is None:
            raise ValueError(f"unknown direction {d!r}")
    seq = get("seq", 0)
    t_ns = get("t_ns", 0)
    check_int64("seq", seq)
    check_t_ns(t_ns)
    transport, conn, offset, eol, inferred, http, sse, data = check_envelope(obj)
    return Record(
        rtype,
        seq,
        t_ns,
        direction,
        raw,
        transport,
        conn,
        offset,
        eol,
        inferred,
        http,
        sse,
        data,
        line,
        source,
    )


class CaptureWriter:
    """Appends records to a capture file; every record is on disk as soon as it is written.

    Thread-safe: the tee's writer thread and the proxy's event loop may share one writer. Sequence
    numbers are assigned here, so they are monotonic in file order (within one session: a capture
    appended to starts a new session with its own header, see `tracer.output.open_output`). Each
    record, or each batch of whole records, is a single write to the end of the file, so two
    writers appending to one file at once never interleave inside a line.
    """

    # credentials a server started by the tee or by replay may echo anywhere (its arguments and
    # environment; an endpoint's headers and URL for replay), hidden there (tracer.redact.process_secrets)
    stderr_secrets: tuple[bytes, ...] = ()

    def __init__(
        self,
        path: str | os.PathLike[str],
        header: dict[str, Any],
        *,
        redact: bool = True,
        overwrite: bool = False,
    ):
        self.path = os.fspath(path)
        self.redact = redact
        self._fd, self.created, torn_tail = open_output(self.path, overwrite=overwrite)
        self._lock = threading.Lock()
        self._seq = 0
        self.records_written = 0
        header = redact_header_record(header) if redact else dict(header)
        header.setdefault("redacted", redact)
        # a torn last line of an earlier writer is ended first, so the new header is a line of its own
        # (safe_dumps: a command line argument that is not UTF-8 reaches us surrogate-escaped, and
        # orjson refused it: the tee stopped with "internal error" before the server started)
        self._write_bytes((b"\n" if torn_tail else b"") + safe_dumps(header) + b"\n")

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def fileno(self) -> int:
        return self._fd

    def _write_bytes(self, data: bytes) -> None:
        if self._fd < 0:
            raise ValueError("write to a closed capture")
        view = memoryview(data)
        while view:  # (a regular file takes it all at once; a pipe or a full disk may not)
            view = view[os.write(self._fd, view) :]

    def _write_lines(self, lines: list[bytes]) -> None:
        """Whole lines in one system call, as one write of their join would be, without the join: a
        flood's batch is megabytes, and copying it once more costs about as much as writing it."""
        if len(lines) > _IOV_MAX or self._fd < 0:
            self._write_bytes(b"".join(lines))
            return
        done = os.writev(self._fd, lines)
        if done < sum(map(len, lines)):  # (a regular file takes it all; a pipe or a full disk may not)
            self._write_bytes(b"".join(lines)[done:])

    def next_seq(self) -> int:
        with self._lock:
            self._seq += 1
            return self._seq

    def write(self, rec: Record) -> Record:
        """Write a record, assigning its seq (and t_ns if unset). Returns the record."""
        with self._lock:
            self._seq += 1
            rec.seq = self._seq
            if not rec.t_ns:
                rec.t_ns = time.time_ns()
            line = safe_dumps(record_to_dict(rec, redact=self.redact)) + b"\n"
            if len(line) > _LINE_LIMIT:
                line = _fitted(rec, len(line), self.redact)
            self._write_bytes(line)
            self.records_written += 1
        return rec

    def write_many(
        self, recs: Iterable[Record], encode: Callable[[Record], bytes | None] | None = None
    ) -> None:
        """Write records that arrived together with a single flush: each record is on disk as soon
        as its batch is processed, at one system call per batch. `encode(rec)` may return the
        record's line (ending in a newline) for a fast path, or None for the general encoder; it
        runs after the seq is assigned."""
        dumps = orjson.dumps
        newline = orjson.OPT_APPEND_NEWLINE
        lines = []
        with self._lock:
            for rec in recs:
                if rec.__class__ is not Record:  # a run of lines that encodes itself (tracer.stdio.runs)
                    lines.append(rec.encode(self._seq + 1))
                    self._seq += rec.count
                    self.records_written += rec.count
                    continue
                self._seq += 1
                rec.seq = self._seq
                if not rec.t_ns:
                    rec.t_ns = time.time_ns()
                line = encode(rec) if encode is not None else None
                if line is None:
                    obj = record_to_dict(rec, redact=self.redact)
                    try:
                        line = dumps(obj, option=newline)
                    except TypeError:
                        # a value orjson refuses: a lone surrogate (mitmproxy's surrogateescape of a
                        # request path that is not UTF-8), an integer past 64 bits. The record is
                        # written all the same (the refusal lost it, and every later one of its batch)
                        line = safe_dumps(obj, option=newline)
                if len(line) > _LINE_LIMIT:
                    line = _fitted(rec, len(line), self.redact)
                lines.append(line)
                self.records_written += 1
            self._write_lines(lines)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                fd, self._fd = self._fd, -1
                os.close(fd)

    def __enter__(self) -> CaptureWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_LINE_LIMIT = LINE_MAX + 1  # (with its newline)


def fitted(rec: Record, length: int, encode: Callable[[Record], bytes], limit: int = _LINE_LIMIT) -> bytes:
    """The line ENCODE makes of a record whose line would be LENGTH bytes, longer than LIMIT (no
    reader reads past the line cap, tracer.lines): its bytes cut to fit, whole characters, the bytes
    not kept counted in `data.cut` as the tee counts a line's past its own cap. (No real peer sends
    such a message; a hostile one is still relayed whole.)"""
    raw = rec.raw
    keep = len(raw)
    while True:
        keep = keep * (limit - 64 * 1024) // length  # (the other fields keep their size)
        while 0 < keep < len(raw) and raw[keep] & 0xC0 == 0x80:  # (not inside a UTF-8 character)
            keep -= 1
        data = dict(rec.data) if rec.data is not None else {}
        cut = data.get("cut")
        data["cut"] = (cut if type(cut) is int and cut > 0 else 0) + len(raw) - keep
        line = encode(dataclasses.replace(rec, raw=raw[:keep], data=data))
        if len(line) <= limit or keep == 0:
            return line
        length = len(line)


def _fitted(rec: Record, length: int, redact: bool) -> bytes:
    return fitted(rec, length, lambda r: safe_dumps(record_to_dict(r, redact=redact)) + b"\n")


@dataclass(slots=True)
class ReadProblem:
    """A capture line that could not be read. The reader goes on after it."""

    source: str
    line: int
    message: str
    torn: bool = False  # the last line, cut short (the writer was killed or is still writing)

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.message}"


def _line_problem(line: bytes, n: int, source: str) -> ReadProblem | None:
    """Why a capture line is not a record (None: a blank line), read again without its newline so
    the parser's message gives the same positions whichever way the line was first read."""
    if type(line) is LongLine:
        return ReadProblem(source, n, line.message())
    had_nl = line.endswith(b"\n")
    if had_nl:
        line = line[:-1]
    if not line.strip():
        return None
    try:
        obj = orjson.loads(line)
        if type(obj) is not dict:
            raise ValueError("record is not a JSON object")
        record_from_dict(obj, line=n, source=source)
    except (orjson.JSONDecodeError, ValueError) as exc:
        if not had_nl:
            return ReadProblem(source, n, f"{torn_reason(line)}; ignored", torn=True)
        return ReadProblem(source, n, f"broken capture record: {exc}")
    return None  # not reached: the line failed a moment ago


def read_record(line: bytes, n: int = 0, source: str = "") -> Record | None:
    """The record of one capture line, as `read_capture` reads it; None when the line holds none."""
    try:
        obj = orjson.loads(line)
        if type(obj) is not dict:
            return None
        return _fast_record(obj, n, source) or record_from_dict(obj, line=n, source=source)
    except (orjson.JSONDecodeError, ValueError):
        return None


def read_capture(fh: Iterable[bytes], source: str = "", start: int = 0) -> Iterator[Record | ReadProblem]:
    """Stream the records of a capture file (binary mode, or any iterable of its lines, each with
    its newline); problems are yielded, never raised. `start`: the number of lines before the first
    given (lint's router reads its own lines and gives this the few it reads in full,
    tracer.parallel_route)."""
    loads = orjson.loads
    fast = _fast_record
    saw_header = False
    n = start
    lines, limit = fh, None
    if hasattr(fh, "readline"):  # a file: no line longer than the cap is held (tracer.lines)
        readline, limit = capped_readline(fh)
        lines = iter(readline, b"")
    # The lint hot path: each line goes to orjson as read (its final newline is JSON whitespace),
    # with no copy, no strip and no extra generator; blank lines are sorted out when they fail.
    for line in lines:
        n += 1
        if len(line) == limit and line[-1] != 10:  # (a line longer than a piece: tracer.lines)
            line = rest_of_line(fh, line)
            if type(line) is LongLine:
                yield ReadProblem(source, n, line.message())
                if not line.ended:
                    skip_rest(fh)
                continue
        try:
            obj = loads(line)
            if type(obj) is not dict:
                raise ValueError("record is not a JSON object")
            rec = fast(obj, n, source) or record_from_dict(obj, line=n, source=source)
        except (orjson.JSONDecodeError, ValueError):
            problem = _line_problem(line, n, source)
            if problem is not None:  # else a blank line
                yield problem
            continue
        if rec.type is _REC_HEADER:
            if saw_header:
                # Concatenated captures: a new header starts a new capture; keep going.
                pass
            saw_header = True
            version = obj.get("version")
            if type(version) is int and version > FORMAT_VERSION:
                yield ReadProblem(
                    source,
                    n,
                    f"capture format version {version} is newer than this mcptrace reads "
                    f"({FORMAT_VERSION}); reading what it can",
                )
        yield rec


def write_records(
    path: str, header: dict[str, Any], records: Iterable[Record], *, redact: bool = True
) -> int:
    """Write a whole capture at once (importers, replay). Returns the number of records."""
    with CaptureWriter(path, header, redact=redact) as w:
        for rec in records:
            w.write(rec)
        return w.records_written
