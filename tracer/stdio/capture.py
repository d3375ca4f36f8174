"""The capture side of the stdio tee: copies of relayed chunks -> framed records -> capture file.

The relay threads hand every chunk here *before* they forward it (so a request is queued before
the server can answer it, and the capture keeps causal order), through `offer`, which never
blocks: a byte budget bounds what may wait in the queue, and a chunk over budget is dropped from
the capture only, counted, and recorded as a `dropped` event with its stream offset, never silently.
One writer thread frames the chunks into lines (a pure `LineFramer` per stream), writes the records
with one flush per batch (so `tail -f` sees each message as soon as its chunk is processed), and
can run the stdio rules live so framing problems are reported while the session runs.
"""

from __future__ import annotations

import fcntl
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable

from tracer.capture import CaptureWriter
from tracer.framing import Frame, LineFramer
from tracer.model import Direction, Finding, Record, RecordType
from tracer.redact_echo import hide_kept, secret_forms
from tracer.stdio.encode import encode_line, is_utf8, looks_suspicious
from tracer.stdio.runs import RUN_MIN, StreamFramer, make_run
from tracer.stdio.splice import read_exactly

STDIN, STDOUT, STDERR = 0, 1, 2
STREAMS = ("stdin", "stdout", "stderr")
_DIRS = (Direction.C2S, Direction.S2C, None)
_EVENT, _STOP = 3, 4

DEFAULT_BUDGET = 64 * 1024 * 1024  # bytes of chunks that may wait for the writer
MAX_STDERR_LINE = 1024 * 1024  # a stderr "line" longer than this is cut in the capture (not in the relay)
CAP_PIPE_MAX = 1024 * 1024  # the zero-copy relay's capture pipe (capped by /proc/sys/fs/pipe-max-size)
INLINE_MAX = 4096 - 24  # a small chunk's copy travels with its 24-byte note in one atomic pipe write
MAX_BATCH = 1024  # queue items written per flush when the writer is behind
# ...and at most about this many bytes of copies: a flood's batch of 1024 chunks of 1 MiB would be
# held (and counted against the budget) until the last was written. One such chunk at a time: its
# capture lines then reach the file while they are still in the CPU's cache (4 MiB batches made the
# write to the page cache about half the capture's CPU under a flood).
MAX_BATCH_BYTES = 1024 * 1024
# After waking up, the writer lingers this long so a burst costs one wake-up and one flush, not one
# per chunk (a wake-up is a context switch taken from the relay on a small machine). tail -f still
# sees every record within a few milliseconds.
LINGER_S = 0.002
NO_LINGER_TEED = 64 * 1024  # ...unless a big tee'd chunk is waiting: its pipe must be emptied at once
# How long the relay waits, a whole budget of copies behind, for the capture to take a byte before it
# drops a copy instead (tracer.stdio.loop says why): far above the few milliseconds a capture at
# normal priority waits for a CPU on a loaded machine, short enough that a stalled one is a hiccup.
ROOM_WAIT_NS = 500_000_000
ROOM_POLL_MS = 10  # (meanwhile, notes the control pipe could not take are handed over this often)


class CaptureOutcome:
    """What happened to a capture, for the tee's summary line and the tests; shared by the in-process
    sink and the capture process (which fills it from its final report)."""

    def reset_outcome(self) -> None:
        self.messages = 0
        self.stderr_lines = 0
        self.dropped_bytes = [0, 0, 0]
        self.dropped_chunks = 0
        self.findings: Counter = Counter()
        self.write_error: OSError | None = None
        self.analysis_error: str | None = None


class CaptureSink(CaptureOutcome):
    """Bounded, never-blocking hand-off from the relay threads to the capture writer thread."""

    def __init__(
        self,
        writer: CaptureWriter,
        conn: str,
        *,
        budget: int = DEFAULT_BUDGET,
        analyser=None,
        on_finding: Callable[[Finding], None] | None = None,
        room_wait_ns: int = ROOM_WAIT_NS,
    ):
        self.writer = writer
        self.room_wait_ns = room_wait_ns  # (0: a copy over the budget is dropped at once)
        self._stalled = False  # the writer took nothing for room_wait_ns: drop, do not wait again
        self.conn = conn
        self.budget = budget
        self._q: queue.SimpleQueue = queue.SimpleQueue()  # put() is reentrant: safe in signal handlers
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # the writer released bytes of the budget
        self._queued = 0
        # per stream: bytes / chunks / newlines dropped since its last accepted chunk. Each slot is
        # written only by that stream's relay thread, so it needs no lock.
        self._gap = [[0, 0, 0], [0, 0, 0], [0, 0, 0]]
        self._framers = [StreamFramer(), StreamFramer(), LineFramer(max_line=MAX_STDERR_LINE)]
        # Bulk runs of plain lines (tracer.stdio.runs) go only to a plain capture writer: a wrapped one
        # (the live OTLP export) needs every record as a Record.
        self._runs = isinstance(writer, CaptureWriter)
        # credentials of the server's command line and environment, hidden wherever the server
        # echoes them: on stderr, in a banner on stdout, in a JSON log line or a message (a tool
        # result quoting the key), kept well-formed and marked (tracer.redact_echo; set by
        # tracer.stdio.tee.open_capture; --no-redact sets none)
        self._hidden: tuple[bytes, ...] = secret_forms(getattr(writer, "stderr_secrets", ()))
        self._suspect = False  # a line the live check has not seen yet may open a multi-line group
        self._pos = [0, 0, 0]  # stream offset of the next byte the writer will see
        self._caps: list[tuple[int, int] | None] = [None, None, None]  # per stream: tee'd copies (tee_splice)
        self._analyser = analyser
        self._on_finding = on_finding
        self._thread = threading.Thread(target=self._run, name="mcptrace-capture", daemon=True)
        self.reset_outcome()

    # -- the relay side (any thread, never blocks) ---------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def offer(self, stream: int, t_ns: int, data: bytes) -> bool:
        """A copy of a relayed chunk. Returns False when it was over budget (dropped, counted)."""
        n = len(data)
        with self._lock:
            ok = self._queued + n <= self.budget
            if not ok and n <= self.budget and self.room_wait_ns > 0 and not self._stalled:
                ok = self._wait_room(n)
            if ok:
                self._queued += n
        gap = self._gap[stream]
        if not ok:
            gap[0] += n
            gap[1] += 1
            if gap[2] >= 0:  # (-1: a zero-copy drop in this gap, lines unknown)
                gap[2] += data.count(b"\n")
            return False
        if gap[0]:
            self._q.put((stream, t_ns, data, tuple(gap)))
            gap[0] = gap[1] = gap[2] = 0
        else:
            self._q.put((stream, t_ns, data, None))
        return True

    def _wait_room(self, n: int) -> bool:
        """(With the lock held.) A whole budget waits for the writer: wait while it writes, as the
        relay waits for a capture process (tracer.stdio.loop), until `n` more bytes fit; False after
        room_wait_ns with nothing written (then, until the writer takes something, no more waits)."""
        if not self._thread.is_alive():
            return False  # (not started, or ended: nothing will make room)
        self.hurry(True)
        clock = time.monotonic_ns
        give_up = clock() + self.room_wait_ns
        while self._queued + n > self.budget:
            before = self._queued
            self._room.wait(ROOM_POLL_MS / 1000)
            if self._queued < before:
                give_up = clock() + self.room_wait_ns
            elif clock() >= give_up:
                self._stalled = True
                return False
        return True

    def inline(self, stream: int, t_ns: int, data: bytes) -> bool:
        """A small chunk's copy (tracer.stdio.loop): here the same as `offer`."""
        return self.offer(stream, t_ns, data)

    def eof(self, stream: int, t_ns: int | None = None) -> None:
        """The stream ended: its unterminated tail (if any) becomes a record with eol false."""
        gap = self._gap[stream]
        self._q.put((stream, t_ns or time.time_ns(), None, tuple(gap) if gap[0] else None))
        gap[0] = gap[1] = gap[2] = 0
        cap = self._caps[stream]
        if cap is not None and cap[1] >= 0:
            os.close(cap[1])  # the relay is done with it; the writer reads the rest, then EOF
            self._caps[stream] = (cap[0], -1)

    # -- the zero-copy relay's side (tracer.stdio.splice): copies arrive through a pipe, not a queue

    def cap_fd(self, stream: int) -> int:
        """The pipe the relay tee(2)s its copies of `stream` into (made on first use). Its size is
        this stream's budget: a copy that does not fit is dropped from the capture, counted."""
        if self._caps[stream] is None:
            r, w = os.pipe()
            try:
                fcntl.fcntl(
                    w, getattr(fcntl, "F_SETPIPE_SZ", 1031), max(4096, min(self.budget, CAP_PIPE_MAX))
                )
            except OSError:
                pass  # capped by /proc/sys/fs/pipe-max-size: the default size works too
            self._caps[stream] = (r, w)
        return self._caps[stream][1]

    @property
    def pending_bytes(self) -> int:
        """Bytes offered and not yet written."""
        return self._queued

    @property
    def bytes_seen(self) -> int:
        """Bytes of the three streams the writer has framed (or knows were dropped) so far."""
        return sum(self._pos)

    def hurry(self, at_once: bool = False) -> None:
        """(The relay falls behind a flood: only the capture process has a priority to raise.)"""

    def has_room(self, n: int) -> bool:
        """Whether `n` more bytes would fit in the queue's budget now (a hint: `offer` decides)."""
        return self._queued + n <= self.budget

    def teed(self, stream: int, t_ns: int, n: int) -> None:
        """`n` more bytes of `stream` wait in its capture pipe (the relay calls this before it forwards them)."""
        gap = self._gap[stream]
        if gap[0]:
            self._q.put((stream, t_ns, n, tuple(gap)))
            gap[0] = gap[1] = gap[2] = 0
        else:
            self._q.put((stream, t_ns, n, None))

    def teed_dropped(self, stream: int, t_ns: int, n: int) -> None:
        """`n` bytes were forwarded without a copy (the capture pipe was full): a gap, recorded.
        Their newlines are not counted: the bytes never entered this process."""
        self.gap(stream, n, -1)

    def event(self, name: str, **data) -> None:
        """An event record (process started, stdin EOF, signal, exit...), in queue order."""
        self._q.put((_EVENT, time.time_ns(), {"event": name, **data}, None))

    def event_at(self, t_ns: int, data: dict) -> None:
        """An event that happened at `t_ns` (told by the relay process: tracer.stdio.process)."""
        self._q.put((_EVENT, t_ns, data, None))

    def gap(self, stream: int, n: int, newlines: int) -> None:
        """`n` bytes of `stream` that never reached the capture (-1 newlines: not counted)."""
        gap = self._gap[stream]
        gap[0] += n
        gap[1] += 1
        gap[2] = gap[2] + newlines if newlines >= 0 and gap[2] >= 0 else -1

    def close(self, timeout: float | None = 30.0) -> bool:
        """Write everything queued so far, then stop. False if the writer did not finish in time."""
        self._q.put((_STOP, 0, None, None))
        if self._thread.is_alive():
            self._thread.join(timeout)
        done = not self._thread.is_alive()
        if done:
            for i, cap in enumerate(self._caps):
                if cap is not None:
                    os.close(cap[0])  # (a write end still open belongs to a relay still running)
                    self._caps[i] = (-1, cap[1])
        return done

    # -- the writer thread ---------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as exc:  # never expected; the relay must not notice, and the user must
            self.write_error = OSError(f"the capture writer failed: {type(exc).__name__}: {exc}")
            while self._q.get()[0] != _STOP:  # keep draining so nothing waits on a dead writer
                pass

    def _loop(self) -> None:
        get, get_nowait = self._q.get, self._q.get_nowait
        while True:
            batch = [get()]
            code, _, payload, _ = batch[0]
            big = payload if payload.__class__ is int else len(payload) if payload.__class__ is bytes else 0
            if code != _STOP and big < NO_LINGER_TEED:
                time.sleep(LINGER_S)  # (not behind a flood: its chunks already come in bulk)
            size = 0
            while len(batch) < MAX_BATCH and size < MAX_BATCH_BYTES:
                try:
                    item = get_nowait()
                except queue.Empty:
                    break
                batch.append(item)
                if item[2].__class__ is bytes:
                    size += len(item[2])
            released = 0
            teed = False
            for code, _, payload, _ in batch:
                if payload.__class__ is int:
                    teed = True
                elif code < _EVENT and payload is not None:
                    released += len(payload)
            if teed:  # empty the capture pipes first: they are the zero-copy relay's only room for copies
                read = self._read_teed
                batch = [
                    (c, t, read(c, p), g) if p.__class__ is int else (c, t, p, g) for c, t, p, g in batch
                ]
            recs: list = []  # Records and runs (tracer.stdio.runs), in stream order
            stop = False
            for code, t_ns, payload, gap in batch:
                if code < _EVENT:
                    if gap is not None:
                        recs.append(self._dropped(code, t_ns, gap))
                    if payload is None:
                        tail = self._framers[code].finish()
                        if tail is not None:
                            recs.append(self._record(code, tail, t_ns))
                    elif self._runs and code != STDERR and len(payload) >= RUN_MIN:
                        recs = self._feed_bulk(code, payload, t_ns, recs)
                    else:
                        self._pos[code] += len(payload)
                        for fr in self._framers[code].feed(payload):
                            recs.append(self._record(code, fr, t_ns))
                elif code == _EVENT:
                    recs.append(
                        Record(RecordType.EVENT, t_ns=t_ns, transport="stdio", conn=self.conn, data=payload)
                    )
                else:
                    stop = True
            if recs:
                self._write(recs)
            if released:
                with self._lock:
                    self._queued -= released
                    self._stalled = False
                    self._room.notify_all()  # (a relay may wait for room: `_wait_room`)
            if stop:
                return
            # (hold nothing of this batch while the next is awaited: after a flood the capture process
            # trims its heap, and a last batch kept alive here, megabytes, could not be given back)
            batch = recs = payload = item = None

    def _feed_bulk(self, stream: int, payload: bytes, t_ns: int, recs: list) -> list:
        """Frame a big chunk: the line it completes per line, then its whole lines as one run (`make_run`)
        when they are all plain (else per line), and keep its unterminated tail. Returns the list
        to go on appending to."""
        framer = self._framers[stream]
        first, last = payload.find(b"\n"), payload.rfind(b"\n")
        if first == last:  # one line ends here at most: nothing to gain
            self._pos[stream] += len(payload)
            recs.extend(self._record(stream, fr, t_ns) for fr in framer.feed(payload))
            return recs
        self._pos[stream] += first + 1
        recs.extend(self._record(stream, fr, t_ns) for fr in framer.feed(payload[: first + 1]))
        if self._suspect:
            # The live check must see the lines before this run first: one of them may open a
            # multi-line group, and then the run's lines must be analysed one by one.
            self._write(recs)
            recs = []
        size = last - first  # the whole lines after the first newline (not copied for a run)
        run = None
        if (
            framer.at_line_start
            and size <= framer.max_line
            and not self._group_open()
            and not self._echoes(payload)
        ):
            run = make_run(
                payload, first + 1, last + 1, self._pos[stream], t_ns, 0, stream, "stdio", self.conn
            )
        self._pos[stream] += size
        if run is None:
            recs.extend(self._record(stream, fr, t_ns) for fr in framer.feed(payload[first + 1 : last + 1]))
        else:
            framer.advance(size)
            self.messages += run.count
            recs.append(run)
        tail = payload[last + 1 :]
        self._pos[stream] += len(tail)
        framer.feed(tail)  # (no newline in it: kept for the next chunk)
        return recs

    def _echoes(self, payload: bytes) -> bool:
        """Whether a known credential shows up in the chunk: its lines then take the per-line path,
        which hides it (a run stores its lines as they are)."""
        return any(form in payload for form in self._hidden)

    def _group_open(self) -> bool:
        """Whether the live check has a multi-line message open (see `_worth_analysing`)."""
        if self._analyser is None:
            return False
        s = self._analyser.sessions.get(self.conn)
        st = s.stdio if s is not None else None
        return bool(st is not None and st.groups)

    def _read_teed(self, stream: int, n: int) -> bytes:
        """The `n` bytes the relay tee'd for this item: they are in the pipe already."""
        return read_exactly(self._caps[stream][0], n)

    def _record(self, stream: int, fr: Frame, t_ns: int) -> Record:
        if stream == STDERR:
            self.stderr_lines += 1
            rtype = RecordType.STDERR
        else:
            self.messages += 1
            rtype = RecordType.MESSAGE
        # positional: this runs once per line (type, seq, t_ns, dir, raw, transport, conn, offset, eol)
        data = fr.data
        hidden = 0
        if self._hidden:  # (a line over the cap keeps its start: a known value's start at its end too)
            data, hidden = hide_kept(data, self._hidden, fr.cut)
        rec = Record(rtype, 0, t_ns, _DIRS[stream], data, "stdio", self.conn, fr.offset, fr.eol)
        if fr.cut or hidden:
            rec.data = {"cut": fr.cut} if fr.cut else {}
            if hidden:  # (the stored bytes are not the wire's: say so)
                rec.data["redacted"] = hidden
        if stream != STDERR and self._analyser is not None and not self._suspect:
            self._suspect = looks_suspicious(rec)
        return rec

    def _dropped(self, stream: int, t_ns: int, gap: tuple[int, int, int]) -> Record:
        nbytes, chunks, newlines = gap
        offset = self._pos[stream]
        self._pos[stream] += nbytes
        broken = self._framers[stream].skip(nbytes)
        self.dropped_bytes[stream] += nbytes
        self.dropped_chunks += chunks
        data = {
            "event": "dropped",
            "stream": STREAMS[stream],
            "offset": offset,
            "bytes": nbytes,
            "chunks": chunks,
            "count": newlines,
            "broken_line_bytes": broken,
            "why": "the capture writer fell behind; the relay was not slowed and the bytes were delivered",
        }
        if newlines < 0:
            del data["count"]  # dropped by the zero-copy relay: the bytes were never seen, nor their lines
        return Record(RecordType.EVENT, t_ns=t_ns, transport="stdio", conn=self.conn, data=data)

    def _write(self, recs: list[Record]) -> None:
        if self.write_error is None:
            try:
                self.writer.write_many(recs, encode_line)
            except (OSError, ValueError) as exc:  # disk full, file closed: the relay goes on regardless
                self.write_error = exc if isinstance(exc, OSError) else OSError(str(exc))
        self._suspect = False
        if self._analyser is None:
            return
        try:
            self._analyse(recs)
        except Exception as exc:  # a bug in a rule must never cost the capture: stop the live check only
            self._analyser = None
            self.analysis_error = f"{type(exc).__name__}: {exc}"

    def _analyse(self, recs: list[Record]) -> None:
        a = self._analyser
        for rec in recs:
            if rec.__class__ is not Record or not self._worth_analysing(rec):  # (a run: plain lines only)
                continue
            for ev in a.feed(rec):
                for f in ev.findings:  # (the live rules, MCP8xx, are about lines and the process)
                    self.findings[f.rule] += 1
                    if self._on_finding is not None:
                        self._on_finding(f)

    def _worth_analysing(self, rec: Record) -> bool:
        """Live diagnostics cover framing (MCP801-MCP804) and the process life cycle (MCP809):
        lines that do not look like one complete JSON object are analysed, plus everything while a
        multi-line message is open. Plain message lines are left to `mcptrace lint` / `view`, which
        run every rule on the capture: analysing each one here would double the capture's CPU."""
        if rec.type is not RecordType.MESSAGE:
            return rec.type is RecordType.EVENT or not is_utf8(rec.raw)
        if looks_suspicious(rec):
            return True
        s = self._analyser.sessions.get(rec.conn)
        st = s.stdio if s is not None else None
        return bool(st is not None and st.groups)

    def finish_analysis(self) -> None:
        """End of the session: the end-of-session checks of the live rules."""
        if self._analyser is None:
            return
        try:
            found = [f for ev in self._analyser.finish() for f in ev.findings]
        except Exception as exc:
            self.analysis_error = f"{type(exc).__name__}: {exc}"
            return
        for f in found:
            self.findings[f.rule] += 1
            if self._on_finding is not None:
                self._on_finding(f)
