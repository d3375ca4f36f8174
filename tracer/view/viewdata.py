"""What the viewer shows, without the UI: rows of a capture, read lazily, with their analysis.

A `CaptureView` joins three sources:
- the line index (tracer.index): row N's bytes are one pread away;
- raw-derived basics, parsed only for the rows asked for (the screen) and kept in a small LRU:
  time, direction, kind, method, id, text previews;
- the background analysis (tracer.view.annotations): era, pairing, latency, findings, once the
  analysis process has reached the row.

Everything here may be called from worker threads; the UI only posts what it gets.
"""

from __future__ import annotations

import base64
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from tracer.capture import record_from_dict
from tracer.classify import classify_raw
from tracer.filter import id_text
from tracer.index import LineIndex
from tracer.inputs.lazy import RecordIndex, converted_header, converted_records, record_line
from tracer.inputs.spooled import SpoolIndex
from tracer.model import Record
from tracer.safejson import dumps_text, safe_text
from tracer.view.annotations import Annotations, RowSummary

LRU_ROWS = 4096
PREVIEW = 400  # characters of stderr / text kept in a row's basics


@dataclass(slots=True)
class RowBasics:
    """What the raw line says, before (or without) analysis."""

    row: int
    rtype: str  # header message stderr http event broken blank
    t_ns: int = 0
    seq: int = 0
    dir: str | None = None
    kind: str | None = None
    method: str | None = None
    id: Any = None
    has_id: bool = False
    conn: str | None = None
    transport: str | None = None
    status: int | None = None
    label: str = ""  # what the list shows in the method column for non-messages
    preview: str = ""  # a few words about the message: tool name, error message, progress...
    size: int = 0  # bytes of the line
    dir_inferred: bool = False


@dataclass(slots=True)
class RowInfo:
    """A row as the list draws it: basics plus the analysis when it has arrived."""

    basics: RowBasics
    ann: RowSummary | None = None

    @property
    def row(self) -> int:
        return self.basics.row

    @property
    def analysed(self) -> bool:
        return self.ann is not None

    @property
    def kind(self) -> str | None:
        return self.ann.kind if self.ann is not None and self.ann.kind else self.basics.kind

    @property
    def era(self) -> str | None:
        return self.ann.era if self.ann is not None else None

    @property
    def label(self) -> str:
        if self.ann is not None and self.ann.method:
            return self.ann.method
        b = self.basics
        return b.method or b.label or ""

    @property
    def answers(self) -> bool:
        """The label is the method this response answers."""
        return self.kind in ("result", "error") and bool(self.label)

    @property
    def latency_ns(self) -> int | None:
        return self.ann.latency_ns if self.ann is not None else None

    @property
    def nfind(self) -> int:
        return self.ann.nfind if self.ann is not None else 0

    @property
    def worst(self) -> int:
        return self.ann.worst if self.ann is not None else 0

    @property
    def partner(self) -> int | None:
        return self.ann.partner if self.ann is not None else None

    @property
    def op_row(self) -> int | None:
        return self.ann.op_row if self.ann is not None else None


@dataclass(slots=True)
class RowDetail:
    """Everything the detail pane shows for one row."""

    row: int
    line: bytes  # the capture line (capped)
    line_size: int
    record: Record | None
    problem: str | None = None  # why the line is not a record
    analysis: dict[str, Any] | None = None  # tracer.view.annotate details
    summary: RowSummary | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    where: str = ""  # where the row is in what the user opened: "capture line 12", "line 3 of x.ndjson"


def basics_from_line(row: int, line: bytes) -> RowBasics:
    if not line.strip():
        return RowBasics(row, "blank", label="(blank line)", size=len(line))
    try:
        obj = orjson.loads(line)
        if type(obj) is not dict:
            raise ValueError("not an object")
        rtype = obj.get("type")
    except (orjson.JSONDecodeError, ValueError):
        return RowBasics(row, "broken", label="broken capture line", size=len(line))
    b = RowBasics(
        row, rtype if rtype in ("header", "message", "stderr", "http", "event") else "broken", size=len(line)
    )
    t = obj.get("t_ns")
    b.t_ns = t if type(t) is int else 0
    seq = obj.get("seq")
    b.seq = seq if type(seq) is int else 0
    d = obj.get("dir")
    b.dir = d if d in ("c2s", "s2c") else None
    b.conn = str(obj.get("conn")) if obj.get("conn") is not None else None
    b.transport = obj.get("transport")
    b.dir_inferred = bool(obj.get("dir_inferred"))
    http = obj.get("http") if type(obj.get("http")) is dict else None
    if http:
        status = http.get("status")
        b.status = status if type(status) is int else None
    if b.rtype == "message":
        raw = _raw_of(obj)
        c = classify_raw(raw)
        b.kind = c.kind.value
        # (a method or preview may hold lone surrogates, legal JSON escapes no terminal can write)
        b.method = safe_text(c.method) if c.method is not None else None
        b.id = safe_text(c.id) if type(c.id) is str else c.id
        b.has_id = c.id is not None or c.idkey is not None
        b.preview = safe_text(preview(c.obj, b.kind, c.reason))
    elif b.rtype == "stderr":
        b.label = _raw_of(obj).decode("utf-8", "replace")[:PREVIEW]
    elif b.rtype == "http":
        h = http or {}
        b.label = f"{h.get('method') or ''} {h.get('url') or ''} → {h.get('status') or ''}".strip()
    elif b.rtype == "event":
        data = obj.get("data") if type(obj.get("data")) is dict else {}
        name = data.get("event", "event")
        rest = ", ".join(f"{k} {v}" for k, v in data.items() if k != "event")
        b.label = safe_text(f"{name}: {rest}" if rest else str(name))
    elif b.rtype == "header":
        what = obj.get("command") or obj.get("upstream") or ""
        if isinstance(what, list):
            what = " ".join(str(x) for x in what)
        b.label = f"capture {obj.get('transport', '')} {what}".rstrip() + (
            f" · {obj['label']}" if obj.get("label") else ""
        )
    else:
        b.label = "broken capture record"
    return b


_PREFIX_FIELDS = re.compile(rb'"(type|dir|transport|conn)":"([^"]*)"|"(seq|t_ns)":(\d+)')


def basics_from_prefix(row: int, head: bytes, size: int) -> RowBasics:
    """Basics of a line too long to parse for a list row: the envelope fields that our capture
    writer puts before the payload."""
    b = RowBasics(row, "message", size=size)
    for m in _PREFIX_FIELDS.finditer(head):
        if m.group(1):
            name, value = m.group(1).decode(), m.group(2).decode("utf-8", "replace")
            if name == "type":
                b.rtype = value if value in ("header", "message", "stderr", "http", "event") else "broken"
            elif name == "dir":
                b.dir = value if value in ("c2s", "s2c") else None
            else:
                setattr(b, name, value)
        else:
            setattr(b, m.group(3).decode(), int(m.group(4)))
    b.label = f"({size / 1048576:.1f} MB record; the detail pane reads it)"
    b.preview = b.label
    return b


def _short(value: Any, limit: int = 80) -> str:
    text = safe_text(value) if isinstance(value, str) else dumps_text(value)
    text = text.replace("\n", " ").replace("\r", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def preview(obj: Any, kind: str, reason: str | None = None) -> str:
    """A few words that tell similar messages apart in the list."""
    if kind == "invalid":
        return reason or ""
    if kind == "batch":
        return f"{len(obj)} members" if isinstance(obj, list) else ""
    if not isinstance(obj, dict):
        return ""
    params = obj.get("params") if isinstance(obj.get("params"), dict) else {}
    if kind in ("request", "notification"):
        for key in ("name", "uri", "protocolVersion", "level"):
            if isinstance(params.get(key), str):
                extra = ""
                if key == "level" and "data" in params:
                    extra = " " + _short(params["data"], 60)
                return params[key] + extra
        if "progress" in params:
            # (any of these may be any JSON value: _short writes each safely, and short)
            total = f"/{_short(params['total'], 20)}" if "total" in params else ""
            return f"progress {_short(params['progress'], 20)}{total}" + (
                f" {_short(params['message'], 60)}" if params.get("message") else ""
            )
        if "requestId" in params:
            return f"request {_short(params['requestId'])}" + (
                f": {_short(params['reason'], 60)}" if params.get("reason") else ""
            )
        return ""
    if kind == "error":
        err = obj.get("error") if isinstance(obj.get("error"), dict) else {}
        return f"{_short(err.get('code', ''), 20)} {_short(err.get('message', ''), 70)}".strip()
    result = obj.get("result")
    if not isinstance(result, dict):
        return _short(result) if result is not None else ""
    if result.get("resultType") == "input_required":
        keys = (
            ", ".join((result.get("inputRequests") or {}).keys())
            if isinstance(result.get("inputRequests"), dict)
            else ""
        )
        return f"input required: {keys}" if keys else "input required"
    content = result.get("content")
    if isinstance(content, list) and content and isinstance(content[0], dict):
        first = content[0]
        text = (
            first.get("text") if isinstance(first.get("text"), str) else f"[{_short(first.get('type'), 20)}]"
        )
        return ("error: " if result.get("isError") else "") + _short(text)
    for key in ("tools", "resources", "prompts", "resourceTemplates", "contents"):
        if isinstance(result.get(key), list):
            return f"{len(result[key])} {key}"
    if "protocolVersion" in result:
        return f"protocolVersion {_short(result['protocolVersion'], 40)}"
    if "supportedVersions" in result:
        return "supports " + _short(result["supportedVersions"])
    return ""


def _raw_of(obj: dict[str, Any]) -> bytes:
    text = obj.get("text")
    if type(text) is str:
        return text.encode("utf-8", "surrogatepass")
    b64 = obj.get("b64")
    if type(b64) is str:
        try:
            return base64.b64decode(b64)
        except ValueError:
            return b""
    return b""


class CaptureView:
    """Rows of one capture file (our JSONL; other inputs read lazily or converted, see open_view)."""

    DETAIL_CAP = 16 << 20  # bytes of a line read for the detail pane before "expand"
    ROW_CAP = 1 << 20  # a list row parses at most this much; longer lines show their envelope only

    def __init__(
        self,
        path: str,
        *,
        follow: bool = False,
        analyse: bool = True,
        on_analysis: Callable[[Annotations], None] | None = None,
        source: str | None = None,
        cleanup: Callable[[], None] | None = None,
        index: LineIndex | RecordIndex | SpoolIndex | None = None,
    ):
        self.path = path
        self.source = source or path  # what the user opened (differs for converted inputs)
        self.follow = follow
        # rows read lazily from another format (tracer.inputs.lazy): the rows of its conversion
        self.lazy = index is not None
        self.index = index if index is not None else LineIndex(path, final=not follow)
        self.ann = Annotations(path, follow=follow, on_progress=on_analysis) if analyse else None
        self._basics: OrderedDict[int, RowBasics] = OrderedDict()
        self.parsed = 0  # rows parsed from raw so far (the laziness test reads it)
        self._cleanup = cleanup
        self._lock = threading.Lock()
        self.closed = False

    def start(self) -> None:
        """Start the background analysis (any thread; nothing happens once closed). A capture
        still being converted in the background is analysed once it is whole (the analysis of a
        file that is not followed ends at its end, with the end-of-session rules)."""
        index = self.index
        if isinstance(index, SpoolIndex) and index.when_written(self.start):
            return
        with self._lock:
            if self.ann is not None and not self.closed and self.ann.proc is None:
                self.ann.start()

    def close(self) -> None:
        with self._lock:
            if self.closed:
                return
            self.closed = True
        if self.ann is not None:
            self.ann.stop()
        self.index.close()
        if self._cleanup is not None:
            self._cleanup()
            self._cleanup = None

    # -- rows --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.index)

    def basics(self, row: int) -> RowBasics:
        cache = self._basics
        b = cache.get(row)
        if b is not None:
            cache.move_to_end(row)
            return b
        size = self.index.length(row)
        if size > self.ROW_CAP:
            b = basics_from_prefix(row, self.index.line(row, limit=4096), size)
        else:
            b = basics_from_line(row, self.index.line(row))
        self.parsed += 1
        cache[row] = b
        if len(cache) > LRU_ROWS:
            cache.popitem(last=False)
        return b

    def info(self, row: int) -> RowInfo:
        ann = self.ann.row(row) if self.ann is not None else None
        return RowInfo(self.basics(row), ann)

    def detail(self, row: int, cap: int | None = None) -> RowDetail:
        cap = cap or self.DETAIL_CAP
        size = self.index.length(row)
        line = self.index.line(row, limit=cap)
        rec: Record | None = None
        problem = None
        if size > cap:
            problem = f"the line is {size:,} bytes; showing the first {cap:,} (press e to load it all)"
        else:
            try:
                obj = orjson.loads(line)
                if type(obj) is not dict:
                    raise ValueError("the line is not a JSON object")
                rec = record_from_dict(obj, line=self._line_of(row, obj), source=self.source)
            except (orjson.JSONDecodeError, ValueError) as exc:
                problem = f"not a capture record: {exc}" if line.strip() else "blank line"
        summary = self.ann.row(row) if self.ann is not None else None
        analysis = self.ann.details(summary, rec) if self.ann is not None else None
        return RowDetail(row, line, size, rec, problem, analysis, summary, where=self._where(row, rec))

    @property
    def converted(self) -> bool:
        """The rows come from another format (NDJSON, host log...): written as a temporary capture,
        or read lazily as the rows of that conversion."""
        return self.lazy or self.source != self.path

    def _line_of(self, row: int, obj: dict[str, Any]) -> int:
        if self.converted:
            n = obj.get("line")
            return n if type(n) is int and n > 0 else 0
        return row + 1

    def _where(self, row: int, rec: Record | None) -> str:
        """The line lint names for this row: the capture's own line, or the original file's."""
        if not self.converted:
            return f"capture line {row + 1:,}"
        if rec is not None and rec.line:
            return f"line {rec.line:,} of {os.path.basename(self.source)}"
        return f"read from {os.path.basename(self.source)}"

    def grow(self) -> int:
        """Index what was appended to the file (follow mode). Returns the new row count."""
        self.index.update()
        return len(self.index)

    # -- navigation --------------------------------------------------------------------------

    def partner(self, row: int) -> int | None:
        info = self.info(row)
        return info.partner

    def next_finding(self, row: int, step: int = 1) -> int | None:
        if self.ann is None:
            return None
        return self.ann.next_finding(row, step)


def converted_capture(path: str, fmt_name: str, records) -> tuple[str, Callable[[], None]]:
    """Write another input format's records as a temporary capture; returns (path, cleanup).

    Written as the input says, not as a recorder would: no time where the input has none (bare
    NDJSON), the reader's own seq numbers (those lint reports), and each record's line in the
    original file (`line`, which only the viewer reads) so the viewer points where lint points."""
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix="mcptrace-view-", suffix=".jsonl")  # (mode 0600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(converted_header(path, fmt_name) + b"\n")
        for rec in converted_records(records):
            fh.write(record_line(rec) + b"\n")

    def cleanup() -> None:
        try:
            os.unlink(tmp)
        except OSError:
            pass

    return tmp, cleanup


def id_of(b: RowBasics) -> str | None:
    return id_text(b.id) if b.has_id else None


def open_view(
    path: str,
    *,
    follow: bool = False,
    fmt: str | None = None,
    on_analysis: Callable[[Annotations], None] | None = None,
    whole: bool = False,
) -> CaptureView:
    """A CaptureView of any input lint reads: our captures by their lines, host logs and NDJSON by
    lazy rows, other formats (HAR, .mitm) converted to a temporary capture in the background (a HAR
    entry by entry unless WHOLE: its index raises tracer.inputs.spooled.InputRestart when the file
    must be opened again with whole=True). Raises tracer.inputs.InputError."""
    from tracer.inputs import open_input
    from tracer.inputs.lazy import lazy_rows

    if follow and fmt in (None, "capture") and os.path.isfile(path) and os.path.getsize(path) == 0:
        return CaptureView(path, follow=True, on_analysis=on_analysis)  # the writer has not begun
    inp = open_input(path, fmt=fmt)
    if inp.format.name == "capture":
        inp.fh.close()
        return CaptureView(path, follow=follow, on_analysis=on_analysis)
    if lazy_rows(inp, fmt):
        # rows straight from the input, the same as its conversion's; the analysis process reads
        # them the same way (tracer.inputs.lazy.open_rows)
        return CaptureView(path, follow=False, on_analysis=on_analysis, index=RecordIndex(inp))
    # converted to a temporary capture in the background, shown as it is written
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix="mcptrace-view-", suffix=".jsonl")  # (mode 0600)
    os.close(fd)

    def cleanup() -> None:
        try:
            os.unlink(tmp)
        except OSError:
            pass

    try:
        index = SpoolIndex(inp, tmp, whole=whole)
    except BaseException:
        inp.fh.close()
        cleanup()
        raise
    return CaptureView(tmp, follow=False, on_analysis=on_analysis, source=path, cleanup=cleanup, index=index)
