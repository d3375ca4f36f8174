"""MRTR rounds shared by the connections to one stateless 2026-07-28 HTTP endpoint.

That revision has no HTTP session: a client retrying an `InputRequiredResult` may send the retry on
another TCP connection than the first round (the TS SDK v2 does), so the rounds an endpoint opened
are kept analysis-wide, in `session.extra["shared"]`, beside each connection's own
(tracer.tracking writes and reads them in its update step).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tracer.http.headers import endpoint_of
from tracer.model import Analysed, Era
from tracer.session import BoundedMap, Session

KEY = "mrtr-endpoint-rounds"
ENDPOINTS_CAP = 256  # endpoints remembered
ROUNDS_CAP = 1_024  # rounds per endpoint, as a session keeps (tracer.tracking.TRACK_CAP)


@dataclass(slots=True, eq=False)
class EndpointRounds:
    rounds: BoundedMap = field(default_factory=lambda: BoundedMap(ROUNDS_CAP))  # retry_key -> latest Round
    by_state: BoundedMap = field(default_factory=lambda: BoundedMap(ROUNDS_CAP))  # (method, state) -> Round


def endpoint_rounds(m: Analysed, s: Session, era: Era, create: bool) -> EndpointRounds | None:
    """The rounds of the endpoint M travelled to, when it is modern HTTP (else None)."""
    http = m.rec.http
    url = http.get("url") if http is not None and era is Era.MODERN else None
    return endpoint_fact(s, url if type(url) is str else None, KEY, EndpointRounds, create)


def endpoint_fact(s: Session, url: str | None, key: str, make, create: bool, cap: int = ENDPOINTS_CAP):
    """What sessions share about the endpoint `url` names, under `key` of the analyser's shared
    facts (a bounded table of endpoints): made by `make()` when `create`, else None when unknown."""
    shared = s.extra.get("shared")
    if shared is None or not url:
        return None
    table = shared.get(key)
    if table is None:
        if not create:
            return None
        table = shared[key] = BoundedMap(cap)
    where = endpoint_of(url)
    found = table.get(where)
    if found is None and create:
        found = make()
        table.put(where, found)
    return found
