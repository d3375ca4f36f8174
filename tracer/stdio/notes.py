"""The tee's own lines on stderr, kept out of the middle of the server's stderr lines.

In tee mode stdout carries only relayed bytes, so everything mcptrace says goes to stderr, where
the server's stderr is relayed too (a host usually logs it). A note is written only when the
relayed stderr stands at a line start; otherwise it waits for the server's next newline (or the end
of the session), so the server's stderr lines reach the host unchanged and whole.
"""

from __future__ import annotations

import os
import threading
from collections import deque

from tracer.model import Finding


def write_all(fd: int, data: bytes | memoryview) -> None:
    """os.write until everything is written (a pipe may take a large buffer in parts)."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


class Notes:
    def __init__(self, fd: int = 2, *, limit: int = 20, quiet: bool = False, capture: str = ""):
        self.fd = fd
        self.limit = limit
        self.quiet = quiet
        self.capture = capture
        self._lock = threading.Lock()  # held while bytes go to fd: a note never splits a relayed write
        self._at_line_start = True
        self._pending: deque[bytes] = deque()
        self.shown = 0
        self.held_back = 0  # findings over the limit

    # -- the stderr relay ----------------------------------------------------------------------

    def relay(self, data: bytes) -> None:
        """Forward a chunk of the server's stderr (the stderr relay thread calls this)."""
        with self._lock:
            write_all(self.fd, data)
            self._at_line_start = data.endswith(b"\n")
            if self._at_line_start:
                self._flush_locked()

    # -- mcptrace's own lines ------------------------------------------------------------------

    def say(self, text: str, *, force: bool = False) -> None:
        """One line from mcptrace (suppressed by --quiet unless `force`: errors always show)."""
        if self.quiet and not force:
            return
        self._pending.append(f"mcptrace: {text}\n".encode("utf-8", "replace"))
        if self._lock.acquire(blocking=False):  # else the relay flushes it after its write
            try:
                if self._at_line_start:
                    self._flush_locked()
            finally:
                self._lock.release()

    def finding(self, f: Finding) -> None:
        if self.shown >= self.limit:
            self.held_back += 1
            return
        self.shown += 1
        self.say(f"{f.rule} {f.severity.label}: {f.message}")

    def close(self) -> None:
        """End of session: whatever waited for a line start is written now."""
        if self.held_back and not self.quiet:
            where = f"; see `mcptrace lint {self.capture}`" if self.capture else ""
            self._pending.append(f"mcptrace: {self.held_back} more findings not shown{where}\n".encode())
        with self._lock:
            if self._pending and not self._at_line_start:
                write_all(self.fd, b"\n")
                self._at_line_start = True
            self._flush_locked()

    def _flush_locked(self) -> None:
        pending = self._pending
        try:
            while pending:
                write_all(self.fd, pending.popleft())
        except OSError:  # stderr is gone: notes are best effort, the relay and capture go on
            pending.clear()
