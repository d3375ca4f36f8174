"""MCP720-MCP725: Streamable HTTP sessions of 2025-03-26..2025-11-25 (`Mcp-Session-Id`).

HTTP rules (`fn(rec, m, session)`, see mcp70_http.py); the facts come from
`tracer.http.state`. A request's headers are judged on the record that carries them (the POST's
`c2s` message, or the first record of a GET/DELETE); how it was answered, on the record that
carries the response head.
"""

from __future__ import annotations

from tracer.catalog.registry import http_rule
from tracer.http.state import current, req_header, resp_header, state
from tracer.model import Analysed, Hit, Record, Severity
from tracer.protocol import between

ST = "spec/2025-11-25/basic/transports.mdx"

L2_L4 = between("2025-03-26", "2025-11-25")


HTTP = "http"


def _cur(rec: Record, s):
    if rec.transport != HTTP:
        return None
    return current(rec, s)


def _minted(s) -> tuple[str, int, int] | None:
    """(session id, seq, time) of the session the InitializeResult's answer assigned."""
    st = state(s)
    if st is None or st.session_id is None or not st.session_with_initialize:
        return None
    return st.session_id, st.session_seq, st.session_t_ns


@http_rule(
    "MCP720",
    "session-id-characters",
    Severity.ERROR,
    versions=L2_L4,
    scope="http/lifecycle",
    spec=f"{ST}:L203-204; spec/2025-03-26/basic/transports.mdx:L191",
)
def session_id_characters(rec: Record, m: Analysed | None, s):
    """An `Mcp-Session-Id` the server sends contains characters outside visible ASCII 0x21-0x7E.

    "The session ID MUST only contain visible ASCII characters (ranging from 0x21 to 0x7E)."
    Example: `Mcp-Session-Id: abc déf`.
    """
    cur = _cur(rec, s)
    if cur is None or not cur.head:
        return None
    sid = resp_header(cur.flow, "mcp-session-id")
    if sid is not None and (not sid or any(not 0x21 <= ord(c) <= 0x7E for c in sid)):
        return Hit(f"Mcp-Session-Id {sid[:40]!r} has characters outside visible ASCII (0x21-0x7E)")
    return None


@http_rule(
    "MCP721",
    "session-id-not-sent",
    Severity.ERROR,
    versions=L2_L4,
    scope="http/lifecycle",
    spec=f"{ST}:L206-208",
)
def session_id_not_sent(rec: Record, m: Analysed | None, s):
    """The server returned `Mcp-Session-Id` with the `InitializeResult`, but a later client request
    omits it or sends another value. (A new `initialize` without one starts a new session.)

    "If an MCP-Session-Id is returned by the server during initialization, clients ... MUST include
    it in the MCP-Session-Id header on all of their subsequent HTTP requests." Example:
    `notifications/initialized` POSTed without the header.
    """
    cur = _cur(rec, s)
    minted = _minted(s)
    if cur is None or not cur.first_of_flow or minted is None or cur.flow.t_request <= minted[2]:
        return None
    f = cur.flow
    sent = req_header(f, "mcp-session-id")
    if sent == minted[0] or (sent is None and f.rpc_method == "initialize"):
        return None
    what = f"{f.method} {f.rpc_method}" if f.rpc_method else f.method
    if sent is None:
        return Hit(
            f"the {what} request has no Mcp-Session-Id although the server assigned one (seq {minted[1]})",
            related_seq=minted[1],
        )
    return Hit(
        f"the {what} request sends Mcp-Session-Id {sent[:40]!r}, not the one assigned at seq {minted[1]}",
        related_seq=minted[1],
    )


@http_rule(
    "MCP722",
    "missing-session-not-400",
    Severity.WARNING,
    versions=L2_L4,
    scope="http/lifecycle",
    spec=f"{ST}:L209-210",
)
def missing_session_not_400(rec: Record, m: Analysed | None, s):
    """A server that uses sessions answers a request without `Mcp-Session-Id` (other than
    `initialize`) with a status other than 400.

    "Servers that require a session ID SHOULD respond to requests without an MCP-Session-Id header
    (other than initialization) with HTTP 400 Bad Request." Example: `tools/list` without the
    header, answered 200.
    """
    cur = _cur(rec, s)
    minted = _minted(s)
    if cur is None or not cur.head or minted is None or cur.flow.t_request <= minted[2]:
        return None
    f = cur.flow
    if req_header(f, "mcp-session-id") is not None or f.rpc_method == "initialize" or f.status in (None, 400):
        return None
    return Hit(
        f"a request without Mcp-Session-Id was answered {f.status}; a server that uses sessions answers 400",
        related_seq=f.first_seq,
    )


@http_rule(
    "MCP723",
    "terminated-session-not-404",
    Severity.ERROR,
    versions=L2_L4,
    scope="http/lifecycle",
    spec=f"{ST}:L211-212",
)
def terminated_session_not_404(rec: Record, m: Analysed | None, s):
    """After a session was terminated (a DELETE answered 2xx, or a 404 for it), the server answers a
    request with that session id with something other than 404.

    "The server MAY terminate the session at any time, after which it MUST respond to requests
    containing that session ID with HTTP 404 Not Found." Example: a DELETE answered 200, then a
    `tools/list` with the same id answered 200.
    """
    cur = _cur(rec, s)
    st = state(s)
    if cur is None or not cur.head or st is None:
        return None
    f = cur.flow
    sid = req_header(f, "mcp-session-id")
    ended = st.terminated.get(sid) if sid is not None else None
    # judged only for requests sent after the end (a GET stream opened before it is answered later)
    if ended is None or ended[1] >= f.t_request or f.status in (None, 404):
        return None
    return Hit(
        f"session {sid[:40]!r} was terminated (seq {ended[0]}) but this request was answered {f.status}, "
        "not 404",
        related_seq=ended[0],
    )


@http_rule(
    "MCP724",
    "session-reused-after-404",
    Severity.ERROR,
    versions=L2_L4,
    scope="http/lifecycle",
    spec=f"{ST}:L213-215",
)
def session_reused_after_404(rec: Record, m: Analysed | None, s):
    """After a 404 answered a request carrying `Mcp-Session-Id`, the client sends that session id
    again instead of a new `initialize` without one.

    "When a client receives HTTP 404 in response to a request containing an MCP-Session-Id, it MUST
    start a new session by sending a new InitializeRequest without a session ID attached." Example:
    `tools/call` with the id that just got 404.
    """
    cur = _cur(rec, s)
    st = state(s)
    if cur is None or not cur.first_of_flow or st is None:
        return None
    sid = req_header(cur.flow, "mcp-session-id")
    gone = st.not_found.get(sid) if sid is not None else None
    if gone is None or gone[1] >= cur.flow.t_request:
        return None
    return Hit(
        f"the client reuses session {sid[:40]!r} after a 404 for it (seq {gone[0]}); it must initialize anew",
        related_seq=gone[0],
    )


@http_rule(
    "MCP725",
    "session-id-not-on-initialize",
    Severity.WARNING,
    versions=L2_L4,
    scope="http/lifecycle",
    spec=f"{ST}:L198-200",
)
def session_id_not_on_initialize(rec: Record, m: Analysed | None, s):
    """(Inferred.) The server first sends `Mcp-Session-Id` on a response that is not the answer to
    `initialize`.

    "A server ... MAY assign a session ID at initialization time, by including it in an
    MCP-Session-Id header on the HTTP response containing the InitializeResult." Example: the first
    session id appears on a `tools/list` answer, or on a GET answered 400 before any initialize.
    """
    cur = _cur(rec, s)
    st = state(s)
    if cur is None or not cur.head or st is None or st.session_seq is None or st.session_with_initialize:
        return None
    f = cur.flow
    init = s.init
    if st.session_seq == rec.seq:
        if init is None or init.result_seq is None:
            # Before any initialize was answered the session's version is unknown (a GET, a 400:
            # no message says it), so the rule could not be run here at all: the initialize
            # answer reports it, once the version is known (below), whether or not it could.
            return None
        return Hit(
            f"the first Mcp-Session-Id came with the answer to {f.rpc_method or f.method}, not to initialize"
        )
    if f.rpc_method != "initialize" or st.session_seq > rec.seq:
        return None
    if init is not None and init.result_seq is not None and init.result_seq != rec.seq:
        return None  # (a later initialize: the first one's answer reported it)
    if type(f.status) is not int or not 200 <= f.status < 300:
        return None
    return Hit(
        f"the first Mcp-Session-Id came at seq {st.session_seq}, before initialize was answered, not with its answer",
        related_seq=st.session_seq,
    )
