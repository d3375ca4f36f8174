"""The stdio tee's relay of both directions in one thread, spinning briefly after each chunk (Linux).

    host stdin  ──> [loop] ──> server stdin       each chunk: tee(2) it on to the destination, then
    host stdout <── [loop] <── server stdout      splice(2) the same bytes into the capture's pipe
                                                  and note it for the capture (tracer.stdio.process)

Forward first: tee(2) gives the destination the chunk's pages without copying or consuming them,
so the peer is woken before any capture bookkeeping, which then runs while the peer works. Then
the bytes are moved out of the source into the capture pipe. One thread keeps the capture's order
across directions: an answer is read only after its request's copy was handed over.

Why spin: on a request/response exchange a relay's cost is mostly *waking it up* (a scheduler
wake-up on another CPU: tens of microseconds in a VM), not moving the bytes (~2 us). After a chunk
moves, the loop keeps polling both sources without sleeping for `SPIN_NS` before it blocks: the
answer to the request it just passed on, or the host's next request, usually arrives within that
window and goes on at once, so the relay adds about the cost of its system calls, not two more
wake-ups. It spins only on a machine with more than one CPU (on one it would take the time the
server needs), only right after small chunks, and not while it finds itself preempted (`Spin`):
an idle session, or a busy machine, costs nothing.

Why one thread: two spinning threads would fight over the interpreter lock. So nothing in the loop
blocks: the forwarding tee(2) is non-blocking, and a full destination parks its own direction (the
loop waits for POLLOUT on it) while the other keeps flowing; a server blocked writing its stdout
while we wait to write its stdin must never deadlock.

The capture does not hold the relay up: when the capture pipe is full, the chunk goes into the
capture process's ring (tracer.stdio.ring: spliced by the kernel into a memfd of `--queue-mb`, no
copy through this process), or, for an in-process capture, is copied into memory within the budget
and fed to the pipe as it gets room (POLLOUT on it), with no other thread. Only when a whole budget
waits (a flood the capture process could not keep up with: a busy machine gave it no CPU for a
while) does the loop wait for the capture to take copies, rather than drop one, and only as long as
the capture keeps taking them: after ROOM_WAIT_NS with no byte taken it drops the copy (counted, recorded) and waits no more
until the capture takes a byte again. A stopped or dead capture costs the relay one such wait.
"""

from __future__ import annotations

import errno
import fcntl
import os
import resource
import select
import stat
import sys
import termios
import threading
import time
from collections import deque

from tracer.stdio import splice as tee_splice
from tracer.stdio.capture import INLINE_MAX, ROOM_POLL_MS, ROOM_WAIT_NS
from tracer.stdio.heap import TRIM_AFTER_BYTES
from tracer.stdio.ring import IDLE_TRIM_MS

SPIN_NS = 200_000  # covers a quick server's answer and a host's next request; see the docstring
# Spin only after chunks this small: messages going back and forth. A bigger one means a flood
# filled the pipe while we were away; then the CPU is better left to the peers producing it.
SPIN_BELOW = 64 * 1024
# Spinning pays only while a CPU is free for it. When the loop finds it was preempted several times
# within CHECK_NS (another task keeps wanting its CPU: the machine is busy, maybe with the server's
# own work) it stops spinning and sleeps in poll like any relay, for PAUSE_NS at first and twice as
# long each time the machine is still busy (up to MAX_PAUSE_NS); the first calm check resets it.
# (A single preemption now and then is normal on a quiet machine: a peer woken onto our CPU.)
CHECK_NS = 20_000_000
BUSY_PREEMPTIONS = 3
PAUSE_NS = 10_000_000
MAX_PAUSE_NS = 1_000_000_000
CHUNK = tee_splice.CHUNK
_NB = tee_splice.SPLICE_F_NONBLOCK
_POLLIN, _POLLOUT = select.POLLIN, select.POLLOUT
_FIONREAD = termios.FIONREAD


def applies(pairs: list[tuple[int, int]]) -> bool:
    """Whether every (source, destination) is a pipe and tee(2) is at hand."""
    if not tee_splice.available():
        return False
    for fd in (fd for pair in pairs for fd in pair):
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                return False
        except OSError:
            return False
    return True


def spin_default() -> int:
    """SPIN_NS when this process may run on more than one CPU, else 0 (no spinning)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return SPIN_NS if cpus > 1 else 0


def _preemptions() -> int:
    """How often this thread lost its CPU to another task (involuntary context switches)."""
    try:
        return resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
    except (AttributeError, OSError):
        return 0


class Spin:
    """When the loop keeps polling rather than sleeping: for `window` ns after a small chunk, unless
    it was preempted often lately (see CHECK_NS)."""

    __slots__ = ("check_at", "pause", "paused_until", "seen", "until", "window")

    def __init__(self, window: int):
        self.window = window
        self.until = 0
        self.paused_until = 0
        self.pause = 0  # the current pause: 0 while calm
        self.check_at = 0
        self.seen = _preemptions() if window else 0

    def after(self, now: int, chunk: int) -> None:
        """Traffic just moved (`chunk` bytes last): spin on from `now` if it pays."""
        if not self.window or chunk >= SPIN_BELOW:
            return
        if now >= self.check_at:
            self.check_at = now + CHECK_NS
            seen = _preemptions()
            if seen - self.seen >= BUSY_PREEMPTIONS:
                self.pause = min(2 * self.pause, MAX_PAUSE_NS) if self.pause else PAUSE_NS
                self.paused_until = now + self.pause
                self.until = 0
            else:
                self.pause = 0
            self.seen = seen
        if now >= self.paused_until:
            self.until = now + self.window


class Way:
    """One direction: `src` pipe -> `dst` pipe, captured as `stream`. `on_broken(offset)` is told once
    when `dst` stops taking bytes (its reader went away); `on_end()` after EOF of `src`."""

    __slots__ = ("cap", "dst", "dst_ok", "on_broken", "on_end", "spill", "src", "stream", "total")

    def __init__(self, src: int, dst: int, stream: int, *, on_broken=None, on_end=None):
        self.src, self.dst, self.stream = src, dst, stream
        self.on_broken, self.on_end = on_broken, on_end
        self.total = 0  # bytes taken from `src`
        self.dst_ok = True
        self.cap = -1  # the capture pipe of `stream`
        self.spill: deque[memoryview] = deque()  # copies waiting for room in `cap`, in stream order

    def broke(self) -> None:
        if self.dst_ok:
            self.dst_ok = False
            if self.on_broken is not None:
                self.on_broken(self.total)


_PARKED, _EOF, _SPILLED = "parked", "eof", "spilled"


def relay_ways(
    ways: list[Way],
    sink,
    *,
    caught_up: threading.Event | None = None,
    spin_ns: int | None = None,
    chunk: int = CHUNK,
    room_wait_ns: int = ROOM_WAIT_NS,
) -> None:
    """Relay every way until each source reaches EOF and every copy is in its capture pipe. `sink`
    is a CaptureSink or a CaptureProcess. `caught_up` is set while no copy waits in memory (the
    capture has every byte relayed so far, or knows it dropped it). `room_wait_ns`: how long a
    budget behind the loop waits for the capture to take a byte before it drops a copy (0: never)."""
    spin_ns = spin_default() if spin_ns is None else spin_ns
    poller = select.poll()
    readers = {w.src: w for w in ways}
    writers = {w.dst: w for w in ways}
    for w in ways:
        w.cap = sink.cap_fd(w.stream)
        poller.register(w.src, _POLLIN)
    feeders = {w.cap: w for w in ways}
    step = _Step(sink, chunk, caught_up if caught_up is not None else threading.Event(), ways, room_wait_ns)
    ring = step.ring
    taken = ring.taken_fd if ring is not None else -1
    if ring is not None:  # (the capture process took bytes of the ring: room again, its pages back)
        poller.register(taken, _POLLIN)
    poll, clock = poller.poll, time.monotonic_ns
    live = len(ways)
    spin = Spin(spin_ns)
    while live or step.spilled:
        events = poll(0)
        if not events:
            if spin.until and clock() < spin.until:
                continue
            if ring is not None and ring.untrimmed and not ring.used:
                # (a flood's pages in an empty ring: given back once no copy came for a while, so an
                # idle tee holds none, while a flood's pauses do not cost it fresh pages each lap)
                events = poll(IDLE_TRIM_MS)
                if not events:
                    ring.trim(idle=True)
                    continue
            else:
                events = poll()
        for fd, revents in events:
            w = readers.get(fd)
            if w is None:
                if fd == taken:
                    step.reclaim()
                    continue
                w = writers.get(fd)
                if w is not None:  # a parked destination has room again: read its source again
                    poller.unregister(fd)
                    poller.register(w.src, _POLLIN)
                elif step.feed(feeders[fd]):  # the capture pipe took every copy waiting for it
                    poller.unregister(fd)
                continue
            state = step.take(w, revents)
            if state is _SPILLED:  # a copy waits for room in the capture pipe: watch it
                if len(w.spill) == 1:
                    poller.register(w.cap, _POLLOUT)
            elif state is _PARKED:
                poller.unregister(w.src)
                poller.register(w.dst, _POLLOUT)
            elif state is _EOF:
                poller.unregister(w.src)
                live -= 1
                if not w.spill:
                    sink.eof(w.stream)
                else:
                    step.eof_after_spill.add(w.stream)
                if w.on_end is not None:
                    w.on_end()
        if spin_ns:
            spin.after(clock(), step.last)


class _Step:
    """What the loop does with one ready way: forward a chunk, then hand the capture its copy; and
    feed the capture pipe the copies waiting for it."""

    def __init__(self, sink, chunk: int, caught_up: threading.Event, ways=(), room_wait_ns: int = 0):
        self.sink = sink
        self.ways = ways
        self.room_wait_ns = room_wait_ns
        self.stalled = False  # the capture took no byte for room_wait_ns: drop, do not wait again
        self.chunk = chunk
        self.budget = sink.budget
        self.caught_up = caught_up
        caught_up.set()
        self.spilled = 0  # bytes copied into memory, not yet in their capture pipe
        self.spilled_untrimmed = 0  # bytes copied into memory since the heap was last trimmed
        self.eof_after_spill: set[int] = set()
        self.last = 0  # the size of the last chunk taken
        # A capture process's ring (tracer.stdio.ring): copies the capture pipe has no room for go
        # there, moved by the kernel, instead of through this process's memory (`spill`).
        self.ring = getattr(sink, "ring", None) if self.budget else None

    def take(self, w: Way, revents: int = 0):
        """The source is readable: forward a chunk, then capture it. Returns _EOF, _PARKED (the
        destination is full: wait for POLLOUT on it), _SPILLED (the capture's copy waits in memory)
        or None.

        Forward first, by tee(2) into the destination (the kernel shares the pages, nothing is
        copied), and only then move the same bytes out of the source into the capture pipe: the
        peer is woken before the capture's bookkeeping, which then runs while it works. One thread
        keeps the order: an answer is only read after its request's copy was handed over."""
        t_ns = time.time_ns()
        if w.dst_ok:
            n = tee_splice.tee_once(w.src, w.dst, self.chunk)
            if n == 0:
                return _EOF  # the writer closed and the pipe is empty
            if n < 0:
                if n == -errno.EINTR:
                    return None
                if n == -errno.EAGAIN:
                    if _readable(w.src):
                        return _PARKED  # the destination is full
                    return _EOF if revents & select.POLLHUP else None  # (a spurious wake-up)
                w.broke()  # the reader went away (EPIPE): from now on, capture only
        if not w.dst_ok:
            n = min(_readable(w.src), self.chunk)
            if not n:
                return _EOF if revents & select.POLLHUP else None
        self.last = n
        w.total += n
        return self._capture(w, n, t_ns)

    def _capture(self, w: Way, n: int, t_ns: int):
        """Take the `n` bytes just forwarded out of the source, into the capture: a small chunk is
        read and sent with its note; a bigger one is moved into the capture pipe, or copied into
        memory when the pipe is full (within the budget), or else dropped, counted."""
        sink, stream = self.sink, w.stream
        if n <= INLINE_MAX:  # a message, not a flood: its copy goes with its note (CaptureProcess.inline)
            sink.inline(stream, t_ns, tee_splice.read_exactly(w.src, n))
            return None
        moved = 0
        # (copies waiting in memory for the pipe: these queue behind them; copies in the ring: while
        # it holds some, the pipe is full, and a chunk split between the two costs the capture two)
        if not w.spill and not (self.ring is not None and self.ring.used):
            try:
                moved = os.splice(w.src, w.cap, n, flags=_NB)
            except OSError:  # full (EAGAIN), or the capture is gone
                moved = 0
            if moved == n:
                sink.teed(stream, t_ns, n)
                return None
        rest = n - moved
        if self.ring is not None:
            return self._ring(w, t_ns, moved, rest)
        data = tee_splice.read_exactly(w.src, rest)
        if self.spilled + rest > self.budget and rest <= self.budget:
            self._make_room(rest)  # (a whole budget waits: let the capture take some first)
        if self.spilled + rest <= self.budget:
            sink.teed(stream, t_ns, n)  # (the last `rest` bytes follow in the capture pipe)
            if not self.spilled:
                self.caught_up.clear()
            sink.hurry()  # a flood: the capture must not wait for idle CPU now (asked again while it lasts)
            self.spilled += rest
            self.spilled_untrimmed += rest
            w.spill.append(memoryview(data))
            return _SPILLED
        if moved:
            sink.teed(stream, t_ns, moved)
        sink.gap(
            stream, rest, tee_splice.count_newlines(data)
        )  # over budget: the capture loses these, counted
        return None

    def _ring(self, w: Way, t_ns: int, moved: int, rest: int) -> None:
        """The capture pipe took `moved` bytes of the chunk: the `rest` goes into the ring, waiting
        for room there as `_make_room` waits (bounded); over that, it is dropped, counted."""
        sink, ring, stream = self.sink, self.ring, w.stream
        if moved:
            sink.teed(stream, t_ns, moved)
        if ring.room() < rest:
            self.reclaim()
            if ring.room() < rest and rest <= ring.size:
                self._ring_room(rest)
        if ring.room() >= rest:
            put = ring.put(w.src, rest)
            if put:
                sink.ringed(stream, t_ns, put)
                if ring.used > ring.hurry_at:  # (below: relayed first, captured on idle CPU)
                    sink.hurry()  # the capture must not wait for idle CPU now (asked again while it lasts)
                rest -= put
        if rest:
            data = tee_splice.read_exactly(w.src, rest)
            sink.gap(
                stream, rest, tee_splice.count_newlines(data)
            )  # over budget: lost to the capture, counted
        return None

    def reclaim(self) -> None:
        """Learn what the capture process took from the ring; give its pages back once it is empty."""
        ring = self.ring
        if ring.reclaim():
            self.stalled = False
            if not ring.used:
                ring.trim()

    def _ring_room(self, need: int) -> None:
        """Wait until `need` bytes fit in the ring while the capture process takes bytes from it;
        give up after `room_wait_ns` with none taken (`stalled`, as `_make_room`)."""
        if self.stalled or self.room_wait_ns <= 0:
            return
        ring, sink = self.ring, self.sink
        sink.hurry(True)  # (at once: the capture process may be on idle CPU only)
        poller = select.poll()
        poller.register(ring.taken_fd, _POLLIN)
        flush_notes = getattr(sink, "flush_notes", None)
        clock = time.monotonic_ns
        give_up = clock() + self.room_wait_ns
        while ring.room() < need:
            sink.hurry()  # (again while it waits: the capture process may have stepped back meanwhile)
            if flush_notes is not None:
                flush_notes()  # (the capture reads the ring's bytes only after their notes)
            if poller.poll(ROOM_POLL_MS) and ring.reclaim():
                self.stalled = False
                give_up = clock() + self.room_wait_ns
            elif clock() >= give_up:
                self.stalled = True
                return

    def _make_room(self, need: int) -> None:
        """Feed the waiting copies to their capture pipes, waiting for room, until `need` more bytes
        fit in the budget; give up after `room_wait_ns` with no byte taken (`stalled`: until the
        capture takes a byte again, later copies over the budget are dropped at once)."""
        if self.stalled or self.room_wait_ns <= 0:
            return
        self.sink.hurry(True)  # (at once: the capture process may be on idle CPU only)
        by_cap = {w.cap: w for w in self.ways if w.spill}
        poller = select.poll()
        for fd in by_cap:
            poller.register(fd, _POLLOUT)
        # (the notes of these copies may wait in the relay too: the capture reads a copy only after
        # its note, so they are handed over as the control pipe takes them)
        flush_notes = getattr(self.sink, "flush_notes", None)
        clock = time.monotonic_ns
        give_up = clock() + self.room_wait_ns
        while by_cap and self.spilled + need > self.budget:
            self.sink.hurry()  # (again while it waits, as `_ring_room`)
            if flush_notes is not None:
                flush_notes()
            events = poller.poll(ROOM_POLL_MS)
            if not events:
                if clock() >= give_up:
                    self.stalled = True
                    return
                continue
            before = self.spilled
            for fd, _ in events:
                if self.feed(by_cap[fd]):
                    poller.unregister(fd)
                    del by_cap[fd]
            if self.spilled < before:
                give_up = clock() + self.room_wait_ns

    def feed(self, w: Way) -> bool:
        """Write waiting copies into the capture pipe as far as it takes them; True when none wait."""
        spill = w.spill
        while spill:
            view = spill[0]
            try:
                n = os.write(w.cap, view)
            except BlockingIOError:
                return False
            except OSError:  # the capture is gone: nothing will read these
                n = len(view)
            self.stalled = False
            self.spilled -= n
            if n == len(view):
                spill.popleft()
            else:
                spill[0] = view[n:]
        # The stream's EOF goes to the capture before `caught_up` is set: the tee closes the capture
        # once it is set (and the server's stdout ended), and an EOF told after that is lost, and
        # with it the stream's unterminated last line (the trim below made that window wide).
        if w.stream in self.eof_after_spill:
            self.eof_after_spill.discard(w.stream)
            self.sink.eof(w.stream)
        if not self.spilled:
            self.caught_up.set()
            if self.spilled_untrimmed >= TRIM_AFTER_BYTES:  # a flood is over: its memory goes back
                self.spilled_untrimmed = 0
                getattr(self.sink, "trim", _no_trim)()
        return True


def _no_trim() -> None:
    """(An in-process CaptureSink: the heap is the relay's own, left to malloc's defaults.)"""


_AVAIL = bytearray(4)


def _readable(fd: int) -> int:
    """Bytes waiting in the pipe `fd` (FIONREAD)."""
    try:
        fcntl.ioctl(fd, _FIONREAD, _AVAIL)
    except OSError:
        return 0
    return int.from_bytes(_AVAIL, sys.byteorder)
