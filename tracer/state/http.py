"""The types of what the HTTP rules (MCP7xx, MCP901-MCP904) know beyond one record: per exchange
(`FlowFacts`), per session (`HttpState`, in `Session.http`), per stateless endpoint shared by every
connection to it (`EndpointFacts`, in `Session.shared`), and what was concluded about the record
being analysed (`Current`). tracer.update.http writes them; tracer.http.state answers the rules."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from tracer.model import Era, Kind
from tracer.state.tables import BoundedMap

FLOW_CAP = 2_048  # exchanges whose facts are kept (the ones used last: each holds its headers)
RECENT_CAP = 1024  # server messages remembered to find one broadcast on two streams (MCP713)
EVENT_IDS_CAP = 4_096  # SSE event ids remembered to find one repeated on another stream (MCP715)
ENDPOINTS_CAP = 1024  # stateless endpoints whose facts an analysis keeps
LISTERS = 4  # the connections that listed an endpoint's tools last
ENDPOINT_REQUESTS_CAP = 4096  # the newest modern request ids an endpoint saw, on any connection
ROUND_ENDPOINTS_CAP = 256  # endpoints whose MRTR rounds are remembered
ROUNDS_CAP = 1_024  # rounds per endpoint, as a session keeps (tracer.state.tracking.TRACK_CAP)


@dataclass(slots=True, eq=False)
class FlowFacts:
    """One HTTP exchange as far as the records so far show it."""

    id: str
    method: str = ""
    url: str = ""
    req_headers: Any = None
    req_map: dict[str, str] = field(default_factory=dict)  # lowercased name -> first value
    first_seq: int = 0
    t_request: int = 0  # when the request was sent (a GET's first record only comes with its answer)
    body_kind: Kind | None = None  # the JSON-RPC body the client sent (None: no body)
    rpc_method: str | None = None
    idkey: tuple | None = None
    progress_token: tuple | None = None
    era: Era = Era.UNKNOWN
    header_problem: str | None = None  # modern request headers that fail validation (MCP746)
    status: int | None = None
    resp_headers: Any = None
    resp_map: dict[str, str] = field(default_factory=dict)
    content_type: str | None = None
    head_seq: int | None = None  # the record that carried the response head
    server: str | None = None  # "ip:port" the server was really reached at (the proxy's connection)
    stream: bool = False
    t_open: int = 0
    events: int = 0  # SSE events (messages, endpoint, data-less events)
    ids_seen: bool = False
    first_event: str | None = None  # "priming", "message", "endpoint", "other"
    answered_seq: int | None = None  # the final response to the request, on this flow
    t_answered: int = 0
    closed: dict | None = None  # the stream-closed event's data
    retry_seen: bool = False


@dataclass(slots=True, eq=False)
class Current:
    """What the observer concluded about the record being analysed (rules read it)."""

    seq: int = -1
    flow: FlowFacts | None = None
    head: bool = False  # this record carries the flow's response head
    first_of_flow: bool = False  # this record carries the flow's request headers
    after_answer: bool = False  # an SSE event after the flow's final response
    broadcast_seq: int | None = None  # the same message went out on another stream (MCP713)
    repeated_id_seq: int | None = None  # the SSE event id was used on another stream (MCP715)
    reconnect_gap_ms: float | None = None  # a resumption GET this long after the last close (MCP717)
    retry_ms: int | None = None


@dataclass(slots=True, eq=False)
class HttpState:
    flows: BoundedMap = field(default_factory=lambda: BoundedMap(FLOW_CAP))
    session_id: str | None = None  # the first Mcp-Session-Id the server sent
    session_seq: int | None = None
    session_t_ns: int = 0
    session_with_initialize: bool = False
    # session id -> (seq, t_ns) of the DELETE answered 2xx or the 404 that ended it / of a 404 for it
    terminated: dict[str, tuple[int, int]] = field(default_factory=dict)
    not_found: dict[str, tuple[int, int]] = field(default_factory=dict)
    endpoint: str | None = None  # HTTP+SSE: the announced POST URL
    endpoint_seq: int | None = None
    event_ids: BoundedMap = field(
        default_factory=lambda: BoundedMap(EVENT_IDS_CAP)
    )  # SSE id -> (stream, seq)
    recent: BoundedMap = field(
        default_factory=lambda: BoundedMap(RECENT_CAP)
    )  # digest -> (stream, t_ns, seq)
    retry_ms: int | None = None  # the last SSE retry the server announced
    last_close_ns: int | None = None  # when the last stream the server ended closed
    modern_rejection: tuple[int, int, int] | None = None  # (seq, status, code): MCP754
    stream_ids: bool = False  # the server attaches SSE event ids (it is resumable)
    current: Current = field(default_factory=Current)


@dataclass(slots=True, eq=False)
class EndpointFacts:
    """What every connection to one modern (stateless) endpoint shares: Streamable HTTP 2026-07-28
    has no session, so a tool list fetched on one TCP connection (or with another User-Agent)
    describes the server the others talk to, and a deprecated feature is noted once per server."""

    listers: deque = field(default_factory=lambda: deque(maxlen=LISTERS))  # Tracking, newest first
    deprecated: set[str] = field(default_factory=set)  # MCP905: features already reported
    # id key -> seq of the newest modern requests: a cancel POSTed on another TCP connection (the
    # request's own is busy streaming its answer) names one of these (MCP502)
    requests: BoundedMap = field(default_factory=lambda: BoundedMap(ENDPOINT_REQUESTS_CAP))


@dataclass(slots=True, eq=False)
class EndpointRounds:
    """The MRTR rounds one stateless 2026-07-28 endpoint opened, on any of its connections."""

    rounds: BoundedMap = field(default_factory=lambda: BoundedMap(ROUNDS_CAP))  # retry_key -> latest Round
    by_state: BoundedMap = field(default_factory=lambda: BoundedMap(ROUNDS_CAP))  # (method, state) -> Round
