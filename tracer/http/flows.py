"""Offline HTTP: put the exchanges of a flow file or a HAR back in wire order and through the
HTTP door's recorder, so they give the same records as a live capture."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from tracer.http.recorder import Exchange, HttpRecorder
from tracer.model import Record

REQUEST, HEAD, CHUNK, END, FAILED, CLIENT_CLOSED = 0, 1, 2, 3, 4, 5


@dataclass(slots=True)
class Step:
    """One moment of a recorded exchange, for importers that read whole exchanges (a flow file, a
    HAR) and must put them back in wire order."""

    t_ns: int
    what: int  # REQUEST, HEAD, CHUNK, END, FAILED or CLIENT_CLOSED (also the tie-break at the same time)
    index: int  # the exchange's position in the file (1-based): findings point at it
    ex: Exchange
    body: bytes | None = None  # END: the response body (the rest of it after its CHUNKs); CHUNK: a part
    why: str = ""  # FAILED: what went wrong; END: how a stream ended, when not by the server finishing it
    # CLIENT_CLOSED: the client's TCP connection (`ex.client_id`) closed; its session-less
    # connections end (tracer.http.conns), so a long file is read in bounded memory


def step_key(s: Step) -> tuple[int, int, int]:
    """Where a step goes in wire order: by time, then by what it is, then by its exchange."""
    return (s.t_ns, s.what, s.index)


def replay(steps: list[Step], source: str, *, redact: bool = True):
    """Records of recorded exchanges, in wire order (sorted by time), numbered from 1."""
    return replay_sorted(sorted(steps, key=step_key), source, redact=redact)


def replay_sorted(steps: Iterable[Step], source: str, *, redact: bool = True):
    """Records of recorded exchanges whose steps come in wire order already, numbered from 1
    (a reader that streams its input sorts them as it goes: tracer.inputs.harstream)."""
    out: list[Record] = []
    recorder = HttpRecorder(out.extend, redact=redact)
    seq = 0
    for step in steps:
        ex = step.ex
        if step.what == REQUEST:
            recorder.request(ex)
        elif step.what == HEAD:
            recorder.response_headers(ex)
        elif step.what == CHUNK:
            recorder.response_part(ex, step.body or b"", step.t_ns)
        elif step.what == END:
            recorder.response(ex, step.body, step.t_ns, why=step.why)
        elif step.what == FAILED:
            recorder.failed(ex, step.why, step.t_ns)
        else:
            recorder.client_closed(ex.client_id, step.t_ns)
        for rec in out:
            seq += 1
            rec.seq = seq
            rec.line = step.index
            rec.source = source
            yield rec
        out.clear()


class OutOfOrder(Exception):
    """An exchange has a step that goes before a step already given (see WireOrder)."""


# exchanges a step waits for (browser devtools list entries as they finish, mitmdump writes flows
# as they end: a long request comes after shorter ones that started later)
LAG = 1024


class WireOrder:
    """Steps of exchanges read one by one, given in wire order as soon as no later exchange can go
    before them, for readers that stream their input (tracer.inputs.harstream, addons.mitm_stream).

    Recorders write exchanges about in the order they started, so a step goes out once it is
    earlier than the start of each of the last LAG exchanges added; an exchange added later with
    a step before one already given raises OutOfOrder (the caller then sorts the whole input, as
    `replay` does): what comes out is always `replay`'s order."""

    def __init__(self, lag: int = LAG) -> None:
        self.lag = lag
        self._held: list[tuple[tuple[int, int, int], Step]] = []  # a heap (keys are unique)
        self._last: tuple[int, int, int] | None = None  # the key of the last step given
        self._starts: deque[tuple[int, int]] = deque()  # (exchange, start) of the last LAG, rising
        self.floor: int | None = None  # no later exchange has a step before this time

    def push(self, step: Step) -> None:
        key = step_key(step)
        if self._last is not None and key < self._last:
            raise OutOfOrder(f"exchange {step.index} has a step before one already given")
        heapq.heappush(self._held, (key, step))

    def add(self, index: int, start: int, steps: Iterable[Step]) -> None:
        """Exchange INDEX (rising), which started at START (no step of it is earlier)."""
        for step in steps:
            self.push(step)
        starts = self._starts
        while starts and starts[-1][1] >= start:
            starts.pop()
        starts.append((index, start))
        if starts[0][0] <= index - self.lag:
            starts.popleft()
        self.floor = starts[0][1]

    def ready(self) -> Iterator[Step]:
        """The steps that no later exchange can go before."""
        held, floor = self._held, self.floor
        while held and floor is not None and held[0][0][0] < floor:
            self._last, step = heapq.heappop(held)
            yield step

    def rest(self) -> Iterator[Step]:
        """Every step still held (no more exchanges come)."""
        held = self._held
        while held:
            self._last, step = heapq.heappop(held)
            yield step
