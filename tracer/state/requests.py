"""A request as the session remembers it: pending until answered, then a while after (duplicate
answers, late cancels, MRTR retries name it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracer.model import Analysed, Direction, Era, Kind
from tracer.state.tracking import Round


@dataclass(slots=True, eq=False)
class PendingRequest:
    """A request seen on the wire, until (and a while after) it is answered."""

    seq: int
    line: int
    source: str
    t_ns: int
    dir: Direction  # who sent the request
    idkey: tuple
    id: Any
    method: str
    era: Era
    version: str | None
    params: dict | None
    msg: Analysed | None = None  # while pending, so the request can learn its partner
    cancelled_seq: int | None = None
    cancelled_t_ns: int | None = None
    # a cancel naming it may be on a connection not attributable to one session (tracer.http.tracks)
    maybe_cancelled: bool = False
    response_seq: int | None = None
    response_t_ns: int | None = None
    response_kind: Kind | None = None
    op_seq: int | None = None  # MRTR: first round of the operation
    retry_of: Round | None = None  # MRTR: the round this request retries (set by pairing)

    @property
    def meta(self) -> dict | None:
        p = self.params
        if p is not None:
            m = p.get("_meta")
            if type(m) is dict:
                return m
        return None
