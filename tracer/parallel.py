"""`mcptrace lint --jobs N`: the work of a lint run shared by N worker processes, merged back in input
order, so every report is byte for byte the one a single process writes.

- A big mcptrace capture is sharded by connection: the parent reads it once (tracer.parallel_route,
  a thread beside the merge) and sends each worker only its own connections' lines, and what every
  analyser needs (headers, the time open sessions end at); each worker analyses them
  (tracer.parallel_worker). Ownership is decided on a connection's first record (the least-loaded
  worker so far), so a connection's records (its session, and the later sessions of appended
  recordings) stay in one analyser. HTTP connections all go to worker 0: stateless HTTP sessions
  share their endpoint's facts (tracer.http.state), which a single analyser must hold. A file where
  that cannot hold (an HTTP record on a connection that began as another transport, or sessions
  sharing other facts through `Analyser.shared`), or where a line routed on a guess of its
  connection is not what the guess said, is re-linted in this process from there, with what was
  already reported held back: slower, never different.
- Other files (HAR, host logs, NDJSON, small captures) go whole to one worker each, which reads them.
- Each item a worker reports carries a key: (line, phase, line the session began), so the parent
  merges the workers' streams in the order one analyser meets them (a recording's header and the end
  of the file close every open session in the order the sessions began). Workers send batches and a
  watermark for each batch the router sends them; the parent reads a worker only when the merge
  needs it, so the pipes hold back a worker that runs ahead (and the router, behind it): memory
  stays bounded.
Inputs below POOL_MIN_BYTES, standard input and formats registered by the CLI stay in this process.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
from dataclasses import dataclass, field

import orjson

from tracer.analyser import Analyser, RuleSet
from tracer.capture import ReadProblem
from tracer.gaps import gap_problem
from tracer.inputs import HEAD_BYTES, OpenInput, open_input
from tracer.model import Analysed, Finding, Severity

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


_SEVERITIES = (None, Severity.INFO, Severity.WARNING, Severity.ERROR)


def finding_from(t: tuple) -> Finding:
    """A finding as a worker sent it (`_Out.finding`)."""
    return Finding(t[0], _SEVERITIES[t[1]], t[2], t[3], t[4], t[5], t[6], t[7], t[8])


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


class Channel:
    """One way of a pipe between the parent and a worker: pickled objects, each behind its length
    (the parent reads only its own workers, started by tracer.parallel_pool)."""

    _LEN = struct.Struct("!Q")

    def __init__(self, fh):
        self.fh = fh

    def send(self, obj) -> None:
        data = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
        self.fh.write(self._LEN.pack(len(data)))
        self.fh.write(data)
        self.fh.flush()

    def recv(self):
        head = self.fh.read(self._LEN.size)
        if len(head) < self._LEN.size:
            raise EOFError
        (n,) = self._LEN.unpack(head)
        data = self.fh.read(n)
        if len(data) < n:
            raise EOFError
        return pickle.loads(data)

    def close(self) -> None:
        try:
            self.fh.close()
        except OSError:  # (a flush to a parent that has gone)
            pass


# -- the worker side -----------------------------------------------------------------------------


class _Out:
    """A worker's outgoing stream for one file: keyed items in batches."""

    def __init__(self, conn, index: int):
        self.conn = conn
        self.index = index
        self.items: list = []

    def finding(self, key: tuple, f: Finding) -> None:
        # as a tuple of plain values: a pickled dataclass and its Severity cost several times more
        # to send and to receive (the parent reads every finding of every worker)
        t = (f.rule, int(f.severity), f.message, f.seq, f.line, f.source, f.path, f.related_seq, f.offset)
        self.add(key, ("f", t))

    def add(self, key: tuple, item: tuple) -> None:
        self.items.append((key, item))
        if len(self.items) >= BATCH_ITEMS:
            self.flush()

    def flush(self) -> None:
        if self.items:
            self.conn.send((self.index, self.items))
            self.items = []


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
            if a.findings:
                for f in a.findings:
                    out.finding(key, f)
            if a.members:
                for member in a.members:
                    for f in member.findings:
                        out.finding(key, f)
            # (the hot path: a message never ends its session, but may begin it)
            if not had:
                self.born[conn] = line
            if a_.session_cells:
                self._cells(key)
            return
        for ev in a:  # an HTTP record's findings, a closed session's end findings
            for f in ev.findings:
                out.finding(key, f)
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

    def close_all(self, line: int, *, header: bool = False) -> None:
        """Every open session ends (the end of the file; a new recording's header: all but a tee's
        own, as Analyser.end_recording), in the order the sessions began, as Analyser.finish closes
        them."""
        a_ = self.analyser
        for conn in list(a_.sessions):
            if header and a_.keeps_at_header(conn):
                continue
            key = (line, 2, self.born.pop(conn, 0))
            closed = a_.close(conn, a_.last_t_ns)
            for f in closed.findings if closed is not None else ():
                self.out.finding(key, f)
            self._cells(key)

    def end(self, records: int, broken: int = 0) -> None:
        """The file's end: `records` as this worker counted them, `broken` of them its own lines
        found broken after all (tracer.parallel_worker)."""
        self.close_all(END)
        eras = {era.value: (n, key) for era, (n, key) in self.eras.items()}
        self.out.add((END, 9, 0), ("end", records, self.messages, eras, broken))


def _whole(task: Task, rules: RuleSet, digests: bool, out: _Out) -> None:
    work = _FileWork(task, rules, digests, out)
    inp = open_input(task.path, fmt=task.fmt)
    records = 0
    for i, item in enumerate(inp.records):
        if type(item) is ReadProblem:
            out.add((i, 0, 0), ("p", item))
            continue
        records += 1
        gap = gap_problem(item, task.path)
        if gap is not None:
            out.add((i, 0, 0), ("p", gap))
        work.record(item, i)
    # (the stream position is the key here: settled formats may reorder lines)
    for ev in work.analyser.finish():
        for f in ev.findings:
            out.finding((END, 2, 0), f)
    work._cells((END, 2, 0))
    out.add((END, 9, 0), ("end", records, work.messages, {e.value: v for e, v in work.eras.items()}, 0))


__all__ = ["POOL_MIN_BYTES", "SHARD_MIN_BYTES", "FileResult", "Task", "default_jobs", "plan"]
