"""Where the relay keeps a flood's copies for the capture process when its capture pipe is full (Linux).

    src pipe ──splice(2)──> ring (a memfd, `--queue-mb` long) ──pread──> capture process
                                      ▲                                        │
                                      └──── eventfd: bytes taken ──────────────┘

A capture pipe holds 1 MiB. Under a flood it is full most of the time, and the relay used to copy
each chunk through its own memory (read(2) into a fresh buffer, write(2) into the pipe once it had
room): the same two copies and page faults per byte as a bare read/write relay, which is why the
default relay ran at that relay's floor (perf of a 100 MB flood: read, write and their page faults
were ~80% of the relay thread's CPU). Here the chunk is spliced from the source pipe into a memfd:
one copy made by the kernel into pages the ring keeps from one lap to the next, no buffer in
Python, nothing written back. The capture process reads it from there, as it would have read it from
the pipe, and tells what it took on an eventfd.

Positions are implicit: the relay writes the ring in order and the capture process reads it in the
order of the notes (tracer.stdio.capture_child: a _RING note is "the next n bytes of the ring"), so
both keep the same offset without sending it. The relay reuses bytes only once the capture process
said it took them. When the ring drains after a flood its pages go back to the system (`trim`).

The ring is longer than the capture process's queue (`ring_size`: FLOOD_FACTOR x `--queue-mb`): a
memfd holds pages only where bytes were written, so its length costs nothing until a flood needs
it, and the relay loop gives every page back once the ring has been empty for IDLE_TRIM_MS. Why
longer: 100 MB each way are 200 MB of copies; with a 64 MB ring and a 64 MB queue the relay waited
for the capture process for the rest and went at its pace (0.33-0.36x `cat`). A flood then waits
here, in the kernel's page cache, while the capture catches up, and the relay goes at its own.
"""

from __future__ import annotations

import os

from tracer.stdio.heap import TRIM_AFTER_BYTES

MIN_SIZE = 1024 * 1024  # (a smaller budget: no ring; the relay keeps its copies as before)
FLOOD_FACTOR = 4  # the ring's length, in capture budgets (`--queue-mb`)
MEM_SHARE = 32  # ...and at most this share of the memory available when the tee starts (ten tees flooding
# at once: under a third of it)
IDLE_TRIM_MS = 100  # an empty ring that got no copy for this long gives its pages back
# The relay hurries the capture process (normal scheduling: tracer.stdio.priority) only once more
# than 1/HURRY_SHARE of the ring waits for it, or when it must wait for room. Below that the
# capture stays on idle CPU: a flood that fits is relayed first, at the relay's own speed, and
# captured just after (the session's end hurries it); hurried from the first copy, as before, it
# took its share of the CPUs from the relay, the server and the host while they relayed.
HURRY_SHARE = 2


def ring_size(budget: int) -> int:
    """The ring's length for a capture budget: FLOOD_FACTOR budgets, within 1/MEM_SHARE of the
    memory available now (never below one budget, the length it had before)."""
    size = FLOOD_FACTOR * budget
    try:
        with open("/proc/meminfo", "rb") as fh:
            for line in fh:
                if line.startswith(b"MemAvailable:"):
                    size = min(size, int(line.split()[1]) * 1024 // MEM_SHARE)
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(budget, size)


class Ring:
    """The relay's side: `put` moves bytes from a pipe into the ring; `reclaim` learns what the
    capture process took. One thread (the relay loop) uses it."""

    __slots__ = ("fd", "head", "hurry_at", "size", "taken_fd", "untrimmed", "used")

    def __init__(self, fd: int, taken_fd: int, size: int):
        self.fd, self.taken_fd, self.size = fd, taken_fd, size
        self.head = 0  # where the next byte goes
        self.used = 0  # bytes put and not yet taken by the capture process
        self.untrimmed = 0  # bytes put since the pages were last given back
        self.hurry_at = size // HURRY_SHARE  # more bytes than this waiting: the capture is hurried

    @classmethod
    def create(cls, size: int) -> Ring | None:
        """A ring of `size` bytes, or None where memfd/eventfd are missing or the budget is tiny."""
        if size < MIN_SIZE or not hasattr(os, "memfd_create") or not hasattr(os, "eventfd"):
            return None
        try:
            fd = os.memfd_create("mcptrace-capture-ring")
        except OSError:
            return None
        try:
            os.ftruncate(fd, size)
            taken = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        except OSError:
            os.close(fd)
            return None
        return cls(fd, taken, size)

    def room(self) -> int:
        return self.size - self.used

    def reclaim(self) -> int:
        """Bytes the capture process took since the last call (they may be written again)."""
        try:
            n = os.eventfd_read(self.taken_fd)
        except (BlockingIOError, OSError):
            return 0
        self.used -= n
        return n

    def put(self, src: int, n: int) -> int:
        """Move `n` bytes waiting in the pipe `src` into the ring (the caller checked the room).
        Returns how many moved: fewer only if splice(2) failed (the rest is still in `src`)."""
        done = 0
        while done < n:
            at = self.head
            want = min(n - done, self.size - at)  # (up to the end; the rest from the start)
            try:
                got = os.splice(src, self.fd, want, offset_dst=at)
            except OSError:
                got = 0
            if got <= 0:
                break
            done += got
            self.head = (at + got) % self.size
        self.used += done
        self.untrimmed += done
        return done

    def trim(self, idle: bool = False) -> None:
        """Give the ring's pages back once it is empty after a flood (it keeps them between laps of a
        flood); `idle`: the flood is over (no copy for IDLE_TRIM_MS), whatever it left."""
        if self.used or not self.untrimmed or (self.untrimmed < TRIM_AFTER_BYTES and not idle):
            return
        self.untrimmed = 0
        try:
            os.ftruncate(self.fd, 0)
            os.ftruncate(self.fd, self.size)
        except OSError:
            pass


class RingReader:
    """The capture process's side: the next `n` bytes of the ring, in note order."""

    __slots__ = ("fd", "size", "tail", "taken_fd")

    def __init__(self, fd: int, taken_fd: int, size: int):
        self.fd, self.taken_fd, self.size = fd, taken_fd, size
        self.tail = 0

    def take(self, n: int) -> bytes:
        at = self.tail
        first = min(n, self.size - at)
        data = os.pread(self.fd, first, at)
        if first < n:
            data += os.pread(self.fd, n - first, 0)
        self.tail = (at + n) % self.size
        try:
            os.eventfd_write(self.taken_fd, n)  # (read: the relay may write these bytes again)
        except OSError:
            pass  # the relay is gone: nothing will be put any more
        return data
