"""MCP730-MCP732: the `MCP-Protocol-Version` header of legacy Streamable HTTP. HTTP rules (`fn(rec, m, session)`); the facts come from `tracer.http.state`."""

from __future__ import annotations

from tracer.catalog.registry import http_rule
from tracer.http.state import req_header
from tracer.model import Analysed, Hit, Record, Severity
from tracer.protocol import L3, L4, VERSIONS
from tracer.rules.mcp72_http_session import ST, _cur

L3_L4 = frozenset({L3, L4})


def _after_handshake(rec: Record, s) -> bool:
    init = s.init
    return init is not None and init.result_seq is not None and rec.seq > init.result_seq


@http_rule(
    "MCP730",
    "version-header-missing",
    Severity.ERROR,
    versions=L3_L4,
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


@http_rule(
    "MCP731",
    "version-header-not-negotiated",
    Severity.WARNING,
    versions=L3_L4,
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


@http_rule(
    "MCP732",
    "bad-version-header-served",
    Severity.ERROR,
    versions=L3_L4,
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
