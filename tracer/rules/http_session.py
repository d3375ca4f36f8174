"""MCP714, MCP720-MCP725, MCP730-MCP732: Streamable HTTP of 2025-03-26..2025-11-25: the GET
stream, `Mcp-Session-Id` sessions, and the `MCP-Protocol-Version` header after `initialize`.

HTTP rules (`fn(rec, m, session)`, see `tracer.rules.http`); the facts come from
`tracer.http.state`. A request's headers are judged on the record that carries them (the POST's
`c2s` message, or the first record of a GET/DELETE); how it was answered, on the record that
carries the response head.
"""

from __future__ import annotations

from tracer.http.headers import accept_lists, is_sse
from tracer.http.state import current, req_header, resp_header, state
from tracer.model import Analysed, Hit, Record, Severity
from tracer.protocol import L3, L4, VERSIONS, between
from tracer.rules.registry import rule

ST = "spec/2025-11-25/basic/transports.mdx"
L2_L4 = between("2025-03-26", "2025-11-25")
L3_L4 = frozenset({L3, L4})
HTTP = "http"


def _cur(rec: Record, s):
    if rec.transport != HTTP:
        return None
    return current(rec, s)


@rule(
    "MCP714",
    "get-stream-negotiation",
    Severity.ERROR,
    versions=L2_L4,
    phase="http",
    scope="http",
    spec=f"{ST}:L135-142",
)
def get_stream_negotiation(rec: Record, m: Analysed | None, s):
    """A GET to the MCP endpoint lacks `Accept: text/event-stream`, or the server answers a GET with
    something other than `text/event-stream` or `405 Method Not Allowed`.

    "The client MUST include an Accept header, listing text/event-stream"; "The server MUST either
    return Content-Type: text/event-stream in response to this HTTP GET, or else return HTTP 405".
    Example: a GET answered `200` with `application/json`.
    """
    cur = _cur(rec, s)
    if cur is None or cur.flow.method != "GET":
        return None
    f = cur.flow
    out = []
    if cur.first_of_flow and not accept_lists(req_header(f, "accept"), "text/event-stream"):
        out.append(Hit(f"the GET's Accept ({req_header(f, 'accept')!r}) does not list text/event-stream"))
    if (
        cur.head
        and f.status is not None
        and f.status != 405
        and not (200 <= f.status < 300 and is_sse(f.content_type))
    ):
        out.append(
            Hit(
                f"the GET was answered {f.status} {f.content_type or '(no Content-Type)'}; "
                "it must be text/event-stream or 405"
            )
        )
    return out


@rule(
    "MCP720",
    "session-id-characters",
    Severity.ERROR,
    versions=L2_L4,
    phase="http",
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


def _minted(s) -> tuple[str, int, int] | None:
    """(session id, seq, time) of the session the InitializeResult's answer assigned."""
    st = state(s)
    if st is None or st.session_id is None or not st.session_with_initialize:
        return None
    return st.session_id, st.session_seq, st.session_t_ns


@rule(
    "MCP721",
    "session-id-not-sent",
    Severity.ERROR,
    versions=L2_L4,
    phase="http",
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


@rule(
    "MCP722",
    "missing-session-not-400",
    Severity.WARNING,
    versions=L2_L4,
    phase="http",
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


@rule(
    "MCP723",
    "terminated-session-not-404",
    Severity.ERROR,
    versions=L2_L4,
    phase="http",
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


@rule(
    "MCP724",
    "session-reused-after-404",
    Severity.ERROR,
    versions=L2_L4,
    phase="http",
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


@rule(
    "MCP725",
    "session-id-not-on-initialize",
    Severity.WARNING,
    versions=L2_L4,
    phase="http",
    scope="http/lifecycle",
    spec=f"{ST}:L198-200",
)
def session_id_not_on_initialize(rec: Record, m: Analysed | None, s):
    """(Inferred.) The server first sends `Mcp-Session-Id` on a response that is not the answer to
    `initialize`.

    "A server ... MAY assign a session ID at initialization time, by including it in an
    MCP-Session-Id header on the HTTP response containing the InitializeResult." Example: the first
    session id appears on a `tools/list` answer.
    """
    cur = _cur(rec, s)
    st = state(s)
    if cur is None or not cur.head or st is None or st.session_seq != rec.seq or st.session_with_initialize:
        return None
    f = cur.flow
    return Hit(
        f"the first Mcp-Session-Id came with the answer to {f.rpc_method or f.method}, not to initialize"
    )


def _after_handshake(rec: Record, s) -> bool:
    init = s.init
    return init is not None and init.result_seq is not None and rec.seq > init.result_seq


@rule(
    "MCP730",
    "version-header-missing",
    Severity.ERROR,
    versions=L3_L4,
    phase="http",
    scope="http/lifecycle",
    spec=f"spec/2025-06-18/basic/transports.mdx:L242-244; {ST}:L265-267, :L274-277",
)
def version_header_missing(rec: Record, m: Analysed | None, s):
    """An HTTP request after the `initialize` handshake lacks `MCP-Protocol-Version` (the
    `initialize` POST itself is exempt).

    "If using HTTP, the client MUST include the MCP-Protocol-Version: <protocol-version> HTTP header
    on all subsequent requests to the MCP server." Example: `tools/list` POSTed without it.
    """
    cur = _cur(rec, s)
    if cur is None or not cur.first_of_flow or not _after_handshake(rec, s):
        return None
    f = cur.flow
    if f.rpc_method == "initialize" or req_header(f, "mcp-protocol-version") is not None:
        return None
    what = f"{f.rpc_method} POST" if f.rpc_method else f.method
    return Hit(f"the {what} after initialize has no MCP-Protocol-Version header")


@rule(
    "MCP731",
    "version-header-not-negotiated",
    Severity.WARNING,
    versions=L3_L4,
    phase="http",
    scope="http/lifecycle",
    spec=f"{ST}:L271-272",
)
def version_header_not_negotiated(rec: Record, m: Analysed | None, s):
    """`MCP-Protocol-Version` differs from the version negotiated at `initialize`.

    "The protocol version sent by the client SHOULD be the one negotiated during initialization."
    Example: negotiated `2025-06-18`, header `2025-11-25`.
    """
    cur = _cur(rec, s)
    if cur is None or not cur.first_of_flow or not _after_handshake(rec, s):
        return None
    got = req_header(cur.flow, "mcp-protocol-version")
    want = s.init.negotiated_version
    if got is not None and want is not None and got != want:
        return Hit(f"MCP-Protocol-Version {got!r} differs from the negotiated {want!r}")
    return None


@rule(
    "MCP732",
    "bad-version-header-served",
    Severity.ERROR,
    versions=L3_L4,
    phase="http",
    scope="http/pairing",
    spec=f"spec/2025-06-18/basic/transports.mdx:L256-257; {ST}:L279-280",
)
def bad_version_header_served(rec: Record, m: Analysed | None, s):
    """A request with an invalid `MCP-Protocol-Version` (not a protocol version at all) is answered
    with something other than 400.

    "If the server receives a request with an invalid or unsupported MCP-Protocol-Version, it MUST
    respond with 400 Bad Request." Example: `MCP-Protocol-Version: latest` answered 200.
    """
    cur = _cur(rec, s)
    if cur is None or not cur.head:
        return None
    f = cur.flow
    got = req_header(f, "mcp-protocol-version")
    if got is None or got in VERSIONS or f.status in (None, 400):
        return None
    return Hit(
        f"MCP-Protocol-Version {got!r} is not a protocol version, yet the request was answered {f.status}",
        related_seq=f.first_seq,
    )
