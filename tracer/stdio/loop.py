"""The stdio tee's relay of both directions in one thread, spinning briefly after each chunk (Linux).

    host stdin  ──> [loop] ──> server stdin       each chunk: tee(2) a copy into the capture's pipe,
    host stdout <── [loop] <── server stdout      note it, splice(2) it on (as tracer.stdio.splice)

Why spin: on a request/response exchange a relay's cost is mostly *waking it up* (a scheduler
wake-up on another CPU: tens of microseconds in a VM), not moving the bytes (~2 us). After a chunk
moves, the loop keeps polling both sources without sleeping for `SPIN_NS` before it blocks: the
answer to the request it just passed on, or the host's next request, usually arrives within that
window and goes on at once, so the relay adds about the cost of its system calls, not two more
wake-ups. It spins only on a machine with more than one CPU (on one it would take the time the
server needs) and only right after traffic: an idle session costs nothing.

Why one thread: two spinning threads would fight over the interpreter lock. So every destination
is non-blocking, and a full one parks its own direction (the loop waits for POLLOUT on it) while
the other keeps flowing: a server blocked writing its stdout while we wait to write its stdin must
never deadlock.

The capture side is the zero-copy relay's: the loop never reads the bytes into Python unless the
capture pipe is full. Then it copies the chunk into memory, within the capture's budget
(`--queue-mb`), and feeds the copies to the capture pipe itself as it gets room (POLLOUT on it):
no other thread, so nothing contends with the loop for the interpreter lock. Only over that budget
does a chunk go on without a copy, recorded as dropped.
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

SPIN_NS = 200_000  # covers a quick server's answer and a host's next request; see the docstring
# Spin only after chunks this small: messages going back and forth. A bigger one means a flood
# filled the pipe while we were away; then the CPU is better left to the peers producing it.
SPIN_BELOW = 64 * 1024
# Spinning pays only while a CPU is free for it. When the loop finds it was preempted (another task
# wanted its CPU: the machine is busy, maybe with the server's own work) it stops spinning for a
# while and sleeps in poll like any relay; then it tries again.
CHECK_NS = 10_000_000
PAUSE_NS = 250_000_000
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
    it was preempted lately (see CHECK_NS / PAUSE_NS)."""

    __slots__ = ("check_at", "paused_until", "seen", "until", "window")

    def __init__(self, window: int):
        self.window = window
        self.until = 0
        self.paused_until = 0
        self.check_at = 0
        self.seen = _preemptions() if window else 0

    def after(self, now: int, chunk: int) -> None:
        """Traffic just moved (`chunk` bytes last): spin on from `now` if it pays."""
        if not self.window or chunk >= SPIN_BELOW:
            return
        if now >= self.check_at:
            self.check_at = now + CHECK_NS
            seen = _preemptions()
            if seen != self.seen:
                self.seen = seen
                self.paused_until = now + PAUSE_NS
                self.until = 0
        if now >= self.paused_until:
            self.until = now + self.window


class Way:
    """One direction: `src` pipe -> `dst` pipe, captured as `stream`. `on_broken(offset)` is told once
    when `dst` stops taking bytes (its reader went away); `on_end()` after EOF of `src`."""

    __slots__ = ("cap", "dst", "dst_ok", "on_broken", "on_end", "pending", "spill", "src", "stream", "total",
                 "was_blocking")

    def __init__(self, src: int, dst: int, stream: int, *, on_broken=None, on_end=None):
        self.src, self.dst, self.stream = src, dst, stream
        self.on_broken, self.on_end = on_broken, on_end
        self.pending: int | bytes = 0  # teed bytes still in `src` (int) or copied ones (bytes) to deliver
        self.total = 0  # bytes taken from `src`
        self.dst_ok = True
        self.was_blocking = True
        self.cap = -1  # the capture pipe of `stream`
        self.spill: deque[memoryview] = deque()  # copies waiting for room in `cap`, in stream order

    def broke(self) -> None:
        if self.dst_ok:
            self.dst_ok = False
            if self.on_broken is not None:
                self.on_broken(self.total - _size(self.pending))


def _size(pending: int | bytes) -> int:
    return pending if pending.__class__ is int else len(pending)


_PARKED, _EOF, _SPILLED = "parked", "eof", "spilled"


def relay_ways(ways: list[Way], sink, *, caught_up: threading.Event | None = None, spin_ns: int | None = None,
               chunk: int = CHUNK) -> None:
    """Relay every way until each source reaches EOF and every copy is in its capture pipe. `sink`
    is a CaptureSink or a CaptureProcess. `caught_up` is set while no copy waits in memory (the
    capture has every byte relayed so far, or knows it dropped it)."""
    spin_ns = spin_default() if spin_ns is None else spin_ns
    poller = select.poll()
    readers = {w.src: w for w in ways}
    writers = {w.dst: w for w in ways}
    for w in ways:
        w.cap = sink.cap_fd(w.stream)
        w.was_blocking = os.get_blocking(w.dst)
        os.set_blocking(w.dst, False)  # a full destination must park its way, not the loop
        poller.register(w.src, _POLLIN)
    feeders = {w.cap: w for w in ways}
    step = _Step(sink, chunk, caught_up if caught_up is not None else threading.Event())
    poll, clock = poller.poll, time.monotonic_ns
    live = len(ways)
    spin = Spin(spin_ns)
    while live or step.spilled:
        events = poll(0)
        if not events:
            if spin.until and clock() < spin.until:
                continue
            events = poll()
        for fd, revents in events:
            w = readers.get(fd)
            if w is None:
                w = writers.get(fd)
                if w is not None:  # a parked destination has room again
                    if step.deliver(w) is not _PARKED:
                        poller.unregister(fd)
                        poller.register(w.src, _POLLIN)
                elif step.feed(feeders[fd]):  # the capture pipe took every copy waiting for it
                    poller.unregister(fd)
                continue
            state = step.take(w, revents)
            if state is _SPILLED:  # a copy waits for room in the capture pipe: watch it
                if len(w.spill) == 1:
                    poller.register(w.cap, _POLLOUT)
                state = step.deliver(w)
            if state is _PARKED:
                poller.unregister(w.src)
                poller.register(w.dst, _POLLOUT)
            elif state is _EOF:
                poller.unregister(w.src)
                live -= 1
                _restore(w)
                if not w.spill:
                    sink.eof(w.stream)
                else:
                    step.eof_after_spill.add(w.stream)
                if w.on_end is not None:
                    w.on_end()
        if spin_ns:
            spin.after(clock(), step.last)


def _restore(w: Way) -> None:
    try:
        os.set_blocking(w.dst, w.was_blocking)
    except OSError:
        pass


class _Step:
    """What the loop does with one ready way: take a chunk from its source, deliver what is
    pending, feed the capture pipe the copies waiting for it."""

    def __init__(self, sink, chunk: int, caught_up: threading.Event):
        self.sink = sink
        self.chunk = chunk
        self.caught_up = caught_up
        caught_up.set()
        self.budget = sink.budget
        self.spilled = 0  # bytes copied into memory, not yet in their capture pipe
        self.eof_after_spill: set[int] = set()
        self.last = 0  # the size of the last chunk taken

    def take(self, w: Way, revents: int = 0):
        """The source is readable: copy a chunk to the capture, then deliver it. Returns _EOF,
        _PARKED (the destination is full: wait for POLLOUT on it), _SPILLED (a copy was made) or None."""
        sink, stream = self.sink, w.stream
        n = -1 if w.spill else tee_splice.tee_once(w.src, w.cap, self.chunk)  # (copies queue behind copies)
        if n > 0:
            sink.teed(stream, time.time_ns(), n)  # before forwarding: causal order across streams
            self.last = n
            w.pending = n
            w.total += n
            return self.deliver(w)
        if n == 0:
            return _EOF  # the writer closed and the pipe is empty
        if n == -errno.EINTR:
            return None
        avail = self.last = _readable(w.src)  # the capture pipe is full (or gone)
        if not avail:  # (copies waiting: the tee above was not tried) empty, and no writer left?
            return _EOF if revents & select.POLLHUP else None
        if self.spilled + avail <= self.budget:
            data = os.read(w.src, min(avail, self.chunk))
            sink.teed(stream, time.time_ns(), len(data))  # (its bytes follow in the capture pipe)
            if not self.spilled:
                self.caught_up.clear()
            self.spilled += len(data)
            w.spill.append(memoryview(data))
            w.pending = data
            w.total += len(data)
            return _SPILLED
        return self._forward_uncaptured(w)  # over budget as well: the capture loses it, counted

    def deliver(self, w: Way):
        """Move what is pending to the destination; _PARKED if it is full before the end."""
        p = w.pending
        if not w.dst_ok:
            if p.__class__ is int:
                tee_splice.drain(w.src, p)
            w.pending = 0
            return None
        try:
            if p.__class__ is int:
                while p:
                    p -= os.splice(w.src, w.dst, p, flags=_NB)
            else:
                while p:
                    p = p[os.write(w.dst, p):]
        except BlockingIOError:
            w.pending = p
            return _PARKED
        except OSError:  # the reader went away: keep taking (and capturing) what comes
            w.pending = p
            w.broke()
            if p.__class__ is int:
                tee_splice.drain(w.src, p)
        w.pending = 0
        return None

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
            self.spilled -= n
            if n == len(view):
                spill.popleft()
            else:
                spill[0] = view[n:]
        if not self.spilled:
            self.caught_up.set()
        if w.stream in self.eof_after_spill:
            self.eof_after_spill.discard(w.stream)
            self.sink.eof(w.stream)
        return True

    def _forward_uncaptured(self, w: Way):
        if not w.dst_ok:
            n = tee_splice.discard(w.src, self.chunk)
        else:
            try:
                n = os.splice(w.src, w.dst, self.chunk, flags=_NB)
            except BlockingIOError:  # the destination is full: try again (with the capture) later
                return _PARKED
            except OSError:
                w.broke()
                n = tee_splice.discard(w.src, self.chunk)
        if n == 0:
            return _EOF
        self.sink.teed_dropped(w.stream, time.time_ns(), n)
        w.total += n
        return None


_AVAIL = bytearray(4)


def _readable(fd: int) -> int:
    """Bytes waiting in the pipe `fd` (FIONREAD)."""
    try:
        fcntl.ioctl(fd, _FIONREAD, _AVAIL)
    except OSError:
        return 0
    return int.from_bytes(_AVAIL, sys.byteorder)
