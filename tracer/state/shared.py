"""What the sessions of one analysis share (`Analyser.shared`, the same object in every
`Session.shared`): facts a connection cannot know alone.

Streamable HTTP 2026-07-28 has no session, so the connections to one stateless endpoint share its
tool list, deprecations and request ids (`endpoints`) and its MRTR rounds (`endpoint_rounds`: a
retry may come on another TCP connection); a stdio client that probes a sibling process with
`server/discover` leaves that probe for the next connection (`sibling_probe`). The tables are
made on first use (tracer.update), so an analysis that never needed one has none
(tracer.parallel routes by that).
"""

from __future__ import annotations

from dataclasses import dataclass

from tracer.state.stdio import Probe
from tracer.state.tables import BoundedMap


@dataclass(slots=True, eq=False)
class SharedFacts:
    endpoints: BoundedMap | None = None  # endpoint -> tracer.state.http.EndpointFacts
    endpoint_rounds: BoundedMap | None = None  # endpoint -> EndpointRounds (tracer.state.http)
    sibling_probe: Probe | None = None  # the newest stdio connection that opened with a probe

    def has_endpoint_facts(self) -> bool:
        """Whether any connection shared HTTP endpoint facts (only the worker that has every HTTP
        connection may hold them, tracer.parallel)."""
        return self.endpoints is not None or self.endpoint_rounds is not None
