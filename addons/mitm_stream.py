"""A mitmproxy flow file's records flow by flow, for the viewer's first screen: the records
addons.mitm_import.read gives (and its read problem, given apart: the viewer says it), without
reading the whole file first.

`mitm_import.read` collects every flow's steps and replays them sorted by time, so its first record
waits for the last flow. mitmproxy writes flows as they complete, about in the order they started,
so here each step goes out once no later flow can come before it (tracer.http.flows.WireOrder);
a client connection's close goes out once the flows read have passed its time. A flow with a step
before one already given (or one more flow on a connection already closed) raises OutOfOrder, and
the caller reads the file with `mitm_import.read` instead.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterator
from typing import IO

from tracer.capture import ReadProblem
from tracer.http.flows import CLIENT_CLOSED, OutOfOrder, Step, WireOrder, replay_sorted, step_key
from tracer.http.recorder import Exchange
from tracer.model import Record

# flows a step waits for: fewer than a HAR's entries (a flow costs mitmproxy ~0.4 ms to read, and
# the first screen waits for this many); mitmdump writes a flow when it ends, so a long one comes
# after shorter ones that started later
LAG = 256
FLUSH = object()  # among a followed file's flows (addons.mitm_follow): give every step held now


class _FollowOrder(WireOrder):
    """WireOrder for a file still being written: a step that goes before one already given (a flow
    written after the steps held were given at an idle moment) is given late, at once, in its own
    flow's order, rather than raising OutOfOrder (a followed file is never read again whole)."""

    def __init__(self, lag: int) -> None:
        super().__init__(lag)
        self.late: list[Step] = []

    def push(self, step: Step) -> None:
        try:
            super().push(step)
        except OutOfOrder:  # (raised before anything changed)
            self.late.append(step)

    def ready(self) -> Iterator[Step]:
        if self.late:
            late, self.late = sorted(self.late, key=step_key), []
            yield from late
        yield from super().ready()


def _closing(cid: str, t: int, last: int) -> Step:
    return Step(t, CLIENT_CLOSED, last, Exchange(id="", client="", method="", url="", client_id=cid))


def _steps(flows, source: str, problems: list[ReadProblem], *, follow: bool = False) -> Iterator[Step]:
    """FLOWS' steps in wire order. FOLLOW (a file still being written): a FLUSH among the flows
    gives every step held, and a step that goes before one already given is given late, at once
    (_FollowOrder), instead of raising OutOfOrder."""
    from mitmproxy import exceptions, http

    from addons.mitm_import import flow_steps

    order = _FollowOrder(LAG) if follow else WireOrder(LAG)
    closed: dict[str, tuple[int, int]] = {}  # client connection id -> (when it closed, its last flow)
    closing: list[tuple[int, str]] = []  # a heap of (when, client connection id); stale ones skipped
    gone: set[str] = set()  # connections whose close was given
    index = 0
    try:
        for f in flows:
            if f is FLUSH:  # (the file stopped growing a while: what is held goes out, as at its end)
                for cid, (t, last) in closed.items():
                    if cid not in gone:
                        gone.add(cid)
                        order.push(_closing(cid, t, last))
                yield from order.ready()
                yield from order.rest()
                continue
            index += 1
            if not isinstance(f, http.HTTPFlow):
                continue
            ex, steps, end = flow_steps(f, index)
            cid = ex.client_id
            if end and cid:
                if cid in gone and not follow:
                    raise OutOfOrder(f"flow {index} is on a client connection already closed")
                t = max(end, closed.get(cid, (0, 0))[0])
                closed[cid] = (t, index)
                heapq.heappush(closing, (t, cid))
            order.add(index, min(s.t_ns for s in steps), steps)
            floor = order.floor
            while closing and floor is not None and closing[0][0] < floor:
                t, cid = heapq.heappop(closing)
                if cid in gone or closed[cid][0] != t:
                    continue
                gone.add(cid)
                order.push(_closing(cid, t, closed[cid][1]))
            yield from order.ready()
    except exceptions.FlowReadException as exc:  # (mitm_import.read's words, after the flows before it)
        problems.append(
            ReadProblem(source, index + 1, f"cannot read flow {index + 1}: {exc or type(exc).__name__}")
        )
    for cid, (t, last) in closed.items():
        if cid not in gone:
            order.push(_closing(cid, t, last))
    yield from order.ready()  # (a followed file's late steps; otherwise the heap's order, as rest's)
    yield from order.rest()


def stream(fh: IO[bytes], source: str, problems: list[ReadProblem] | None = None) -> Iterator[Record]:
    """The records `mitm_import.read` gives for FH, as flows are read; its read problem goes to
    PROBLEMS. Raises OutOfOrder (maybe after some records) when the file needs `mitm_import.read`."""
    from mitmproxy import io

    flows = io.FlowReader(fh).stream()
    yield from replay_sorted(_steps(flows, source, problems if problems is not None else []), source)


# -- the end of a flow file read ahead of its conversion (`G` at once, see tracer.inputs.tail) -------

TAIL_FLOWS = 64  # flows read ahead (a few screens of rows; mitmproxy reads ~2,000 flows/s here)
_PREFIX = 24  # bytes enough for a tnetstring's length prefix ("<digits>:")


# Top-level records the read-ahead walks at most (about 1 us each here): a real flow is kilobytes,
# so this is gigabytes of flows; a file of millions of 3-byte records costs a bounded second, not minutes.
_WALK_MAX = 1_000_000


def _last_flows(fh: IO[bytes], size: int, flows: int) -> tuple[int, int] | None:
    """(start, end) of the last FLOWS whole top-level tnetstrings: each is `<length>:<data><type>`,
    so the file is walked by its length prefixes, nothing decoded (a damaged prefix ends the walk:
    the flows before it are the ones read ahead)."""
    import os

    starts: deque[int] = deque(maxlen=flows)
    pos = end = 0
    fd = fh.fileno()
    for _ in range(_WALK_MAX):
        if pos >= size:
            break
        head = os.pread(fd, _PREFIX, pos)  # (no buffered read: a buffer's worth a flow would be read)
        colon = head.find(b":")
        if colon <= 0 or not head[:colon].isdigit():
            break
        nxt = pos + colon + 1 + int(head[:colon]) + 1
        if nxt > size:
            break
        starts.append(pos)
        pos = end = nxt
    else:  # (a file of tiny records, hostile or not: G waits for the conversion, as without a read-ahead)
        return None
    return (starts[0], end) if starts else None


def read_tail(path: str, *, flows: int = TAIL_FLOWS) -> list[bytes] | None:
    """Capture lines (seq 0, no flow number) of the last flows of PATH, replayed among themselves as
    `mitm_import.read` replays them all; None when there are none. Provisional: what the flows
    before them decide (seq, numbers, connection names) is pending."""
    import io
    import os

    from addons.mitm_import import read
    from tracer.capture import ReadProblem
    from tracer.inputs.lazy import record_line

    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            span = _last_flows(fh, size, flows)
            if span is None:
                return None
            fh.seek(span[0])
            data = fh.read(span[1] - span[0])
        lines = []
        for rec in read(io.BytesIO(data), path):
            if isinstance(rec, ReadProblem):
                continue
            rec.seq = 0
            rec.line = 0
            lines.append(record_line(rec))
    except Exception:  # (mitm_import.read reads the file, or says why; this is a preview only)
        return None
    return lines or None
