"""The stdio tee's capture in a process of its own (Linux), so its Python work never holds up the relay.

The capture writer frames and encodes every line: Python work that, in the relay's process, holds
the interpreter lock the relay threads need after each system call (the cause of the tee's p99
latency and of most of its throughput cost). Here the relay process only moves bytes:

    relay threads ──tee(2)/write──> one capture pipe per stream ──> capture process
                  ──notes (stream, size, time)──> control pipe ──>  (CaptureSink, as in-process)

The relay writes a fixed-size note per chunk (before forwarding it, so the capture keeps causal
order across streams) without ever blocking: a full control pipe parks notes in a list flushed on
the next chunk. When a capture pipe is full (a burst, or the capture process not scheduled yet)
the relay loop splices the chunk into the ring (tracer.stdio.ring, 4x `--queue-mb` long), which this
process reads in note order; the per-direction relays (sockets, terminals) copy it into memory
instead, within the budget, and a spill thread feeds it to the pipe as room comes. Over that budget the relay waits for the capture as long as it
takes copies (`wait_room`, as tracer.stdio.loop does); only a capture that takes nothing for
ROOM_WAIT_NS loses a copy (counted, recorded as a `dropped` event), and then without copying. Findings
of the live check and the final counts come back on a third pipe.

The process is forked before the server is started and before any thread exists, so it holds no
end of the server's pipes (the server sees EOF when the relay closes them) and fork is safe.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import threading
import time
from collections import Counter, deque
from types import SimpleNamespace

import orjson

from tracer.stdio.capture import (
    CAP_PIPE_MAX,
    DEFAULT_BUDGET,
    INLINE_MAX,
    ROOM_POLL_MS,
    ROOM_WAIT_NS,
    STDIN,
    CaptureOutcome,
)
from tracer.stdio.capture_child import (
    _CONN,
    _EOF,
    _EVENT,
    _GAP,
    _INLINE,
    _NOTE,
    _RING,
    _TEED,
    _child,
    _close_others,
)
from tracer.stdio.heap import keep_freed_memory
from tracer.stdio.priority import background
from tracer.stdio.ring import Ring, RingReader, ring_size
from tracer.stdio.splice import count_newlines, readable

_SETPIPE = getattr(fcntl, "F_SETPIPE_SZ", 1031)
UNPARK_NS = 1_000_000
LINGER_BELOW = 64 * _NOTE.size
# While the session runs, the capture process takes only CPU time nobody else wants (SCHED_IDLE,
# and nice 19 where that is missing): framing a batch of records then never delays the relay, the
# server or the host (p99 latency 4x lower here); real sessions leave plenty of idle CPU. A flood
# leaves none on a busy machine: the capture would get no CPU until the budget overflowed. So when
# copies start to wait in the relay's memory (the capture pipe is full; with the ring, once half of
# it waits: tracer.stdio.ring.HURRY_SHARE) the relay asks for normal scheduling for the capture
# process (`hurry`, again every HURRY_EVERY_NS while it lasts), and the capture process goes back to
# the background by itself once it has caught up. At the end of the session it asks for normal
# scheduling too, to finish promptly. (Threads go back up only with root or RLIMIT_NICE, autogroups
# with any user's rights: tracer.stdio.priority. Without either, a flood may drop, counted.)
HURRY_EVERY_NS = 20_000_000  # the relay asks at most this often (each time costs a few system calls)


def _pipe(size: int) -> tuple[int, int]:
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, _SETPIPE, size)
    except OSError:
        pass  # capped by /proc/sys/fs/pipe-max-size: the default size works too
    return r, w


class CaptureProcess(CaptureOutcome):
    """The relay's side: the same interface as `CaptureSink` (offer/eof/event and the zero-copy
    cap_fd/teed/teed_dropped), backed by a forked capture process."""

    def __init__(
        self,
        writer,
        *,
        budget: int = DEFAULT_BUDGET,
        live_lint: bool = True,
        on_finding=None,
        keep_fds: tuple[int, ...] = (2,),
        room_wait_ns: int = ROOM_WAIT_NS,
        ring: bool = True,
    ):
        # (made before the fork, as the pipes: the capture process reads the ring the relay fills)
        self.ring = Ring.create(ring_size(budget)) if ring else None
        ring_fds = (self.ring.fd, self.ring.taken_fd) if self.ring is not None else ()
        self._caps = [_pipe(max(4096, min(budget, CAP_PIPE_MAX))) for _ in range(3)]
        ctl_r, ctl_w = _pipe(CAP_PIPE_MAX)
        back_r, back_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the capture process: never returns
            code = 1
            try:  # (any failure here must end this process, never return into the relay's code)
                # A session of its own: a host ends the server it started with killpg (the official
                # SDK: SIGTERM to the tee's group, SIGKILL 2 s later), which must not kill the capture
                # still writing what the relay copied. It ends at EOF of the notes, whatever happens.
                os.setsid()
                os.close(ctl_w)
                os.close(back_r)
                for _, w in self._caps:
                    os.close(w)
                _close_others(
                    {ctl_r, back_w, *(r for r, _ in self._caps), *keep_fds, writer.fileno(), *ring_fds}
                )
                reader = RingReader(*ring_fds, self.ring.size) if self.ring is not None else None
                code = _child(ctl_r, [r for r, _ in self._caps], back_w, writer, budget, live_lint, reader)
            except BaseException:
                import traceback

                traceback.print_exc()
            finally:
                os._exit(code)
        self.pid = pid
        self.trim = keep_freed_memory(budget)  # (the relay's copies waiting in memory: tracer.stdio.loop)
        os.close(ctl_r)
        os.close(back_w)
        for r, _ in self._caps:
            os.close(r)
        for _, w in self._caps:
            os.set_blocking(w, False)  # (`offer` never blocks in a write: it waits in wait_room, bounded)
        os.set_blocking(ctl_w, False)
        self._ctl = ctl_w
        self._lock = threading.Lock()
        self._parked: list[bytes] = []
        self._unpark_at = 0
        self.budget = budget
        self._spilled = 0  # bytes copied into memory, not yet in their capture pipe
        self._spill_q: list[deque] = [deque(), deque(), deque()]  # per stream, in stream order
        self._spill_cv = threading.Condition(threading.Lock())
        self._closing = False
        self._stalled = False  # the capture took no byte for room_wait_ns: drop, do not wait again
        self.room_wait_ns = room_wait_ns  # (0: never wait for the capture, drop at once)
        self._hurried_at = -HURRY_EVERY_NS
        self._spiller = threading.Thread(target=self._spill_loop, name="mcptrace-capture-spill", daemon=True)
        self._on_finding = on_finding
        self._back = threading.Thread(
            target=self._read_back, args=(back_r,), name="mcptrace-capture-back", daemon=True
        )
        self.reset_outcome()  # filled in from the capture process's final report
        self._reported = False
        self.ended_unreported = False  # it ended without its report (killed): tracer.stdio.lost
        # Notes sent once the capture had closed (a relay going on after the session: pipes a
        # grandchild holds open) or had gone away: what they stood for is not in the capture. By
        # design the relay goes on, but the tee says at exit how much is missing: late_bytes (the
        # stream bytes of those notes) and late_events (event records); late_notes counts every
        # note, a stream's EOF included.
        self.late_notes = 0
        self.late_bytes = 0
        self.late_events = 0
        self.late_stdin_bytes = 0  # (of late_bytes, the host's: undelivered if the server stopped reading)
        self.late_event_names: Counter[str] = Counter()  # (a few names at most: the tee's own events)

    # -- the relay side (any thread, never blocks) ---------------------------------------------

    def start(self) -> None:
        self._back.start()
        self._spiller.start()

    def hurry(self, at_once: bool = False) -> None:
        """The capture falls behind a flood: normal scheduling for the capture process until it has
        caught up (refused without the privilege to raise priority: it stays in the background).
        `at_once`: even if asked less than HURRY_EVERY_NS ago (the relay is about to wait for it)."""
        now = time.monotonic_ns()
        if at_once or now - self._hurried_at >= HURRY_EVERY_NS:
            self._hurried_at = now
            background(False, self.pid)

    def set_conn(self, conn: str) -> None:
        data = conn.encode()
        self._send(_NOTE.pack(_CONN, 0, len(data), 0) + data)

    def cap_fd(self, stream: int) -> int:
        return self._caps[stream][1]

    def has_room(self, n: int) -> bool:
        """Whether a chunk the capture pipe cannot take may be copied into memory (the budget)."""
        return self._spilled + n <= self.budget

    def spilling(self, stream: int) -> bool:
        """Copies of this stream wait in memory: later ones must queue behind them (stream order)."""
        return bool(self._spill_q[stream])

    def teed(self, stream: int, t_ns: int, n: int) -> None:
        self._send(_NOTE.pack(_TEED, stream, n, t_ns))

    def ringed(self, stream: int, t_ns: int, n: int) -> None:
        """`n` more bytes of `stream` were put in the ring (tracer.stdio.ring), after those noted before."""
        self._send(_NOTE.pack(_RING, stream, n, t_ns))

    def inline(self, stream: int, t_ns: int, data: bytes) -> bool:
        """A small chunk's copy (up to INLINE_MAX bytes) sent with its note through the control
        pipe: one write, and its bytes take no slot of the capture pipe (where every small chunk
        would take a whole page). False when the capture is a budget behind and takes nothing:
        dropped, counted."""
        if len(self._parked) * INLINE_MAX > self.budget and not self._wait_notes():
            self._send(_NOTE.pack(_GAP, stream, len(data), data.count(b"\n")))
            return False
        self._send(_NOTE.pack(_INLINE, stream, len(data), t_ns) + data)
        return True

    def gap(self, stream: int, n: int, newlines: int) -> None:
        """`n` bytes of `stream` the capture will not get (`newlines` of them, or -1: not counted)."""
        self._send(_NOTE.pack(_GAP, stream, n, newlines))

    def teed_dropped(self, stream: int, t_ns: int, n: int) -> None:
        self._send(_NOTE.pack(_GAP, stream, n, -1))

    def offer(self, stream: int, t_ns: int, data: bytes) -> bool:
        """A copy made by the read/write relay: into the stream's capture pipe as far as it fits,
        the rest into memory (within the budget) for the spill thread. False when dropped."""
        n = 0
        if not self._spill_q[stream]:
            try:
                n = os.write(self._caps[stream][1], data)
            except BlockingIOError:
                pass
            except OSError:  # the capture process is gone: the relay goes on
                return False
        rest = len(data) - n
        if rest and self._spilled + rest > self.budget and not self.wait_room(rest):
            if n:
                self._send(_NOTE.pack(_TEED, stream, n, t_ns))
            self._send(_NOTE.pack(_GAP, stream, rest, count_newlines(data, n)))
            return False
        if rest:
            self.hurry()
            with self._spill_cv:
                self._spilled += rest
                self._spill_q[stream].append(data[n:] if n else data)
                self._spill_cv.notify()
        self._send(_NOTE.pack(_TEED, stream, len(data), t_ns))
        return True

    def wait_room(self, need: int) -> bool:
        """A whole budget of copies waits for the capture: wait while the capture takes them until
        `need` more bytes fit (as tracer.stdio.loop does); False after ROOM_WAIT_NS with no byte
        taken (then, until the capture takes one again, False at once: the copy is dropped)."""
        if need > self.budget or self._stalled or self.room_wait_ns <= 0:
            return False
        self.hurry(True)
        clock = time.monotonic_ns
        give_up = clock() + self.room_wait_ns
        while True:
            self.hurry()  # (again while it waits: it may have stepped back meanwhile)
            self.flush_notes()  # (the capture reads a copy only after its note)
            with self._spill_cv:
                if self._spilled + need <= self.budget:
                    return True
                before = self._spilled
                self._spill_cv.wait(ROOM_POLL_MS / 1000)
                if self._spilled < before:
                    give_up = clock() + self.room_wait_ns
                elif clock() >= give_up:
                    self._stalled = True
                    return False

    def _spill_loop(self) -> None:
        """Feed the copies waiting in memory to their capture pipes as they get room."""
        cv, queues = self._spill_cv, self._spill_q
        waiter = select.poll()
        while True:
            with cv:
                while not any(queues) and not self._closing:
                    cv.wait()
                if not any(queues):
                    return
                busy = [i for i in range(3) if queues[i]]
            for i in busy:
                fd = self._caps[i][1]
                data = queues[i][0]
                try:
                    n = os.write(fd, data)
                except BlockingIOError:
                    n = 0
                except OSError:  # the capture process is gone: nothing will read these
                    n = len(data)
                with cv:
                    if n == len(data):
                        queues[i].popleft()
                    elif n:
                        queues[i][0] = data[n:]
                    self._spilled -= n
                    if n:
                        self._stalled = False
                        cv.notify_all()  # (a relay may wait for room: tracer.stdio.process.wait_room)
            if not any(queues):
                continue
            for i in busy:
                waiter.register(self._caps[i][1], select.POLLOUT)
            waiter.poll(50)
            for i in busy:
                waiter.unregister(self._caps[i][1])

    def eof(self, stream: int, t_ns: int | None = None) -> None:
        self._send(_NOTE.pack(_EOF, stream, 0, t_ns or time.time_ns()))

    def event(self, name: str, **data) -> None:
        payload = orjson.dumps({"event": name, **data})
        self._send(_NOTE.pack(_EVENT, 0, len(payload), time.time_ns()) + payload)

    def _send(self, note: bytes) -> None:
        """One note, in order, without blocking (writes up to PIPE_BUF bytes are all or nothing)."""
        with self._lock:
            if self._ctl < 0:  # (closed: a relay going on after the session)
                self._late(note)
                return
            parked = self._parked
            if parked:
                # The capture is behind: try to hand the parked notes over at most once per
                # UNPARK_NS, not on every chunk (each failed try is a system call and an exception).
                now = time.monotonic_ns()
                if now < self._unpark_at or not self._unpark():
                    self._unpark_at = now + UNPARK_NS
                    parked.append(note)
                    return
            try:
                os.write(self._ctl, note)
            except BlockingIOError:
                parked.append(note)
                self.hurry()
            except OSError:
                self._late(note)  # the capture process is gone: the relay goes on

    def _late(self, note: bytes) -> None:
        """A note that will never reach the capture (the lock is held)."""
        kind, stream, n, _ = _NOTE.unpack_from(note)
        self.late_notes += 1
        if kind == _EVENT:
            self.late_events += 1
            try:
                name = orjson.loads(note[_NOTE.size :]).get("event")
            except (orjson.JSONDecodeError, AttributeError):
                name = None
            if type(name) is str and len(self.late_event_names) < 32:
                self.late_event_names[name] += 1
        elif kind != _EOF and kind != _CONN and n > 0:  # stream bytes (a gap's: their drop unrecorded)
            self.late_bytes += n
            if stream == STDIN:
                self.late_stdin_bytes += n

    def flush_notes(self) -> None:
        """Hand over the notes parked in memory, as far as the control pipe takes them now (the relay
        waits for the capture: the capture reads a copy only after its note)."""
        with self._lock:
            if self._parked and self._ctl >= 0:
                self._unpark()

    def _wait_notes(self) -> bool:
        """A budget of notes waits in memory (the control pipe is full): hand them over as the
        capture process takes them until they fit, bounded as `wait_room`; False when it took none
        for ROOM_WAIT_NS (then False at once until it takes one)."""
        if self._stalled or self.room_wait_ns <= 0:
            return False
        self.hurry(True)
        waiter = select.poll()
        clock = time.monotonic_ns
        give_up = clock() + self.room_wait_ns
        with self._lock:
            if self._ctl < 0:
                return False
            waiter.register(self._ctl, select.POLLOUT)
        while True:
            with self._lock:
                before = len(self._parked)
                if self._ctl >= 0:
                    self._unpark()
                left = len(self._parked)
            if left * INLINE_MAX <= self.budget:
                return True
            if left < before:
                give_up = clock() + self.room_wait_ns
            elif clock() >= give_up:
                self._stalled = True
                return False
            self.hurry()  # (again while it waits, as `wait_room`)
            waiter.poll(ROOM_POLL_MS)

    def _unpark(self) -> bool:
        parked = self._parked
        while parked:
            batch = b"".join(parked[:128])
            if len(batch) > 4096:
                batch = parked[0]
                k = 1
            else:
                k = min(128, len(parked))
            try:
                os.write(self._ctl, batch)
            except BlockingIOError:
                return False
            except OSError:  # (the capture process is gone)
                for note in parked:
                    self._late(note)
                parked.clear()
                return True
            del parked[:k]
            self._stalled = False  # (the capture process takes notes again)
        return True

    # -- the end -------------------------------------------------------------------------------

    def close(self, timeout: float | None = 30.0) -> bool:
        """Hand over the last notes, let the capture process finish, collect its report."""
        # The session is over: what the capture still has to write is all that the tee's exit now
        # waits for, so it gets normal scheduling at once, not once it has read its last note on
        # idle CPU (which a busy machine may not give it for a long while).
        self.hurry(True)
        with self._spill_cv:
            self._closing = True
            self._spill_cv.notify()
        with self._lock:
            ctl, self._ctl = self._ctl, -1  # a relay still running (pipes held open) sends nowhere
            os.set_blocking(ctl, True)
            parked, sent = self._parked, 0
            try:
                for note in parked:
                    os.write(ctl, note)
                    sent += 1
            except OSError:
                for note in parked[sent:]:  # (the capture process is gone)
                    self._late(note)
            parked.clear()
            os.close(ctl)
        # (the capture pipes stay open: a relay thread may still tee into them; they close at exit)
        # Hurried again while it finishes: an unprivileged autogroup change is refused 0.1 s after
        # the last (its own step back): left at nice 19, a busy machine's took 12 s for 50 MB.
        end = None if timeout is None else time.monotonic() + timeout
        while self._back.is_alive() and (end is None or time.monotonic() < end):
            self._back.join(HURRY_EVERY_NS / 1e9)
            self.hurry()
        deadline = time.monotonic() + (timeout or 0)
        try:
            exited = os.pidfd_open(self.pid)  # (readable once it has exited: no polling on a timer)
        except (AttributeError, OSError):
            exited = None
        try:
            while True:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                left = deadline - time.monotonic()
                if pid and not self._reported and not self._back.is_alive():
                    # It ended without its report: killed (OOM, a kill -9 of the wrong pid) or
                    # crashed. Its last records may be missing: the user must hear it.
                    code = os.waitstatus_to_exitcode(status)
                    how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
                    self.ended_unreported = True
                    self.write_error = OSError(
                        f"the capture process ended before it finished ({how}); the capture may lack "
                        "the end of the session"
                    )
                if pid or left < 0:
                    return bool(pid) and not self._back.is_alive()
                if exited is not None:
                    readable(exited, left)  # (poll: select refuses a descriptor past 1023)
                else:
                    time.sleep(0.01)
        finally:
            if exited is not None:
                os.close(exited)

    def finish_analysis(self) -> None:
        """(The capture process ran the end-of-session checks before it reported.)"""

    def _read_back(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as fh:
            for line in fh:
                msg = orjson.loads(line)
                if "finding" in msg and self._on_finding is not None:
                    rule, label, message = msg["finding"]
                    self._on_finding(
                        SimpleNamespace(rule=rule, severity=SimpleNamespace(label=label), message=message)
                    )
                elif "report" in msg:
                    self._reported = True
                    r = msg["report"]
                    self.messages, self.stderr_lines = r["messages"], r["stderr_lines"]
                    self.dropped_bytes, self.dropped_chunks = r["dropped_bytes"], r["dropped_chunks"]
                    self.findings = Counter(r["findings"])
                    self.write_error = OSError(r["write_error"]) if r["write_error"] else None
                    self.analysis_error = r["analysis_error"]
