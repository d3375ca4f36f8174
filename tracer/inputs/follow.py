"""A host log or NDJSON file read as it grows (`mcptrace view --follow`): the format's own reader,
kept where it is at the end of the file until more is written.

The readers iterate their file line by line; `GrowingFile` is a file whose end is not an end: a
read there waits (polling the file's size) until more bytes come, so the reader, its settling and
its state (connections, guessed directions, a held answer) simply go on, and a last line still
being written waits for its newline as the lines before it did. Before each wait `on_idle` is
called, so whoever consumes the records can write out what it holds. The reading ends, as at an
end of file, when `stop` is set or when the file is no longer the one being read: truncated below
what was read (a log cleared), or its name now another file or none (a log rotated away); `ended`
then says which, in a sentence.
"""

from __future__ import annotations

import io
import os
import queue
import threading
import time
from collections.abc import Callable

from tracer.inputs import BOM, FORMATS, InputError, OpenInput, _ensure_builtin, reading
from tracer.inputs.settle import FLUSH, settle

POLL_S = 0.1  # seconds between two looks at a file that has not grown


class GrowingFile(io.RawIOBase):
    """PATH's bytes from its start, read as they are appended (see the module's docstring)."""

    def __init__(
        self,
        path: str,
        *,
        on_idle: Callable[[], None] | None = None,
        stop: threading.Event | None = None,
        poll: float = POLL_S,
    ):
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)
        st = os.fstat(self.fd)
        self._id = (st.st_dev, st.st_ino)
        self.pos = 0
        self.on_idle = on_idle
        self.stop = stop or threading.Event()
        self.poll = poll
        self.ended: str | None = None  # why the file is no longer followed (None: not ended, or stopped)

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[override]
        while True:
            n = os.readv(self.fd, [buf])
            if n:
                self.pos += n
                return n
            if self.ended is not None or self.stop.is_set():
                return 0
            why = self._gone()
            if why is not None:
                self.ended = why
                return 0
            if self.on_idle is not None:
                self.on_idle()
            self.stop.wait(self.poll)

    def _gone(self) -> str | None:
        name = os.path.basename(self.path)
        size = os.fstat(self.fd).st_size
        if size < self.pos:
            return f"{name} was truncated to {size:,} bytes after {self.pos:,} were read; following stopped"
        try:
            st = os.stat(self.path)
        except OSError:
            return f"{name} was removed or renamed (a rotated log?); following stopped"
        if (st.st_dev, st.st_ino) != self._id:
            return f"{name} is now another file (a rotated log?); following stopped"
        return None

    def tell(self) -> int:
        return self.pos

    def close(self) -> None:
        if not self.closed:
            try:
                os.close(self.fd)
            finally:
                super().close()


SETTLE_IDLE_S = 0.5  # the file has not grown for this long: what settling holds goes out (settle.FLUSH)
_END = object()


def follow_input(
    path: str,
    fmt_name: str,
    *,
    on_idle: Callable[[], None] | None = None,
    stop: threading.Event | None = None,
) -> tuple[OpenInput, GrowingFile]:
    """PATH read as FMT_NAME as it grows: the OpenInput (its records never end while the file is
    followed) and the GrowingFile under it (`ended`). The records are those of the whole file, in
    its order, but for a response held for its request (tracer.inputs.settle) when the file stops
    growing for SETTLE_IDLE_S: it goes out then, in its place, as at the file's end. ON_IDLE is
    called in the consumer's thread whenever it has every record read so far."""
    _ensure_builtin()
    fmt = next((f for f in FORMATS if f.name == fmt_name), None)
    if fmt is None:
        raise InputError(f"unknown input format {fmt_name!r}")
    stop = stop or threading.Event()
    items: queue.Queue = queue.Queue(maxsize=QUEUE_ITEMS)
    idle_since = [0.0, False]  # when the reader began to wait, whether it said FLUSH since

    def reader_idle() -> None:
        now = time.monotonic()
        if not idle_since[0]:
            idle_since[:] = [now, False]
            items.put(_IDLE)
        elif not idle_since[1] and now - idle_since[0] >= SETTLE_IDLE_S:
            idle_since[1] = True
            items.put(FLUSH)

    try:
        raw = GrowingFile(path, on_idle=reader_idle, stop=stop)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    if os.pread(raw.fd, len(BOM), 0) == BOM:  # (open_input reads past one too)
        os.lseek(raw.fd, len(BOM), os.SEEK_SET)
        raw.pos = len(BOM)
    fh = io.BufferedReader(raw, buffer_size=64 * 1024)
    records = reading(fh, path, fmt, settled=False)

    def read() -> None:
        # the reader in a thread of its own: it waits at the file's end inside a read, while the
        # consumer settles and writes out what it has (a generator cannot yield from inside a read)
        try:
            for rec in records:
                idle_since[0] = 0.0
                items.put(rec)
            items.put(_END)
        except BaseException as exc:  # InputError: said by the consumer, in its thread
            items.put(exc)

    thread = threading.Thread(target=read, name="mcptrace-follow", daemon=True)
    thread.start()

    def consumed():
        while True:
            item = items.get()
            if item is _END:
                return
            if item is _IDLE:  # (everything read before the reader began to wait has been given)
                if on_idle is not None:
                    on_idle()
                continue
            if isinstance(item, BaseException):
                raise item
            yield item
            if item is FLUSH and on_idle is not None:  # (settle has given out what it held)
                on_idle()

    def stopped() -> None:
        stop.set()
        thread.join(STOP_BOUND_S)

    out = settle(consumed()) if not fmt.exact_order else consumed()
    return OpenInput(path, fmt, out, _Closing(fh, stopped)), raw


QUEUE_ITEMS = 4096  # records read ahead of the consumer at most (memory stays bounded)
STOP_BOUND_S = 5.0
_IDLE = object()  # the reader waits at the file's end: the consumer has everything before it


class _Closing:
    """The file of a followed input, closed once its reader thread has stopped."""

    def __init__(self, fh: io.BufferedReader, stopped: Callable[[], None]):
        self._fh = fh
        self._stopped = stopped

    @property
    def closed(self) -> bool:
        return self._fh.closed

    def tell(self) -> int:
        return self._fh.raw.tell()  # (what was read; the buffer's bytes are consumed in order)

    def close(self) -> None:
        self._stopped()
        try:
            self._fh.close()
        except ValueError:  # (the reader thread, stopped, may still be in a read of it)
            pass
