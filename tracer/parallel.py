"""`mcptrace lint --jobs N`: the work of a lint run shared by N worker processes, merged back in input
order, so every report is byte for byte the one a single process writes.

- A big mcptrace capture is sharded by connection: every worker reads the whole file (reading is a
  few percent of the analysis) and analyses only the connections it owns. Ownership is decided on a
  connection's first record, the same way in every worker (the least-loaded worker so far), so a
  connection's records (its session, and the later sessions of appended recordings) stay in one
  analyser. HTTP connections all go to worker 0: stateless HTTP sessions share their endpoint's facts
  (tracer.http.state), which a single analyser must hold. A file where that cannot hold (an HTTP
  record on a connection that began as another transport, or sessions sharing other facts through
  `Analyser.shared`) is re-linted in this process from its start, with what was already reported
  held back: slower, never different.
- Other files (HAR, host logs, NDJSON, small captures) go whole to one worker each.
- Each item a worker reports carries a key: (line, phase, line the session began), so the parent
  merges the workers' streams in the order one analyser meets them (a recording's header and the end
  of the file close every open session in the order the sessions began). Workers send batches and a
  watermark every few thousand lines; the parent reads a worker only when the merge needs it, so the
  pipes hold back a worker that runs ahead: memory stays bounded.
Inputs below POOL_MIN_BYTES, standard input and formats registered by the CLI stay in this process.
"""

from __future__ import annotations

import io
import os
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field

import orjson

from tracer.analyser import _CLOSE_EVENTS as CLOSE_EVENTS
from tracer.analyser import Analyser, RuleSet
from tracer.capture import ReadProblem, read_capture
from tracer.classify import classify_common, classify_raw
from tracer.inputs import HEAD_BYTES, InputError, OpenInput, open_input
from tracer.model import Analysed, Direction, Kind, RecordType

POOL_MIN_BYTES = 16 * 1024 * 1024  # below this, process start-up costs more than the other cores give
SHARD_MIN_BYTES = 2 * 1024 * 1024  # a smaller capture goes whole to one worker
BUILTIN_FORMATS = frozenset({"capture", "har", "hostlog", "ndjson"})  # what a fresh process can read
HTTP_TRANSPORTS = frozenset({"http", "http+sse"})
BATCH_ITEMS = 512
WATERMARK_LINES = 4096
END = sys.maxsize  # the line key of what happens at the end of a file
_BOM = b"\xef\xbb\xbf"


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _env_bytes(name: str, default: int) -> int:
    """A size threshold, tunable from the environment (the tests use 0 to make small inputs shard)."""
    try:
        return max(0, int(os.environ[name]))
    except (KeyError, ValueError):
        return default


@dataclass(frozen=True)
class Task:
    index: int  # position among the run's inputs
    path: str
    fmt: str | None  # --input-format as given (None: detected, as in the parent)
    size: int
    shard: bool  # by connection across every worker; else whole, by `owner`
    owner: int = 0


@dataclass
class FileResult:
    """What the merge of one file learnt besides what it reported on the way."""

    records: int = 0
    messages: int = 0
    eras: list[tuple[str, int]] = field(default_factory=list)  # in order of first appearance
    cells: list[tuple[str, str]] = field(default_factory=list)  # (conn, cell) as sessions ended
    redo_from_line: int | None = None  # sharding did not hold from this line: re-lint the file


def plan(opened: list[OpenInput], jobs: int, fmt: str | None = None) -> list[Task | None]:
    """Which inputs the pool takes, and how (None: this process lints it)."""
    if jobs <= 1:
        return [None] * len(opened)
    pool_min = _env_bytes("MCPTRACE_LINT_POOL_MIN", POOL_MIN_BYTES)
    shard_min = _env_bytes("MCPTRACE_LINT_SHARD_MIN", SHARD_MIN_BYTES)
    eligible = [inp.size is not None and inp.format.name in BUILTIN_FORMATS for inp in opened]
    if sum(inp.size or 0 for inp, ok in zip(opened, eligible, strict=True) if ok) < pool_min:
        return [None] * len(opened)
    load = [0] * jobs
    tasks: list[Task | None] = []
    for i, (inp, ok) in enumerate(zip(opened, eligible, strict=True)):
        if not ok:
            tasks.append(None)
            continue
        size = inp.size or 0
        if inp.format.name == "capture" and size >= shard_min and not _http_capture(inp.path):
            tasks.append(Task(i, inp.path, fmt, size, True))
            load = [x + size // jobs for x in load]
        else:
            w = min(range(jobs), key=load.__getitem__)
            load[w] += size
            tasks.append(Task(i, inp.path, fmt, size, False, w))
    return tasks


def _http_capture(path: str) -> bool:
    """Whether a capture says it recorded HTTP (the proxy's): its connections would all go to worker
    0, so the file goes there whole instead of being read by every worker. (Only a hint: sharding
    stays right whatever the header says.)"""
    try:
        with open(path, "rb") as fh:
            first = fh.readline(HEAD_BYTES).removeprefix(_BOM)
        head = orjson.loads(first)
    except (OSError, orjson.JSONDecodeError):
        return False
    return type(head) is dict and head.get("transport") in HTTP_TRANSPORTS


# -- the worker side -----------------------------------------------------------------------------


class _Out:
    """A worker's outgoing stream for one file: keyed items in batches."""

    def __init__(self, conn, index: int):
        self.conn = conn
        self.index = index
        self.items: list = []

    def add(self, key: tuple, item: tuple) -> None:
        self.items.append((key, item))
        if len(self.items) >= BATCH_ITEMS:
            self.flush()

    def flush(self) -> None:
        if self.items:
            self.conn.send((self.index, self.items))
            self.items = []


class _Limited(io.RawIOBase):
    """The first `left` bytes of a file: every worker reads the same bytes of a file still growing."""

    def __init__(self, fh, left: int):
        self._fh = fh
        self._left = left

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[override]
        n = min(len(buf), self._left)
        if n <= 0:
            return 0
        got = self._fh.readinto(memoryview(buf)[:n]) or 0
        self._left -= got
        return got

    def close(self) -> None:
        self._fh.close()
        super().close()


def _capture_items(path: str, size: int) -> Iterator:
    try:
        fh = open(path, "rb", buffering=0)  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    with fh:
        skip = len(_BOM) if fh.read(len(_BOM)) == _BOM else 0  # as tracer.inputs.open_input does
        fh.seek(skip)
        try:
            yield from read_capture(io.BufferedReader(_Limited(fh, size - skip), 1 << 16), path)
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}") from None


class _FileWork:
    """One worker's analysis of one file: the lint loop (tracer.lint) for the records it owns."""

    def __init__(self, task: Task, rules: RuleSet, digests: bool, out: _Out):
        self.task = task
        self.analyser = Analyser(rules)
        self.digests = digests
        self.out = out
        self.messages = 0
        self.eras: dict = {}  # Era -> [count, key of its first message]
        self.born: dict[str, int] = {}  # conn -> line its open session began

    def record(self, rec, line: int) -> None:
        """Analyse a record this worker owns, reporting as tracer.lint.lint_paths does."""
        a_ = self.analyser
        out = self.out
        key = (line, 1, 0)
        conn = rec.conn
        had = conn in a_.sessions
        try:
            a = a_.feed(rec)
        except Exception as exc:
            out.add(
                key,
                (
                    "p",
                    ReadProblem(
                        rec.source or self.task.path,
                        rec.line,
                        "the analysis could not read "
                        f"this record ({type(exc).__name__}: {str(exc)[:200]}); skipped",
                    ),
                ),
            )
            self._sessions_after(conn, had, line, key)
            return
        if a.__class__ is Analysed:  # a message record: its analysis itself
            if self.digests:
                from tracer.baseline import message_digest

                out.add(key, ("m", (rec.source, rec.seq), message_digest(rec.raw)))
            self.messages += 1
            era = a.era  # (named at the end: Enum.value is a slow descriptor)
            seen = self.eras.get(era)
            if seen is None:
                self.eras[era] = [1, key]
            else:
                seen[0] += 1
            for f in a.findings:
                out.add(key, ("f", f))
            for member in a.members or ():
                for f in member.findings:
                    out.add(key, ("f", f))
        else:  # an HTTP record's findings, a closed session's end findings
            for ev in a:
                for f in ev.findings:
                    out.add(key, ("f", f))
        self._sessions_after(conn, had, line, key)

    def _sessions_after(self, conn: str, had: bool, line: int, key: tuple) -> None:
        a_ = self.analyser
        if conn in a_.sessions:
            if not had:
                self.born[conn] = line
        elif had:
            self.born.pop(conn, None)
        self._cells(key)

    def _cells(self, key: tuple) -> None:
        cells = self.analyser.session_cells
        if cells:  # emptied each time, so each is named by its conn; the parent names repeats
            for conn, cell in cells.items():
                self.out.add(key, ("c", conn, cell))
            cells.clear()

    def close_all(self, line: int) -> None:
        """Every open session ends (a new recording's header, the end of the file), in the order the
        sessions began, as Analyser.finish closes them."""
        a_ = self.analyser
        for conn in list(a_.sessions):
            key = (line, 2, self.born.pop(conn, 0))
            closed = a_.close(conn, a_.last_t_ns)
            for f in closed.findings if closed is not None else ():
                self.out.add(key, ("f", f))
            self._cells(key)

    def end(self, records: int) -> None:
        self.close_all(END)
        eras = {era.value: (n, key) for era, (n, key) in self.eras.items()}
        self.out.add((END, 9, 0), ("end", records, self.messages, eras))


# What sessions share in a worker's analyser (tracer.state.shared), kept right by the routing
# above: the sibling probe anywhere (every worker follows it); the HTTP endpoints' facts only in
# worker 0, which owns every HTTP connection.


_MESSAGE = RecordType.MESSAGE


def _first_stdio_request(rec, opened: set[str]) -> bool | None:
    """Whether this record is the first client request of its stdio session (the framing observer's
    `first_client_request`), and then whether it is server/discover; None when it is not one."""
    if (
        rec.type is not RecordType.MESSAGE
        or rec.transport != "stdio"
        or rec.dir is not Direction.C2S
        or rec.conn in opened
    ):
        return None
    common = classify_common(rec.raw)
    if common is not None:
        kind, method = common[0], common[2]
    else:
        c = classify_raw(rec.raw)
        kind, method = c.kind, c.method
    if kind is not Kind.REQUEST:
        return None
    opened.add(rec.conn)
    return method == "server/discover"


def _shard(task: Task, k: int, n: int, rules: RuleSet, digests: bool, out: _Out) -> None:
    work = _FileWork(task, rules, digests, out)
    a_ = work.analyser
    owner: dict[str, int] = {}
    load = [0] * n
    # The stdio sibling probe (tracer.state.shared): a session whose first client request is
    # no server/discover may count the newest connection that opened with one as its probe, so it
    # goes to the worker of that connection (`probe`); every worker follows which sessions have had
    # their first request (`opened`) from the records themselves.
    probe: str | None = None
    opened: set[str] = set()
    records = 0
    line = 0
    next_mark = WATERMARK_LINES
    for item in _capture_items(task.path, task.size):
        line = item.line
        if line >= next_mark:
            next_mark = line + WATERMARK_LINES
            out.add((line, 0, 0), ("w",))
        if type(item) is ReadProblem:
            if k == 0:
                out.add((line, 0, 0), ("p", item))
            continue
        records += 1
        if item.type is RecordType.HEADER:  # every worker: it ends every session
            if a_.header is not None:
                if item.t_ns > a_.last_t_ns:
                    a_.last_t_ns = item.t_ns
                work.close_all(line)
                opened.clear()
            a_.feed(item)
            continue
        conn = item.conn
        w = owner.get(conn)
        if w is not None and conn in opened and item.type is _MESSAGE:  # (most records: nothing to decide)
            if w != k:
                if item.t_ns > a_.last_t_ns:
                    a_.last_t_ns = item.t_ns
                load[w] += 1
                continue
            if item.transport not in HTTP_TRANSPORTS or w == 0:
                load[w] += 1
                work.record(item, line)
                if k != 0 and a_.shared.has_endpoint_facts():
                    # (this line is analysed and reported already: the re-lint starts after it)
                    out.add((line + 1, -1, 0), ("redo", line + 1))
                    return
                continue
        http = item.transport in HTTP_TRANSPORTS
        first = _first_stdio_request(item, opened)  # None, or whether it is a server/discover probe
        follows = owner[probe] if probe is not None and first is not True and probe != conn else None
        if w is None:
            w = owner[conn] = (
                0 if http else follows if follows is not None else min(range(n), key=load.__getitem__)
            )
        elif (http and w != 0) or (first is False and follows is not None and follows != w):
            # its session would miss the HTTP endpoint facts worker 0 holds, or the sibling probe
            # another worker holds
            out.add((line, -1, 0), ("redo", line))
            return
        if first is True:
            probe = conn
        elif item.type is RecordType.EVENT and item.data and item.data.get("event") in CLOSE_EVENTS:
            opened.discard(conn)  # its next session has a first request of its own
        load[w] += 1
        if w == k:
            work.record(item, line)
            if k != 0 and a_.shared.has_endpoint_facts():
                # HTTP endpoint facts outside worker 0 would be seen by only this worker's sessions; this line
                # is analysed and reported already: the re-lint starts after it
                out.add((line + 1, -1, 0), ("redo", line + 1))
                return
        elif item.t_ns > a_.last_t_ns:  # (what Analyser.feed does first: the end time of open sessions)
            a_.last_t_ns = item.t_ns
    work.end(records)


def _whole(task: Task, rules: RuleSet, digests: bool, out: _Out) -> None:
    work = _FileWork(task, rules, digests, out)
    inp = open_input(task.path, fmt=task.fmt)
    records = 0
    for i, item in enumerate(inp.records):
        if type(item) is ReadProblem:
            out.add((i, 0, 0), ("p", item))
            continue
        records += 1
        work.record(item, i)
    # (the stream position is the key here: settled formats may reorder lines)
    for ev in work.analyser.finish():
        for f in ev.findings:
            out.add((END, 2, 0), ("f", f))
    work._cells((END, 2, 0))
    out.add((END, 9, 0), ("end", records, work.messages, {e.value: v for e, v in work.eras.items()}))


def _worker(conn, tasks: list[Task], k: int, n: int, rule_ids: list[str], digests: bool) -> None:
    try:
        from tracer.rules import all_rules

        table = all_rules()
        rules = RuleSet([table[i] for i in rule_ids])
        for task in tasks:
            if not task.shard and task.owner != k:
                continue
            out = _Out(conn, task.index)
            try:
                (_shard(task, k, n, rules, digests, out) if task.shard else _whole(task, rules, digests, out))
            except InputError as exc:
                out.add((END, 10, 0), ("error", str(exc)))
                out.flush()
                return
            out.flush()
    except (BrokenPipeError, KeyboardInterrupt):
        return
    except BaseException:
        try:
            conn.send((-1, [((0, 0, 0), ("crash", traceback.format_exc()))]))
        except OSError:
            pass
    finally:
        conn.close()


__all__ = ["POOL_MIN_BYTES", "SHARD_MIN_BYTES", "FileResult", "Task", "default_jobs", "plan"]
