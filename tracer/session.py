"""Per-connection session state, shared by era labelling, pairing and the rules: typed state only.

One package changes a `Session`: tracer.update, called from the analyser (handshake, pending
requests and pairing, feature tracking, the HTTP and stdio updaters); everything else (rules, the
summary, the viewer, exporters) only reads it. The state types live in tracer.state, so this
module imports no code that writes them. Memory is bounded however long a session runs: every
table is a window of the newest entries (a duplicate answer, a late cancel, a reused cursor come
within seconds on real traffic), and what the rules need for the whole session is kept compactly
(legacy request ids in `UsedIds`). The pending table holds requests still awaiting an answer;
cancelled ones move out of it past tracer.update.pairing.CANCELLED_CAP (tests/tracer/state/test_bounded_state.py,
tests/bench/bench_memory.py).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from tracer.model import Analysed, Direction, Kind
from tracer.state.http import HttpState
from tracer.state.requests import PendingRequest
from tracer.state.shared import SharedFacts
from tracer.state.stdio import StdioState
from tracer.state.tables import FLOW_REQUESTS_CAP, MEMORY_CAP, BoundedMap, UsedIds
from tracer.state.tracking import Tracking

# The windows of a session's tables, in entries. Each is far beyond what a rule needs on real traffic,
# and each fills within the first ~50,000 messages of a long session: memory is flat after that.
ANSWERED_CAP = 10_000  # answered requests, for duplicate answers and cancels after the answer
CANCELLED_KEPT_CAP = 1_024  # cancelled requests moved out of `pending` that a late answer still finds

__all__ = [
    "FLOW_REQUESTS_CAP",
    "MEMORY_CAP",
    "BoundedMap",
    "DiscoverState",
    "InitState",
    "PendingRequest",
    "Session",
    "UsedIds",
    "find_pending_any_type",
]


@dataclass(slots=True)
class InitState:
    """What a legacy `initialize` handshake established."""

    request_seq: int
    request_id: Any
    requested_version: str | None
    client_caps: dict | None
    client_info: Any
    result_seq: int | None = None
    negotiated_version: str | None = None
    server_caps: dict | None = None
    server_info: Any = None
    error_seq: int | None = None
    initialized_seq: int | None = None  # notifications/initialized
    # the first client request (not ping) after the result while initialized was not yet sent (MCP407)
    early_request: PendingRequest | None = None
    modern_before: int = 0  # the session's modern requests when this initialize was sent


@dataclass(slots=True)
class DiscoverState:
    request_seq: int
    before_initialize: bool
    outcome: str | None = None  # "result" | "error"
    error_code: int | None = None
    result: dict | None = None


@dataclass(slots=True, eq=False)
class Session:
    conn: str
    transport: str = "stdio"
    first_seq: int = 0
    last_t_ns: int = 0
    messages: int = 0
    pending: dict[tuple, PendingRequest] = field(default_factory=dict)
    answered: BoundedMap = field(default_factory=lambda: BoundedMap(ANSWERED_CAP))
    used_ids: UsedIds = field(default_factory=UsedIds)
    # cancelled requests moved out of `pending` (past CANCELLED_CAP): a late answer still pairs "after
    # cancel", a repeated cancel still names a known request
    cancelled: BoundedMap = field(default_factory=lambda: BoundedMap(CANCELLED_KEPT_CAP))
    # pending cancelled requests, oldest first
    cancelling: OrderedDict[tuple, PendingRequest] = field(default_factory=OrderedDict)
    detailed: deque[PendingRequest] = field(
        default_factory=deque
    )  # the answered requests that keep their params
    init: InitState | None = None
    inits: int = 0  # legacy initialize requests sent (the first one, or a retry after a failure, counts)
    discover: DiscoverState | None = None
    modern_requests: int = 0
    legacy_messages: int = 0
    # HTTP: flow id -> (pending key, seq) of the request its POST carried, so an answer given only at
    # the HTTP level (a 4xx/5xx page, an error without id) can be paired with it (tracer.update.pairing)
    flow_requests: BoundedMap = field(default_factory=lambda: BoundedMap(FLOW_REQUESTS_CAP))
    first_c2s: Analysed | None = None
    last_kind: dict[Direction, Kind] = field(default_factory=dict)
    last_seq: dict[Direction, int] = field(default_factory=dict)
    closed: bool = False
    # capabilities, tools list, progress tokens, subscriptions, MRTR rounds... (tracer.state.tracking)
    track: Tracking = field(default_factory=Tracking)
    http: HttpState | None = None  # an HTTP connection's exchanges, Mcp-Session-Id, SSE streams
    stdio: StdioState | None = None  # a stdio connection's framing facts
    shared: SharedFacts = field(default_factory=SharedFacts)  # the analysis's (Analyser.shared)
    # HTTP: a connection the proxy could not attribute to one session (tracer.http.tracks): why
    unattributed: str | None = None

    # -- era ---------------------------------------------------------------------------------

    @property
    def legacy_version(self) -> str | None:
        init = self.init
        if init is None:
            return None
        return init.negotiated_version or init.requested_version

    @property
    def compatibility(self) -> str:
        """The session's cell in the spec's compatibility matrix (RULES.md Appendix B)."""
        init, disc = self.init, self.discover
        if self.unattributed is not None:
            return f"unknown (not attributable to one session: {self.unattributed})"
        if (
            init is not None
            and init.error_seq is not None
            and init.result_seq is None
            and self.modern_requests > init.modern_before
        ):
            return "modern (2026-07-28; the server rejected an initialize)"
        if init is not None and disc is not None and disc.before_initialize:
            how = f"probe answered with {disc.outcome}" if disc.outcome else "probe unanswered"
            ver = self.legacy_version or "unknown version"
            return f"dual-era: server/discover {how}, fell back to initialize (legacy {ver})"
        if init is not None and self.modern_requests:
            return "dual-era: modern requests and an initialize handshake on one connection"
        if init is not None:
            return f"legacy ({self.legacy_version or 'version not negotiated'})"
        if disc is not None or self.modern_requests:
            return "modern (2026-07-28)"
        if self.legacy_messages:
            return "legacy (no initialize captured)"
        return "unknown (no initialize or per-request _meta seen)"


def find_pending_any_type(session: Session, direction: Direction, idkey: tuple) -> PendingRequest | None:
    """A pending request whose id has the same text but another JSON type (`1` vs `"1"`)."""
    kind, value = idkey
    other = ("n", int(value)) if kind == "s" and value.lstrip("-").isdigit() else ("s", str(value))
    if other == idkey:
        return None
    return session.pending.get((direction, other))
