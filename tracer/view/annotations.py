"""The viewer's side of tracer.view.annotate: start the analysis process, follow its progress, read
its per-row summaries and details on demand.

Nothing here holds per-message objects: the summaries stay in the work directory's files and
are read (32 bytes a row) for the rows on screen or in one sequential pass for a filter. What
stays in memory grows only with the rows that have findings (4 bytes each) and the method table.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
from array import array
from bisect import bisect_left, insort
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from tracer import temps
from tracer.capture import record_from_dict
from tracer.inputs.spooled import stop_process
from tracer.model import Record
from tracer.view.details import derive, expand, finding_ids
from tracer.view.details import load as load_details
from tracer.view.rowformat import (
    DIRS,
    ERAS,
    F_SEQ,
    KINDS,
    PAIR_STATUSES,
    ROW,
    ROW_SIZE,
    RTYPES,
    read_line_at,
)


@dataclass(slots=True)
class RowSummary:
    """One row's analysed summary (see tracer.view.annotate.ROW)."""

    rtype: str
    kind: str | None
    dir: str | None
    era: str | None
    worst: int
    pair_status: str | None
    dir_inferred: bool
    nfind: int
    method: str | None
    partner: int | None
    latency_ns: int | None
    op_row: int | None
    det_off: int
    fields: tuple  # the row as stored (what a derived detail reads, see tracer.view.details.derive)
    row: int = -1
    note_known: bool = True  # its note has come (a patched row's may be read before the report)

    @property
    def detail_key(self) -> tuple:
        """Changes when the row's details do (a request answered, an end-of-session finding)."""
        f = self.fields
        return (f[8], f[10], f[11], f[12], f[14], self.note_known)


def unpack_row(
    data: bytes | memoryview, at: int, methods: list[str], row: int = -1, notes: int = 0
) -> RowSummary:
    fields = ROW.unpack_from(data, at)
    (rtype, kind, d, era, worst, flags, nfind, midx, partner, lat_us, op_row, _note, det, _seq, _ns) = fields
    return RowSummary(
        RTYPES[rtype],
        KINDS[kind] or None,
        DIRS[d] or None,
        ERAS[era] or None,
        worst,
        PAIR_STATUSES[flags & 0x0F] or None if (flags & 0x0F) < len(PAIR_STATUSES) else None,
        bool(flags & 0x10),
        nfind,
        methods[midx] if 0 <= midx < len(methods) else None,
        partner if partner >= 0 else None,
        lat_us * 1000 if lat_us >= 0 else None,
        op_row if op_row >= 0 else None,
        det,
        fields,
        row,
        _note < notes,
    )


class Annotations:
    """Runs `python -m tracer.view.annotate` on a capture and mirrors what it reports."""

    STOP_BOUND_S = 60.0  # how long stopping waits for the reader thread (it ends with the process)

    def __init__(
        self,
        capture: str,
        *,
        follow: bool = False,
        on_progress: Callable[[Annotations], None] | None = None,
        workdir: str | None = None,
    ):
        self.capture = capture
        self.follow = follow
        self.on_progress = on_progress
        self._own_dir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="mcptrace-view-")
        os.chmod(self.workdir, 0o700)
        # (its own folder goes at a signal that ends the viewer too, its writer killed first: tracer.temps)
        self._remove_dir = (
            temps.keep(lambda: shutil.rmtree(self.workdir, ignore_errors=True)) if self._own_dir else None
        )
        self.rows_done = 0
        self.eof = False
        self.done = False
        self.error: str | None = None
        self.methods: list[str] = []
        self.notes: list[Any] = []  # era reasons and versions of rows whose details are derived
        self._own_rows: Any = None  # the capture's rows, read here only when a caller gave no record
        self.finding_rows = array("i")  # sorted rows that have findings
        self.summary: dict[str, Any] | None = None
        self.version = 0  # bumps with every progress report (caches compare it)
        self.cond = threading.Condition()
        self.proc: subprocess.Popen | None = None
        self._rows_fd = -1
        self._det_fd = -1
        self._thread: threading.Thread | None = None

    # -- process -----------------------------------------------------------------------------

    def start(self) -> None:
        cmd = [sys.executable, "-m", "tracer.view.annotate", self.capture, self.workdir]
        if self.follow:
            cmd.append("--follow")
        # its stderr goes to a file in the work directory, so that a process that dies can say why
        err_fd = os.open(
            os.path.join(self.workdir, "stderr.txt"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600
        )
        try:
            self.proc = temps.writer(
                subprocess.Popen(
                    cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err_fd, close_fds=True
                )
            )
        finally:
            os.close(err_fd)
        self._thread = threading.Thread(target=self._read, name="mcptrace-annotations", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        # this thread owns the pipe and closes it at its end: `stop` waits for it rather than
        # closing it under it (a reader between two reports then read a closed file)
        with self.proc.stdout as out:
            for line in out:
                try:
                    msg = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                self._apply(msg)
        with self.cond:
            if not self.done and self.error is None and self._exit_code() not in (None, 0):
                why = self._last_stderr_line()
                self.error = f"analysis stopped (exit code {self.proc.returncode})" + (
                    f": {why}" if why else ""
                )
            self.eof = True
            self.cond.notify_all()
        if self.on_progress:
            self.on_progress(self)

    def _exit_code(self) -> int | None:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=5)  # (its stdout just closed: it is exiting)
        except subprocess.TimeoutExpired:
            return None

    def _last_stderr_line(self) -> str:
        """The last line the analysis process wrote on stderr (its last 4 KB), or ""."""
        try:
            with open(os.path.join(self.workdir, "stderr.txt"), "rb") as fh:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - 4096))
                lines = [x for x in fh.read().decode("utf-8", "replace").splitlines() if x.strip()]
        except OSError:
            return ""
        # a fatal signal's report (faulthandler) says what happened on its first line, before the frames
        fatal = [x for x in lines if x.startswith("Fatal Python error")]
        top = [x for x in lines if not x.startswith((" ", "Traceback", "Current thread", "Thread 0x"))]
        pick = fatal[-1] if fatal else top[-1] if top else ""
        return pick.strip()[:300]

    @property
    def unreadable_rows(self) -> int:
        """Rows whose analysis raised (they show as broken, with the reason in their detail)."""
        n = (self.summary or {}).get("unreadable_rows")
        return n if type(n) is int else 0

    def _apply(self, msg: dict[str, Any]) -> None:
        with self.cond:
            for name, idx in (msg.get("m") or {}).items():
                while len(self.methods) <= idx:
                    self.methods.append("")
                self.methods[idx] = name
            notes = msg.get("w")
            if type(notes) is list and len(notes) == 2 and type(notes[0]) is int:
                del self.notes[notes[0] :]
                while len(self.notes) < notes[0]:
                    self.notes.append(None)
                self.notes.extend(notes[1])
            fr = self.finding_rows
            for row in msg.get("fr") or ():
                if not fr or row > fr[-1]:
                    fr.append(row)
                else:
                    i = bisect_left(fr, row)
                    if i >= len(fr) or fr[i] != row:
                        insort(fr, row)
            if "summary" in msg:
                self.summary = msg["summary"]
            if "error" in msg:
                self.error = msg["error"]
            self.rows_done = max(self.rows_done, msg.get("rows", 0))
            self.eof = bool(msg.get("eof"))
            self.done = bool(msg.get("done"))
            self.version += 1
            self.cond.notify_all()
        if self.on_progress:
            self.on_progress(self)

    def wait(self, predicate: Callable[[], bool], timeout: float | None = None) -> bool:
        """Block until predicate() (checked under the lock) or the analysis ended."""
        with self.cond:
            return self.cond.wait_for(lambda: predicate() or self.finished, timeout)

    @property
    def finished(self) -> bool:
        return (
            self.done
            or self.error is not None
            or (self.proc is not None and self.proc.poll() is not None and self.eof)
        )

    def stop(self) -> None:
        proc = self.proc
        if proc is not None:
            try:
                if proc.stdin:
                    proc.stdin.close()
            except OSError:
                pass
            stop_process(proc)
            # the process is gone, so its stdout ends: the reader reads to its end, closes it, ends
            reader = self._thread
            if reader is None:
                if proc.stdout:
                    proc.stdout.close()
            elif reader is not threading.current_thread():
                reader.join(self.STOP_BOUND_S)
        for fd in (self._rows_fd, self._det_fd):
            if fd >= 0:
                os.close(fd)
        self._rows_fd = self._det_fd = -1
        if self._own_rows is not None:
            self._own_rows.close()
            self._own_rows = None
        if self._remove_dir is not None:
            self._remove_dir()

    # -- reading -----------------------------------------------------------------------------

    def _fd(self, name: str) -> int:
        attr = "_rows_fd" if name == "rows.bin" else "_det_fd"
        fd = getattr(self, attr)
        if fd < 0:
            fd = os.open(os.path.join(self.workdir, name), os.O_RDONLY)
            setattr(self, attr, fd)
        return fd

    def row(self, row: int) -> RowSummary | None:
        if row >= self.rows_done:
            return None
        data = os.pread(self._fd("rows.bin"), ROW_SIZE, row * ROW_SIZE)
        if len(data) < ROW_SIZE:
            return None
        return unpack_row(data, 0, self.methods, row, len(self.notes))

    def rows(self, first: int, last: int, block: int = 32768) -> Iterator[tuple[int, RowSummary]]:
        """Summaries of rows first..last-1 (only analysed ones), read in blocks."""
        last = min(last, self.rows_done)
        if first >= last:
            return
        fd = self._fd("rows.bin")
        methods = self.methods
        row = first
        while row < last:
            n = min(block, last - row)
            data = os.pread(fd, n * ROW_SIZE, row * ROW_SIZE)
            got = len(data) // ROW_SIZE
            for i in range(got):
                yield row + i, unpack_row(data, i * ROW_SIZE, methods, row + i, len(self.notes))
            if got < n:
                return
            row += n

    def details(self, summary: RowSummary | None, rec: Record | None = None) -> dict[str, Any] | None:
        """A row's analysis details: stored, or derived from its note and REC (the row's record,
        read here when not given)."""
        if summary is None:
            return None
        if summary.det_off < 0:
            note = summary.fields[11]
            return self._derived(summary, rec) if 0 <= note < len(self.notes) else None
        buf = read_line_at(self._fd("details.jsonl"), summary.det_off)
        try:
            # (integers beyond 64 bits: see safejson; a compact record is expanded: tracer.view.details)
            return expand(load_details(buf)) if buf else None
        except (ValueError, RecursionError, IndexError, KeyError, TypeError):
            return None

    def _derived(self, summary: RowSummary, rec: Record | None) -> dict[str, Any] | None:
        try:
            if rec is None:
                rec = self._record(summary.row)
            return derive(
                summary.fields, rec.raw, rec.conn, self.notes[summary.fields[11]], self.methods, self._seq
            )
        except (ValueError, RecursionError, IndexError, KeyError, TypeError, OSError):
            return None

    def _seq(self, row: int) -> int | None:
        # (read whatever rows_done says: a row another one points at is written before it)
        data = os.pread(self._fd("rows.bin"), ROW_SIZE, row * ROW_SIZE)
        return ROW.unpack(data)[F_SEQ] if len(data) == ROW_SIZE else None

    def _record(self, row: int) -> Record:
        """Row ROW's record, from an index of the capture's rows opened here (the viewer passes
        the record it has read instead)."""
        from tracer.inputs.lazy import open_rows

        if self._own_rows is None:
            self._own_rows = open_rows(self.capture, final=not self.follow)
        rows = self._own_rows
        if row >= len(rows):
            rows.update()
        return record_from_dict(orjson.loads(rows.line(row)), line=row + 1, source=self.capture)

    def finding_rules(self, summary: RowSummary | None) -> list[str]:
        """The rule ids of a row's findings (a batch: its own, then its members'), for the filter's
        `rule:` term, without building the rest of its details."""
        if summary is None or summary.det_off < 0:
            return []
        buf = read_line_at(self._fd("details.jsonl"), summary.det_off)
        try:
            return finding_ids(load_details(buf)) if buf else []
        except (ValueError, RecursionError, IndexError, KeyError, TypeError):
            return []

    def next_finding(self, row: int, step: int = 1) -> int | None:
        """The next (step 1) or previous (step -1) row with findings."""
        fr = self.finding_rows
        with self.cond:
            if step > 0:
                i = bisect_left(fr, row + 1)
                return fr[i] if i < len(fr) else None
            i = bisect_left(fr, row) - 1
            return fr[i] if i >= 0 else None
