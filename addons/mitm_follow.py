"""A flow file still being written (`mcptrace view --follow x.mitm` while `mitmdump -w x.mitm` runs),
read flow by flow as it grows.

mitmdump writes each flow whole, and flushes it, when the flow ends: a tnetstring whose length
prefix (`<length>:<data><type>`) says where it ends. A flow is read once the file reaches that
point and not before, so a flow still being written is never read as a broken one; at the file's
end the reader waits, polling the file's size, as tracer.inputs.follow does for a host log.

The steps are given in the wire order the whole file's reader gives (addons.mitm_stream: a step
waits until LAG later flows are read), but for what is held when the file stops growing: after
tracer.inputs.follow.SETTLE_IDLE_S it goes out, as at the file's end (live rows cannot wait for
flows that may never come). A flow written after that with a step before one already shown (an
SSE stream that mitmdump writes when it ends, after later requests) is shown late, where it was
written; opened again, the file shows `mcptrace lint`'s order.

A flow at the file's end that is not whole yet is `torn` (its number and the bytes written of it):
the viewer says so if the file still ends there when it quits. Bytes that are no flow, a file
truncated below what was read, renamed or removed end the following, and `ended` says which in a
sentence; the rows read stay.
"""

from __future__ import annotations

import io
import os
import threading
import time
from collections.abc import Callable, Iterator

from addons.mitm_stream import FLUSH, _steps
from tracer.http.flows import replay_sorted
from tracer.inputs import FORMATS, InputError, OpenInput
from tracer.inputs.follow import POLL_S, SETTLE_IDLE_S, GrowingFile

_DIGITS = 12  # a tnetstring's length prefix has at most this many digits (mitmproxy's reader's limit)


class FollowedFlows:
    """The flows of the file at PATH as they are written (see the module's docstring); iterating
    gives mitmproxy flows, and FLUSH when what is held should go out. ON_IDLE is called whenever
    everything whole has been given (the consumer writes out what it has)."""

    def __init__(
        self,
        path: str,
        *,
        on_idle: Callable[[], None] | None = None,
        stop: threading.Event | None = None,
        poll: float = POLL_S,
    ):
        self.path = path
        # (its descriptor, and whether the file at PATH is still the one read: truncated, rotated)
        self.file = GrowingFile(path, stop=stop, poll=poll)
        self.stop = self.file.stop
        self.on_idle = on_idle
        self.poll = poll
        self.flows = 0  # flows read
        self.torn: tuple[int, int] = (0, 0)  # (its number, bytes of it written) of a last flow not whole
        self.ended: str | None = None

    @property
    def pos(self) -> int:
        return self.file.pos

    def tell(self) -> int:
        return self.file.pos

    @property
    def closed(self) -> bool:
        return self.file.closed

    def close(self) -> None:
        self.stop.set()
        self.file.close()

    def _next(self, size: int) -> bytes | None:
        """The next flow's bytes once whole (None: not whole yet, or not begun). Raises ValueError
        for bytes that cannot start a flow."""
        fd, pos = self.file.fd, self.file.pos
        head = os.pread(fd, _DIGITS + 1, pos)
        if not head:
            return None
        colon = head.find(b":")
        digits = head if colon < 0 else head[:colon]
        if not digits.isdigit():
            raise ValueError(f"no flow starts at byte {pos:,} (a tnetstring's length expected)")
        if colon < 0:
            if len(head) > _DIGITS:
                raise ValueError(f"the length of the flow at byte {pos:,} is absurdly long")
            return None  # (its length is still being written)
        end = pos + colon + 1 + int(digits) + 1
        if end > size:
            return None
        data = os.pread(fd, end - pos, pos)
        return data if len(data) == end - pos else None

    def __iter__(self) -> Iterator:
        from mitmproxy import exceptions
        from mitmproxy import io as mio

        waiting_since = 0.0
        flushed = False
        while not self.stop.is_set():
            size = os.fstat(self.file.fd).st_size
            try:
                data = self._next(size)
                got = None if data is None else list(mio.FlowReader(io.BytesIO(data)).stream())
            except (ValueError, exceptions.FlowReadException, MemoryError) as exc:
                self.broken(exc)
                return
            except Exception as exc:  # (whatever else a hostile flow trips in mitmproxy's reader)
                self.broken(f"{type(exc).__name__}: {exc}")
                return
            if got is not None:
                waiting_since = 0.0
                self.file.pos += len(data)
                self.flows += 1
                self.torn = (0, 0)
                yield from got
                continue
            why = self.file._gone()
            if why is not None:
                self.ended = why
                return
            torn = (self.flows + 1, size - self.pos) if size > self.pos else (0, 0)
            now = time.monotonic()
            if not waiting_since:
                waiting_since, flushed, self.torn = now, False, torn
                self._idle()
            elif not flushed and now - waiting_since >= SETTLE_IDLE_S:
                flushed, self.torn = True, torn
                yield FLUSH
                self._idle()
            elif torn != self.torn:  # (more of the flow being written, not whole yet: said again)
                self.torn = torn
                self._idle()
            self.stop.wait(self.poll)

    def broken(self, why: object, flow: int | None = None) -> None:
        """FLOW (the next one unless said) cannot be read: following ends, saying so (the flows
        before it stay)."""
        name = os.path.basename(self.path)
        n = self.flows + 1 if flow is None else flow
        self.ended = f"{name}: flow {n} cannot be read ({str(why)[:300]}); following stopped"

    def _idle(self) -> None:
        if self.on_idle is not None:
            self.on_idle()


def follow_flows(
    path: str,
    *,
    on_idle: Callable[[], None] | None = None,
    stop: threading.Event | None = None,
) -> tuple[OpenInput, FollowedFlows]:
    """The flow file at PATH read as it grows: the OpenInput of its records (they never end while
    it is followed) and the FollowedFlows under it (`torn`, `ended`). The .mitm format must be
    registered (tracer.cli.inputs.register_optional_inputs)."""
    try:
        flows = FollowedFlows(path, on_idle=on_idle, stop=stop)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    fmt = next(f for f in FORMATS if f.name == "mitm")
    problems: list = []  # (none: a flow that cannot be read ends the following, `ended` says so)
    steps = replay_sorted(_steps(iter(flows), path, problems, follow=True), path)

    def records():
        try:
            yield from steps
        except Exception as exc:  # (a flow the recorder cannot replay: as lint's reading says it)
            flows.broken(f"{type(exc).__name__}: {exc}", flows.flows)

    return OpenInput(path, fmt, records(), flows), flows  # type: ignore[arg-type]
