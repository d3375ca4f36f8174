"""Per-connection session state, shared by era labelling, pairing and the rules.

The analyser owns one `Session` per connection id and is the only writer; rules get it as a
read-only view. Memory is bounded apart from the table of pending requests: the sets kept for
duplicate detection are capped (oldest entries are forgotten first).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from tracer.model import Analysed, Direction, Era, Kind

# How many answered requests / used ids a session remembers for duplicate and reuse checks.
MEMORY_CAP = 50_000
FLOW_REQUESTS_CAP = 10_000  # HTTP exchanges whose request a session remembers (as tracer.http.state)


class BoundedMap(OrderedDict):
    """An insertion-ordered dict that forgets its oldest entries past `cap`."""

    def __init__(self, cap: int = MEMORY_CAP):
        super().__init__()
        self.cap = cap

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        if len(self) > self.cap:
            self.popitem(last=False)


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
    response_seq: int | None = None
    response_t_ns: int | None = None
    response_kind: Kind | None = None
    op_seq: int | None = None  # MRTR: first round of the operation
    retry_of: Any = None  # MRTR: the tracer.tracking.Round this request retries (set by pairing)

    @property
    def meta(self) -> dict | None:
        p = self.params
        if p is not None:
            m = p.get("_meta")
            if type(m) is dict:
                return m
        return None


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
    error_code: Any = None
    result: dict | None = None


@dataclass(slots=True, eq=False)
class Session:
    conn: str
    transport: str = "stdio"
    first_seq: int = 0
    last_t_ns: int = 0
    messages: int = 0
    pending: dict[tuple, PendingRequest] = field(default_factory=dict)
    answered: BoundedMap = field(default_factory=BoundedMap)
    used_ids: BoundedMap = field(default_factory=BoundedMap)
    init: InitState | None = None
    inits: int = 0
    discover: DiscoverState | None = None
    modern_requests: int = 0
    legacy_messages: int = 0
    # HTTP: flow id -> (pending key, seq) of the request its POST carried, so an answer given only at
    # the HTTP level (a 4xx/5xx page, an error without id) can be paired with it (tracer.pairing)
    flow_requests: BoundedMap = field(default_factory=lambda: BoundedMap(FLOW_REQUESTS_CAP))
    first_c2s: Analysed | None = None
    last_kind: dict[Direction, Kind] = field(default_factory=dict)
    last_seq: dict[Direction, int] = field(default_factory=dict)
    closed: bool = False
    # negotiated facts for the rules of later issues (capabilities, tools list, progress tokens...)
    extra: dict[str, Any] = field(default_factory=dict)
    # capabilities, tools list, progress tokens, subscriptions, MRTR rounds... (tracer.tracking)
    track: Any = field(default_factory=lambda: _new_tracking())

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
        if (init is not None and init.error_seq is not None and init.result_seq is None
                and self.modern_requests > init.modern_before):
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


def _new_tracking() -> Any:
    from tracer.tracking import Tracking  # tracking builds on this module

    return Tracking()


def find_pending_any_type(session: Session, direction: Direction, idkey: tuple) -> PendingRequest | None:
    """A pending request whose id has the same text but another JSON type (`1` vs `"1"`)."""
    kind, value = idkey
    other = ("n", int(value)) if kind == "s" and value.lstrip("-").isdigit() else ("s", str(value))
    if other == idkey:
        return None
    return session.pending.get((direction, other))
