"""The types of a session's facts beyond the handshake (tracer.tracking reads them, tracer.update
writes them): capabilities from `server/discover`, the last `tools/list`, list pagination, progress
tokens, log level, subscriptions, MRTR rounds, elicitation ids, HTTP flows. Every table that grows
with the traffic is a `BoundedMap`, so memory stays flat on long captures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracer.model import Direction
from tracer.state.tables import FLOW_REQUESTS_CAP, BoundedMap

MISSING: Any = object()  # a member that is absent (as opposed to present with a null value)
# The window of each table below, in entries: progress tokens (active ones are a handful; a cancelled
# request's stays until 1,024 newer ones came), finished tokens, cursors, listens, MRTR rounds and
# URL elicitations. Each is used again within seconds on real traffic, and each table fills early in
# a long session, so memory stays flat (tests/tracer/state/test_bounded_state.py, tests/bench/bench_memory.py).
TRACK_CAP = 1_024


@dataclass(slots=True, eq=False)
class Round:
    """One MRTR round that ended in an `InputRequiredResult` (the server asked for input)."""

    op_seq: int  # seq of the first request of the operation
    op_t_ns: int  # when the first request was sent
    number: int  # 1 for the first request, 2 for its first retry...
    req_seq: int  # the request this round's InputRequiredResult answered
    req_idkey: tuple
    result_seq: int  # the InputRequiredResult
    method: str
    input_requests: dict | None  # the `inputRequests` map as sent (None when absent)
    state: Any  # `requestState` as sent (MISSING when absent)


@dataclass(slots=True, eq=False)
class ProgressEntry:
    req_seq: int
    dir: Direction  # who sent the request (and the token)
    flow: Any
    task: bool  # the request was task-augmented (L4): progress may outlive the response
    last: float | None = None
    last_seq: int | None = None
    done_seq: int | None = None  # the final response


@dataclass(slots=True, eq=False)
class Listen:
    """A `subscriptions/listen` request and what the server did with it."""

    seq: int
    idkey: tuple
    filter: dict | None
    flow: Any
    ack_seq: int | None = None
    ack_filter: dict | None = None
    ended_seq: int | None = None


@dataclass(slots=True, eq=False)
class ListChain:
    """The pages of one paginated list (`cursor`/`nextCursor` chain) seen so far."""

    method: str
    start_seq: int
    scope: Any  # cacheScope of the first page (MISSING when absent)
    next_cursor: str | None = None
    names: list[str] = field(default_factory=list)  # tools/list: tool names in order
    tools: dict[str, dict] = field(default_factory=dict)
    # resources/list: the resources' uris; resources/templates/list: the uriTemplates (None: too many)
    uris: set[str] | None = field(default_factory=set)


@dataclass(slots=True, eq=False)
class Tracking:
    discover_caps: dict | None = None  # capabilities of the last server/discover result
    discover_seq: int | None = None
    discover_missing_seq: int | None = None  # server/discover answered -32601
    modern_results: int = 0  # results to modern requests other than server/discover
    tools: dict[str, dict] | None = None  # name -> Tool, from the last complete tools/list
    tools_order: tuple[str, ...] | None = None
    # from the last complete resources/list and resources/templates/list (None: not seen, or too long)
    resources: frozenset[str] | None = None
    templates: tuple[str, ...] | None = None
    chains: dict[str, ListChain] = field(default_factory=dict)
    cursors: BoundedMap = field(default_factory=lambda: BoundedMap(TRACK_CAP))  # (method, cursor) -> seq
    progress: BoundedMap = field(
        default_factory=lambda: BoundedMap(TRACK_CAP)
    )  # (dir, token) -> active entry
    progress_done: BoundedMap = field(
        default_factory=lambda: BoundedMap(TRACK_CAP)
    )  # (dir, token) -> finished
    log_level: str | None = None  # legacy logging/setLevel (accepted)
    resource_subs: set[str] = field(default_factory=set)  # legacy resources/subscribe
    listens: BoundedMap = field(default_factory=lambda: BoundedMap(TRACK_CAP))  # idkey -> Listen
    rounds: BoundedMap = field(default_factory=lambda: BoundedMap(TRACK_CAP))  # retry_key -> latest Round
    # (method, requestState) -> Round
    rounds_by_state: BoundedMap = field(default_factory=lambda: BoundedMap(TRACK_CAP))
    elicitations: BoundedMap = field(
        default_factory=lambda: BoundedMap(TRACK_CAP)
    )  # URL elicitationId -> seq
    # HTTP flow -> PendingRequest it carried
    flows: BoundedMap = field(default_factory=lambda: BoundedMap(FLOW_REQUESTS_CAP))
    deprecated: set[str] = field(default_factory=set)  # MCP905: features already reported

    def tool(self, name: Any) -> dict | None:
        """The tool of that name from the last tools/list (the pages of a list still being read
        count too)."""
        if type(name) is not str:  # a peer's `name` of another type names no tool (and is no key)
            return None
        chain = self.chains.get("tools/list")
        if chain is not None and name in chain.tools:
            return chain.tools[name]
        return self.tools.get(name) if self.tools is not None else None

    def chain_for(self, method: str, cursor: Any) -> ListChain | None:
        """The chain a list request with this cursor continues, or None (a first page)."""
        if cursor is None:
            return None
        chain = self.chains.get(method)
        if chain is not None and chain.next_cursor is not None and chain.next_cursor == cursor:
            return chain
        return None
