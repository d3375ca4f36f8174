"""Offline HTTP: put the exchanges of a flow file or a HAR back in wire order and through the
HTTP door's recorder, so they give the same records as a live capture."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tracer.http.recorder import Exchange, HttpRecorder
from tracer.model import Record

REQUEST, HEAD, END, FAILED, CLIENT_CLOSED = 0, 1, 2, 3, 4


@dataclass(slots=True)
class Step:
    """One moment of a recorded exchange, for importers that read whole exchanges (a flow file, a
    HAR) and must put them back in wire order."""

    t_ns: int
    what: int  # REQUEST, HEAD, END, FAILED or CLIENT_CLOSED (also the tie-break at the same time)
    index: int  # the exchange's position in the file (1-based): findings point at it
    ex: Exchange
    body: bytes | None = None  # END: the response body
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
