"""The zero-copy relay of the stdio tee (Linux): bytes move pipe to pipe inside the kernel.

    src pipe ──tee(2)──> capture pipe   (the kernel duplicates page references, no copy; the
       │                                 capture writer thread reads its copy from there)
       └──splice(2)────> dst            (moves the same pages on: no copy through user space)

Per chunk the relay thread does poll, tee, splice and hands the capture writer a note of the
chunk's size and time (in queue order, before forwarding, so the capture keeps causal order). It
never reads the bytes into Python, so a 100 MB flood costs it a few hundred system calls.

`tee(2)` is non-blocking here: when the capture pipe is full (the writer fell that far behind) the
relay copies the chunk into the `--queue-mb` budget; a whole budget behind, it waits for the capture
as long as the capture takes bytes (bounded: tracer.stdio.loop), and only then, or with
`--drop-when-behind`, forwards the chunk all the same and records it as dropped, never silently.

Used only where it applies: Linux, the source a pipe (the server's stdout always is; the host's
stdin is when a host spawns us with pipes, not with a socket pair or a terminal), the destination
a pipe, a socket or a regular file. Everything else takes `tracer.stdio.tee.pump` (read/write).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import math
import os
import select
import stat
import sys
import time

from tracer.stdio.notes import write_all

SPLICE_F_NONBLOCK = getattr(os, "SPLICE_F_NONBLOCK", 2)
CHUNK = 1024 * 1024


def _load_tee():
    if not sys.platform.startswith("linux") or not hasattr(os, "splice"):
        return None, None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        libc_errno = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fast, checked = libc.tee, libc_errno.tee
    except (OSError, AttributeError):
        return None, None
    for fn in (fast, checked):
        # (in, out, len, flags) -> ssize_t; plain ints are passed as C ints, which is what the
        # fast one relies on: no argtypes conversion on the per-chunk path (len fits in an int).
        fn.restype = ctypes.c_ssize_t
    checked.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_size_t, ctypes.c_uint]
    return fast, checked


_tee, _tee_checked = _load_tee()


def available() -> bool:
    return _tee is not None


def tee_once(src: int, cap: int, n: int) -> int:
    """tee(2) up to `n` bytes of the pipe `src` into the pipe `cap`, non-blocking: the count, 0 at EOF,
    or -errno (-EAGAIN: `src` is empty or `cap` is full)."""
    got = _tee(src, cap, n, SPLICE_F_NONBLOCK)
    if got >= 0:
        return got
    got = _tee_checked(src, cap, n, SPLICE_F_NONBLOCK)  # again, to learn errno
    return got if got >= 0 else -ctypes.get_errno()


def _kind(fd: int) -> int:
    try:
        return os.fstat(fd).st_mode
    except OSError:
        return 0


def applies(src: int, dst: int) -> bool:
    """Whether the zero-copy relay can carry src -> dst (else the read/write pump does)."""
    if _tee is None:
        return False
    s, d = _kind(src), _kind(dst)
    return stat.S_ISFIFO(s) and (stat.S_ISFIFO(d) or stat.S_ISSOCK(d) or stat.S_ISREG(d))


class SpliceFailed(Exception):
    """splice(2) refused the destination at the first chunk. `pending` bytes were already teed to
    the capture and are still in the source: the caller forwards them by read/write, then goes on
    with `tracer.stdio.tee.pump`."""

    def __init__(self, pending: int):
        super().__init__(pending)
        self.pending = pending


def pump_spliced(src: int, dst: int, stream: int, sink, *, on_broken=None, chunk: int = CHUNK) -> int:
    """Copy the pipe `src` to `dst` until EOF without the bytes entering Python; the capture gets
    its copy through `sink.cap_fd(stream)` (tee'd) and `sink.teed(...)`. Same contract as
    `tracer.stdio.tee.pump`: returns the bytes relayed; a broken `dst` is told once to `on_broken(offset)`
    and the source is still drained (and captured) so the writer on the other side never blocks."""
    cap = sink.cap_fd(stream)
    teed, skipped, room, offer = sink.teed, sink.teed_dropped, sink.has_room, sink.offer
    wait_room = getattr(sink, "wait_room", None)  # (a capture process: it may be waited for, bounded)
    poller = select.poll()
    poller.register(src, select.POLLIN)
    wait = poller.poll
    tee, splice, now = _tee, os.splice, time.time_ns
    total = 0
    dst_ok = True
    spilling = getattr(sink, "spilling", None)
    while True:
        wait()
        if spilling is not None and spilling(stream):
            n = -1  # copies of this stream wait in memory: this one queues behind them
        else:
            n = tee(src, cap, chunk, SPLICE_F_NONBLOCK)
            if n < 0:
                n = _tee_checked(src, cap, chunk, SPLICE_F_NONBLOCK)  # again, to learn errno
                if n < 0 and ctypes.get_errno() == errno.EINTR:
                    continue
        if n == 0:
            break  # EOF: the writer closed and the pipe is empty
        if n < 0 and (room(chunk) or (wait_room is not None and wait_room(chunk))):
            # The capture pipe is full (a burst: the capture is behind): copy this chunk through
            # Python into the capture's memory budget, as `tracer.stdio.tee.pump` does, rather than lose it.
            data = os.read(src, chunk)
            if not data:
                break
            offer(stream, now(), data)
            if dst_ok:
                try:
                    write_all(dst, data)
                except OSError:
                    dst_ok = False
                    if on_broken is not None:
                        on_broken(total)
            total += len(data)
            continue
        if n < 0:
            # Over budget as well: forward without a copy; the capture loses it, counted.
            n, delivered = _forward_uncaptured(src, dst, chunk) if dst_ok else (discard(src, chunk), False)
            if n == 0:
                break
            if dst_ok and not delivered:
                dst_ok = False
                if on_broken is not None:
                    on_broken(total)
            skipped(stream, now(), n)
            total += n
            continue
        teed(stream, now(), n)  # before forwarding: the capture keeps causal order across streams
        left = n
        while dst_ok and left:
            try:
                left -= splice(src, dst, left)
            except BlockingIOError:  # a non-blocking destination we inherited: wait for room
                _wait_writable(dst)
            except OSError as exc:
                if total == 0 and left == n and exc.errno == errno.EINVAL:
                    raise SpliceFailed(n) from None
                dst_ok = False
                if on_broken is not None:
                    on_broken(total + n - left)
        if left:
            drain(src, left)
        total += n
    sink.eof(stream)
    return total


def _forward_uncaptured(src: int, dst: int, chunk: int) -> tuple[int, bool]:
    """Forward up to `chunk` bytes with no capture copy: (count, delivered). When `dst` broke the
    bytes were drained instead."""
    while True:
        try:
            return os.splice(src, dst, chunk), True
        except BlockingIOError:
            _wait_writable(dst)
        except OSError:
            return discard(src, chunk), False


def _wait_writable(fd: int) -> None:
    p = select.poll()
    p.register(fd, select.POLLOUT)
    p.poll()


def readable(fd: int, timeout_s: float) -> bool:
    """Whether FD is readable (or at its end) within TIMEOUT_S: poll, not select, which refuses a
    descriptor past 1023 (a tee started by a program that holds many files open)."""
    p = select.poll()
    p.register(fd, select.POLLIN)
    return bool(p.poll(max(0, math.ceil(timeout_s * 1000))))


def read_exactly(fd: int, n: int) -> bytes:
    """`n` bytes from the pipe `fd`, where they already wait (fewer only if it ends first)."""
    data = os.read(fd, n)
    while len(data) < n:
        more = os.read(fd, n - len(data))
        if not more:
            break
        data += more
    return data


# bytes.count of one byte is a plain loop (about 1 ms per MiB here); memchr finds a newline several
# times faster per byte, but each find is a Python call (~0.3 us): lines of kilobytes are counted by a
# find each, and once the first _PROBE_LINES show lines shorter than _FIND_ABOVE bytes, count does it.
_PROBE_LINES, _FIND_ABOVE = 64, 512


def count_newlines(data: bytes, start: int = 0) -> int:
    """`data.count(b"\n", start)`, faster where lines are long (a chunk of a flood being dropped: the
    relay says how many lines the capture lost, and counting them was most of its CPU then)."""
    find = data.find
    n = 0
    i = find(b"\n", start)
    while i >= 0:
        n += 1
        if n == _PROBE_LINES and i - start < _PROBE_LINES * _FIND_ABOVE:
            return n + data.count(b"\n", i + 1)
        i = find(b"\n", i + 1)
    return n


def discard(src: int, chunk: int) -> int:
    return len(os.read(src, chunk))


def drain(src: int, n: int) -> None:
    """Consume `n` bytes already captured but not deliverable (the reader went away)."""
    while n > 0:
        got = len(os.read(src, min(n, CHUNK)))
        if not got:
            return
        n -= got
