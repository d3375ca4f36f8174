"""The viewer's rows of an input converted in the background (HAR, .mitm): see `SpoolIndex`."""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import tempfile
import threading
from array import array
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import orjson

from tracer import temps
from tracer.index import CHUNK, IndexReset, LineIndex
from tracer.inputs.lazy import InputBroken

if TYPE_CHECKING:
    from tracer.inputs import OpenInput

PROBLEMS_KEPT = 20  # read problems kept to show (the converter says at most these, then a count)
SCREEN_ROWS = 64  # rows the first update waits for: a screenful (the converter's first batch)
JOIN_BOUND_S = 60.0  # how long closing waits for the watcher (it ends with the process's pipes)
RESTART = 3  # the converter's exit code for "convert again with --whole" (tracer.cli.spool)


class InputRestart(IndexReset):
    """The rows written so far are not the input's (a HAR whose entries are out of time order...):
    open it again with `whole=True`, which converts the whole document before its first row."""


def new_capture() -> tuple[str, Callable[[], None]]:
    """A temporary capture for a conversion (mode 0600) and the call that removes it (also called
    at a signal that ends the viewer: tracer.temps)."""
    fd, tmp = tempfile.mkstemp(prefix="mcptrace-view-", suffix=".jsonl")
    os.close(fd)

    def cleanup() -> None:
        for path in (tmp, tmp + TAIL_SUFFIX, tmp + TAIL_SUFFIX + ".part"):
            try:
                os.unlink(path)
            except OSError:
                pass

    return tmp, temps.keep(cleanup)


# A flow file's last rows, read ahead by the converter (which has mitmproxy imported already) once its
# first batch is written: `G` reads them from CAPTURE + TAIL_SUFFIX instead of importing mitmproxy
# into the viewer (1-3 s on a busy machine). Lines of tracer.inputs.tail's kind; empty: none.
TAIL_SUFFIX = ".tail"


def prepared_tail(capture: str) -> list[bytes] | None:
    """The last rows the converter read ahead for CAPTURE ([] when there are none), or None when it
    has not (yet)."""
    try:
        with open(capture + TAIL_SUFFIX, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return data.split(b"\n") if data else []


def write_tail(capture: str, lines: list[bytes] | None) -> None:
    """Write LINES as CAPTURE's prepared tail, whole or not at all (mode 0600: they are traffic)."""
    part = capture + TAIL_SUFFIX + ".part"
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(b"\n".join(lines or []))
    os.replace(part, capture + TAIL_SUFFIX)


def start_converter(
    source: str, capture: str, fmt_name: str, *, whole: bool = False, follow: bool = False
) -> subprocess.Popen:
    """The process converting SOURCE (read as FMT_NAME) to CAPTURE (tracer.cli.spool); killed before
    CAPTURE is removed at a signal that ends the viewer (tracer.temps)."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracer.cli.spool",
            source,
            capture,
            "--input-format",
            fmt_name,
            *(["--whole"] if whole else []),
            *(["--follow"] if follow else []),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        close_fds=True,
    )
    return temps.writer(proc)


# -- a conversion started before the viewer's own imports (`mcptrace view`) -----------------------

_early: dict[tuple[str, str], tuple[str, Callable[[], None], subprocess.Popen]] = {}


def _key(source: str, fmt_name: str) -> tuple[str, str]:
    return os.path.realpath(source), fmt_name


def start_early(source: str, fmt_name: str) -> None:
    """Start converting SOURCE now, for a SpoolIndex to take over later (`take_early`): `mcptrace
    view` calls it before importing Textual, so the converter's own start-up (mitmproxy's import for
    a flow file, 0.3-1 s) runs on the other core while the viewer's imports run on this one, instead
    of after them. Never taken (the viewer did not open it): stopped and removed at exit."""
    key = _key(source, fmt_name)
    if key in _early:
        return
    capture, cleanup = new_capture()
    try:
        proc = start_converter(source, capture, fmt_name)
    except BaseException:
        cleanup()
        raise
    if not _early:
        atexit.register(_discard_early)
    _early[key] = (capture, cleanup, proc)


def take_early(source: str, fmt_name: str) -> tuple[str, Callable[[], None], subprocess.Popen] | None:
    """(capture, cleanup, process) of the conversion `start_early` started for SOURCE, once."""
    return _early.pop(_key(source, fmt_name), None)


def _discard_early() -> None:
    for _capture, cleanup, proc in list(_early.values()):
        _discard(proc)
        cleanup()
    _early.clear()


def _discard(proc: subprocess.Popen) -> None:
    """Stop a conversion nobody watches, and close its pipes."""
    stop_process(proc)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def stop_process(proc: subprocess.Popen) -> None:
    """A helper process stopped: SIGTERM, a bounded wait, then SIGKILL (the converter here, the
    viewer's analysis process in tracer.view.annotations)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class SpoolIndex:
    """Rows of an input whose records need more than their own line (a HAR's entries are replayed
    in time order across the whole document; .mitm flows likewise): converted to a temporary
    capture by a process of its own (tracer.cli.spool, on the other core) while the viewer
    shows the rows written so far, so the first screen waits for the reader's first records, not
    for the whole conversion.

    With FOLLOW (a host log, NDJSON or flow file still being written, `view --follow`) the
    conversion reads on as the input grows (tracer.inputs.follow, addons.mitm_follow): the index
    is complete whenever it has every row the converter wrote before it said it waits at the
    input's end, and a truncated or rotated input ends it (InputBroken, saying which).

    Duck-types tracer.index.LineIndex (it is one over the growing capture, final once written)."""

    FIRST_STEP = CHUNK
    STEP = CHUNK

    def __init__(
        self,
        inp: OpenInput,
        capture: str,
        *,
        whole: bool = False,
        proc: subprocess.Popen | None = None,
        follow: bool = False,
    ):
        self.path = capture
        self.source = inp.path
        self.fmt = inp.format
        self.size = inp.size or 0
        self.error: str | None = None
        self.restart = False  # the converter asked to convert again with --whole
        self.pos = 0  # input bytes the conversion has read
        self.follow = follow
        self.problems: list[tuple[int, str]] = []  # the reader's read problems: (line, why), the first 20
        self.problem_count = 0  # how many there were
        self.idle = False  # (follow) the converter waits at the input's end, all it read written
        # (follow, a flow file) (its number, bytes of it written, where it starts) of a last flow
        # not whole yet when the converter last waited at the file's end; flow 0: none
        self.torn: tuple[int, int, int] = (0, 0, 0)
        inp.fh.close()  # (the converting process opens it again: it was checked, detected, proven)
        try:
            self.index = LineIndex(capture, final=False)
        except BaseException:
            if proc is not None:  # (taken over: nobody else stops it)
                _discard(proc)
            raise
        self._done = False
        self._first = True
        self._when_written: list[Callable[[], None]] = []
        self._cond = threading.Condition()
        # (PROC: the conversion already started for CAPTURE, see start_early)
        self.proc = (
            proc
            if proc is not None
            else start_converter(inp.path, capture, inp.format.name, whole=whole, follow=follow)
        )
        self._thread = threading.Thread(target=self._watch, name="mcptrace-convert", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        proc = self.proc
        assert proc.stdout is not None and proc.stderr is not None
        # This thread owns the pipes and closes them itself: `close` waits for it instead of
        # closing them under it (a watcher descheduled on a busy machine then read a closed file,
        # an unhandled error in a thread).
        try:
            for line in proc.stdout:
                if line.startswith(b"pos "):
                    self.idle = False
                    try:
                        self.pos = int(line[4:])
                    except ValueError:
                        pass
                elif line == b"idle\n":
                    self.idle = True
                elif line.startswith(b"torn "):
                    self._torn(line)
                elif line.startswith(b"problem"):
                    self._problem(line)
                with self._cond:
                    self._cond.notify_all()
            err = proc.stderr.read().decode("utf-8", "replace").strip()
        finally:
            proc.stdout.close()
            proc.stderr.close()
        code = proc.wait()
        with self._cond:
            if code == RESTART:
                self.restart = True
                self.error = err.splitlines()[-1] if err else "converting again"
            elif code != 0:
                last = err.splitlines()[-1] if err else ""
                self.error = last or f"the conversion stopped (exit code {code})"
            self._done = True
            self._cond.notify_all()
            waiting, self._when_written = self._when_written, []
        if not self.restart:  # (nothing is analysed of rows that are not the input's)
            for call in waiting:
                call()

    def _torn(self, line: bytes) -> None:
        """`torn N BYTES` (after the `pos` of the whole flows read: tracer.cli.spool)."""
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            self.torn = (int(parts[1]), int(parts[2]), self.pos)

    def torn_flow(self) -> tuple[int, int] | None:
        """(its number, bytes of it written) of the flow the followed flow file ends inside, not
        shown yet: the converter waits for its end and the file has not changed since it said so
        (None: the file ends at a flow's end, or the converter has more to read)."""
        flow, written, start = self.torn
        if not (self.follow and flow) or self._done:
            return None
        try:
            size = os.path.getsize(self.source)
        except OSError:
            return None
        return (flow, written) if size == start + written else None

    def torn_at_end(self) -> str | None:
        """The line said when the viewer quits on a followed flow file ending inside a flow."""
        torn = self.torn_flow()
        if torn is None:
            return None
        name = os.path.basename(self.source)
        return (
            f"{name} ends inside flow {torn[0]:,} ({torn[1]:,} bytes of it written), never shown: if "
            f"its writer has stopped, `mcptrace lint {name}` names it as a flow that cannot be read"
        )

    def _problem(self, line: bytes) -> None:
        """A `problem {...}` or `problems N` line of the converter (tracer.cli.spool.say_problems)."""
        try:
            if line.startswith(b"problems "):
                self.problem_count = max(self.problem_count, int(line[9:]))
                return
            obj = orjson.loads(line[8:])
        except ValueError:
            return
        if type(obj) is not dict:
            return
        n, why = obj.get("line"), obj.get("why")
        if type(n) is int and type(why) is str and len(self.problems) < PROBLEMS_KEPT:
            self.problems.append((n, why))
            self.problem_count = max(self.problem_count, len(self.problems))

    def when_written(self, call: Callable[[], None]) -> bool:
        """Call CALL (from the watching thread) once the conversion has ended; False, and no call,
        when it has already."""
        with self._cond:
            if self._done:
                return False
            self._when_written.append(call)
            return True

    def update(self, max_bytes: int | None = None, *, wait: bool = True) -> int:
        """Index what the conversion has written (waiting a moment for more unless not WAIT, and
        for a first screenful). Raises InputBroken once when the reader stopped on the input,
        InputRestart when the rows must be converted again."""
        added = 0
        while True:
            with self._cond:
                if wait and not self._done and self.index.complete:
                    self._cond.wait(0.05)
                done = self._done
                idle = self.idle
            if done and self.restart:
                raise InputRestart(self.error or "converting again")
            if done:
                self.index.final = True
            added += self.index.update(max_bytes)
            # the first update waits for a screenful of rows (or the end), as the viewer's first
            # screen waited for the whole conversion before
            if done or not self._first or len(self.index) >= SCREEN_ROWS or (idle and self.index.complete):
                break
        self._first = False
        if done and self.error is not None and self.index.complete:
            why, self.error = self.error, None
            raise InputBroken(why)
        return added

    def build(self) -> int:
        added = 0
        while not self.complete:
            added += self.update()
        return added

    @property
    def complete(self) -> bool:
        if self.follow and self.idle and not self._done:  # (caught up with a file still growing)
            return self.index.complete
        return self._done and self.index.final and self.index.complete

    @property
    def progress(self) -> float:
        if self._done or not self.size:
            return 1.0 if self._done else 0.0
        return min(0.99, self.pos / self.size)

    @property
    def ends(self) -> array:
        return self.index.ends

    @property
    def fd(self) -> int:
        return self.index.fd

    def __len__(self) -> int:
        return len(self.index)

    def span(self, row: int) -> tuple[int, int]:
        return self.index.span(row)

    def length(self, row: int) -> int:
        return self.index.length(row)

    def line(self, row: int, limit: int | None = None) -> bytes:
        return self.index.line(row, limit)

    def read_part(self, row: int, offset: int, n: int) -> bytes:
        return self.index.read_part(row, offset, n)

    def lines(self, first: int, last: int) -> Iterator[tuple[int, bytes]]:
        return self.index.lines(first, last)

    def close(self) -> None:
        stop_process(self.proc)
        # the process is gone, so its pipes end: the watcher reads to their end, closes them, ends
        if self._thread is not threading.current_thread():
            self._thread.join(JOIN_BOUND_S)
        self.index.close()
