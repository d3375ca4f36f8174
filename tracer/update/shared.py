"""Making the analysis-wide facts of stateless HTTP endpoints (tracer.state.shared) on first use."""

from __future__ import annotations

from collections.abc import Callable

from tracer.http.endpoint_rounds import endpoint_url
from tracer.http.headers import endpoint_of
from tracer.model import Analysed, Era
from tracer.session import Session
from tracer.state.http import ENDPOINTS_CAP, ROUND_ENDPOINTS_CAP, EndpointFacts, EndpointRounds
from tracer.state.shared import SharedFacts
from tracer.state.tables import BoundedMap


def _entry[T](table: BoundedMap, url: str, make: Callable[[], T]) -> T:
    where = endpoint_of(url)
    found = table.get(where)
    if found is None:
        found = make()
        table.put(where, found)
    return found


def endpoint_facts_of(shared: SharedFacts, url: str | None) -> EndpointFacts | None:
    """The facts every connection to the endpoint `url` names shares, made when first needed."""
    if not url:
        return None
    if shared.endpoints is None:
        shared.endpoints = BoundedMap(ENDPOINTS_CAP)
    return _entry(shared.endpoints, url, EndpointFacts)


def endpoint_rounds_of(m: Analysed, s: Session, era: Era) -> EndpointRounds | None:
    """The MRTR rounds of the modern HTTP endpoint M travelled to, made when first needed."""
    url = endpoint_url(m, era)
    if not url:
        return None
    shared = s.shared
    if shared.endpoint_rounds is None:
        shared.endpoint_rounds = BoundedMap(ROUND_ENDPOINTS_CAP)
    return _entry(shared.endpoint_rounds, url, EndpointRounds)
