"""Per-connection session state, shared by era labelling, pairing and the rules.

The analyser owns one `Session` per connection id and is the only writer; rules get it as a
read-only view. Memory is bounded however long a session runs: every table is a window of the
newest entries (a duplicate answer, a late cancel, a reused cursor come within seconds on real
traffic), and what the rules need for the whole session is kept compactly (legacy request ids in
`UsedIds`). The pending table holds requests still awaiting an answer; cancelled ones move out of
it past CANCELLED_CAP (tests/test_bounded_state.py, tests/bench/bench_memory.py).
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from tracer.model import Analysed, Direction, Era, Kind

MEMORY_CAP = 50_000  # the default window of a BoundedMap
FLOW_REQUESTS_CAP = 2_048  # HTTP exchanges whose request a session remembers (as tracer.http.state)
# The windows of a session's tables, in entries. Each is far beyond what a rule needs on real traffic,
# and each fills within the first ~50,000 messages of a long session: memory is flat after that.
ANSWERED_CAP = 10_000  # answered requests, for duplicate answers and cancels after the answer
DETAIL_CAP = 1_024  # of those, the newest keep their params (the rules judge a duplicate answer by them)
CANCELLED_CAP = 256  # cancelled requests that stay pending (rules scan them); older ones: `Session.cancelled`
CANCELLED_KEPT_CAP = 1_024  # and of those, how many a late answer still finds
USED_IDS_CAP = 10_000  # legacy request ids remembered with their request (older ones: UsedIds.ranges)
OLD_STRING_IDS_CAP = 200_000  # older legacy string ids, as 64-bit digests
ID_RANGES_CAP = 10_000  # runs of older legacy integer ids (a counting client needs one)


class BoundedMap(OrderedDict):
    """An insertion-ordered dict that forgets its oldest entries past `cap`."""

    def __init__(self, cap: int = MEMORY_CAP):
        super().__init__()
        self.cap = cap

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        if len(self) > self.cap:
            self.popitem(last=False)


class UsedIds:
    """The request ids of a legacy session (which must never be reused), by (direction, id key):
    the newest USED_IDS_CAP with their `PendingRequest` (a reuse names the earlier request's seq),
    older ones compactly: integer ids as runs of consecutive values per direction (a client that
    counts its ids needs one run however long the session), string ids as 64-bit digests. A reuse
    of an older id is still found; its earlier request is then unknown (`get` returns None)."""

    __slots__ = ("cap", "ranges", "recent", "strings")

    def __init__(self, cap: int | None = None):
        self.cap = cap if cap is not None else USED_IDS_CAP
        self.recent: OrderedDict = OrderedDict()  # key -> PendingRequest
        self.ranges: dict[Any, tuple[list[int], list[int]]] = {}  # direction -> (starts, ends), sorted
        self.strings: BoundedMap = BoundedMap(OLD_STRING_IDS_CAP)  # (direction, digest) -> None

    def __len__(self) -> int:
        return len(self.recent)

    def __contains__(self, key: tuple) -> bool:
        return key in self.recent or self.seen_before(key)

    def __getitem__(self, key: tuple) -> PendingRequest:
        return self.recent[key]

    def get(self, key: tuple, default: Any = None) -> Any:
        return self.recent.get(key, default)

    def put(self, key: tuple, req: PendingRequest) -> None:
        recent = self.recent
        recent[key] = req
        if len(recent) > self.cap:
            self._compact(*recent.popitem(last=False))

    def seen_before(self, key: tuple) -> bool:
        """Whether KEY is among the ids compacted out of the recent window."""
        direction, (kind, value) = key
        if kind == "n" and type(value) is int:
            runs = self.ranges.get(direction)
            if runs is None:
                return False
            i = bisect_right(runs[0], value) - 1
            return i >= 0 and value <= runs[1][i]
        return (direction, _digest(value)) in self.strings

    def _compact(self, key: tuple, req: Any) -> None:
        direction, (kind, value) = key
        if kind != "n" or type(value) is not int:
            self.strings.put((direction, _digest(value)), None)
            return
        starts, ends = self.ranges.setdefault(direction, ([], []))
        i = bisect_right(starts, value) - 1
        if i >= 0 and starts[i] <= value <= ends[i]:
            return
        if i >= 0 and ends[i] == value - 1:  # extends the run before it (the common case: counting up)
            ends[i] = value
            if i + 1 < len(starts) and starts[i + 1] == value + 1:  # and joins the next one
                ends[i] = ends.pop(i + 1)
                starts.pop(i + 1)
        elif i + 1 < len(starts) and starts[i + 1] == value + 1:
            starts[i + 1] = value
        else:
            starts.insert(i + 1, value)
            ends.insert(i + 1, value)
            if len(starts) > ID_RANGES_CAP:  # ids scattered beyond reason: the lowest runs are forgotten
                del starts[0], ends[0]


def _digest(value: Any) -> int:
    import hashlib

    return int.from_bytes(
        hashlib.blake2b(repr(value).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    )


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
    answered: BoundedMap = field(default_factory=lambda: BoundedMap(ANSWERED_CAP))
    used_ids: UsedIds = field(default_factory=UsedIds)
    # cancelled requests moved out of `pending` (past CANCELLED_CAP): a late answer still pairs "after
    # cancel", a repeated cancel still names a known request
    cancelled: BoundedMap = field(default_factory=lambda: BoundedMap(CANCELLED_KEPT_CAP))
    cancelling: OrderedDict = field(default_factory=OrderedDict)  # pending cancelled requests, oldest first
    detailed: deque = field(default_factory=deque)  # the answered requests that keep their params
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

    # -- bounded tables (the analyser's update step is their one writer) -----------------------

    def remember_answered(self, key: tuple, req: PendingRequest) -> None:
        """REQ (KEY) left the pending table answered: remember it for duplicate answers and late
        cancels. Past DETAIL_CAP newer answers its params are dropped (and its message, if any)."""
        answered = self.answered
        answered[key] = req
        if len(answered) > answered.cap:
            answered.popitem(last=False)
        req.msg = None
        detailed = self.detailed
        detailed.append(req)
        if len(detailed) > DETAIL_CAP:
            detailed.popleft().params = None
        if self.cancelling and req.cancelled_seq is not None and self.cancelling.get(key) is req:
            del self.cancelling[key]

    def note_cancelled(self, key: tuple, req: PendingRequest) -> None:
        """REQ (KEY), still pending, was cancelled by its sender. Past CANCELLED_CAP such requests
        the oldest moves out of the pending table (without its message and params): the receiver
        SHOULD NOT answer it, and it no longer costs the rules that scan pending requests."""
        cancelling = self.cancelling
        cancelling[key] = req
        if len(cancelling) <= CANCELLED_CAP:
            return
        old_key, old = cancelling.popitem(last=False)
        if self.pending.get(old_key) is old:
            del self.pending[old_key]
            old.msg = None
            old.params = None
            self.cancelled.put(old_key, old)

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
