"""What the connections to one stateless 2026-07-28 HTTP endpoint share, looked up read-only.

That revision has no HTTP session: a client retrying an `InputRequiredResult` may send the retry on
another TCP connection than the first round (the TS SDK v2 does), and a tool list fetched on one
connection describes the server the others talk to. Those facts are kept analysis-wide, in
`Session.shared` (tracer.state.shared), by endpoint; tracer.update makes and fills them.
"""

from __future__ import annotations

from tracer.http.headers import endpoint_of
from tracer.model import Analysed, Era
from tracer.session import Session
from tracer.state.http import EndpointRounds
from tracer.state.tables import BoundedMap


def endpoint_url(m: Analysed, era: Era) -> str | None:
    """The URL M travelled to, when it is modern HTTP (the endpoint its rounds belong to)."""
    http = m.rec.http
    url = http.get("url") if http is not None and era is Era.MODERN else None
    return url if type(url) is str else None


def endpoint_fact(table: BoundedMap | None, url: str | None):
    """The entry of a shared endpoint table (tracer.state.shared) for the endpoint `url` names, or None."""
    if table is None or not url:
        return None
    return table.get(endpoint_of(url))


def endpoint_rounds(m: Analysed, s: Session, era: Era) -> EndpointRounds | None:
    """The MRTR rounds of the endpoint M travelled to, when it is modern HTTP and has opened one."""
    return endpoint_fact(s.shared.endpoint_rounds, endpoint_url(m, era))
