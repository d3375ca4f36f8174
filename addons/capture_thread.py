"""The capture addon's recording thread: the work of turning flows into records (decoding
headers, connection grouping, redaction, encoding, the write) runs here, in the order the hooks
saw it, while mitmproxy's event loop only takes a snapshot of each hook's facts and forwards the
bytes. Nothing is dropped: when the thread falls behind by MAX_PENDING items (a stalled disk),
the hook waits for it, so the proxy slows down instead of losing records or growing without bound.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

MAX_PENDING = 8192  # queued hook facts; each holds at most one body or chunk mitmproxy already holds


class CaptureThread:
    def __init__(self, name: str = "mcptrace-capture", max_pending: int = MAX_PENDING) -> None:
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._max = max_pending
        self._room = threading.Event()
        self._failed = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def put(self, fn: Callable, *args) -> None:
        """Run FN(*ARGS) on the thread, after everything put before it."""
        if self._q.qsize() >= self._max:
            self._wait_for_room()
        self._q.put((fn, args))

    def _wait_for_room(self) -> None:
        while self._q.qsize() >= self._max and self._thread.is_alive():
            self._room.clear()
            self._room.wait(0.1)

    def close(self, timeout: float | None = None) -> bool:
        """Finish everything put so far, then stop. True when the thread has finished."""
        if self._thread.is_alive():
            self._q.put((None, ()))
            self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _work(self) -> None:
        get, low = self._q.get, self._max // 2
        while True:
            fn, args = get()
            if fn is None:
                return
            try:
                fn(*args)
            except Exception:  # a recording bug must not stop the recording of what follows
                if not self._failed:
                    self._failed = True
                    log.exception("mcptrace: recording an exchange failed (later failures are not logged)")
            if not self._room.is_set() and self._q.qsize() <= low:
                self._room.set()
