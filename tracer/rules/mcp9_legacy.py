"""MCP901-MCP905: what is legacy or deprecated. The HTTP+SSE transport of 2024-11-05
(MCP901-MCP904, HTTP rules like mcp70_http.py's), and 2026-07-28 features deprecated by SEP-2577
(MCP905: Roots, Sampling, Logging, and sampling's `includeContext` `thisServer` / `allServers`),
reported once per feature and session: the analyser remembers what was already reported
(tracer.tracking.Tracking.deprecated).
"""

from __future__ import annotations

from tracer.catalog.registry import http_rule, rule
from tracer.http.state import state
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import KIND_INVALID as _KIND_INVALID
from tracer.model import Analysed, Hit, Kind, Record, Severity
from tracer.protocol import ALL, MODERN
from tracer.rules.mcp71_sse import HTTP_SSE, NOT_A_MESSAGE, SH_M, SSE_L1, _event_name
from tracer.tracking import deprecated_uses

REMOVAL = "earliest removal in the first revision on or after 2027-07-28"


@http_rule(
    "MCP901",
    "sse-first-event-not-endpoint",
    Severity.ERROR,
    versions=ALL,
    scope="http",
    spec=f"{SSE_L1}:L67-69",
)
def sse_first_event_not_endpoint(rec: Record, m: Analysed | None, s):
    """On the HTTP+SSE transport, the first event of the GET stream is not an `endpoint` event whose
    data is the URI to POST to. (Judged by transport, whatever version the session negotiated.)

    "When a client connects, the server MUST send an endpoint event containing a URI for the client
    to use for sending messages." Example: a `message` event before the `endpoint` event.
    """
    if rec.transport != HTTP_SSE or _event_name(rec) != "endpoint":
        return None
    uri = rec.data.get("uri") or ""
    if not rec.data.get("first", True):
        return Hit("the endpoint event is not the first event of the SSE stream")
    if not uri.strip() or any(c.isspace() for c in uri):
        return Hit(f"the endpoint event's data {uri!r} is not a URI")
    return None


@http_rule(
    "MCP902",
    "sse-post-elsewhere",
    Severity.ERROR,
    versions=ALL,
    scope="http",
    spec=f"{SSE_L1}:L67-69",
)
def sse_post_elsewhere(rec: Record, m: Analysed | None, s):
    """On the HTTP+SSE transport, the client sends a message other than as a POST to the URI the
    `endpoint` event announced.

    "All subsequent client messages MUST be sent as HTTP POST requests to this endpoint." Example: POST `/message` without the announced `?sessionId=...`.
    """
    if m is None or rec.transport != HTTP_SSE or rec.dir is not _DIR_C2S:
        return None
    st = state(s)
    method, url = rec.http.get("method"), rec.http.get("url")
    if method != "POST":
        return Hit(f"a message sent with HTTP {method}; HTTP+SSE clients POST to the announced endpoint")
    if st is not None and st.endpoint is not None and url != st.endpoint:
        return Hit(
            f"a message POSTed to {url}, not to the announced endpoint {st.endpoint}",
            related_seq=st.endpoint_seq,
        )
    return None


@http_rule(
    "MCP903",
    "sse-server-message-form",
    Severity.ERROR,
    versions=ALL,
    scope="http",
    spec=f"{SSE_L1}:L71-72",
)
def sse_server_message_form(rec: Record, m: Analysed | None, s):
    """On the HTTP+SSE transport, a server message is not an SSE `message` event carrying a JSON
    encoded JSON-RPC message in its data (for example it came as the body of a POST's answer, or
    as another event type).

    "Server messages are sent as SSE message events, with the message content encoded as JSON in
    the event data." Example: `event: response` + `data: {...}`.
    """
    if m is None or rec.transport != HTTP_SSE or rec.dir is not _DIR_S2C:
        return None
    if rec.sse is None:
        return Hit("a server message in the body of an HTTP answer, not as an event on the SSE stream")
    name = rec.sse.get("event")
    if name != "message":
        return Hit(f"a server message sent as an SSE {name!r} event; it must be a 'message' event")
    if m.kind is _KIND_INVALID and m.problem in NOT_A_MESSAGE:
        return Hit(f"the message event's data is not JSON-encoded JSON-RPC ({m.reason})")
    return None


@http_rule(
    "MCP904",
    "http-sse-deprecated",
    Severity.INFO,
    versions=ALL,
    scope="http",
    spec=f"{SH_M}:L695-708; spec/2026-07-28/deprecated.mdx:L31",
)
def http_sse_deprecated(rec: Record, m: Analysed | None, s):
    """The deprecated HTTP+SSE transport (2024-11-05) is in use. It is deprecated since 2025-03-26
    and eligible for removal (SEP-2596). Reported once per session, at its `endpoint` event.

    "New implementations SHOULD NOT adopt it; existing implementations SHOULD migrate to Streamable
    HTTP." Example: a GET `/sse` stream whose first event is `endpoint`.
    """
    if rec.transport != HTTP_SSE or _event_name(rec) != "endpoint":
        return None
    st = state(s)
    if st is not None and st.endpoint_seq not in (None, rec.seq):
        return None
    return Hit("the deprecated HTTP+SSE transport (2024-11-05) is in use; Streamable HTTP replaces it")


@rule(
    "MCP905",
    "deprecated-feature",
    Severity.INFO,
    kinds=(Kind.REQUEST, Kind.NOTIFICATION, Kind.RESULT),
    versions=MODERN,
    spec="spec/2026-07-28/deprecated.mdx:L24-31; spec/2026-07-28/changelog.mdx:L73-91",
)
def deprecated_feature(m: Analysed, s):
    """A feature deprecated in 2026-07-28 is in use: Roots, Sampling or Logging (SEP-2577; earliest
    removal in the first revision on or after 2027-07-28), or sampling's `includeContext`
    `"thisServer"` / `"allServers"`. Reported once per feature and session.

    Example: a modern request with `"io.modelcontextprotocol/logLevel": "info"` in `_meta`.
    """
    uses = deprecated_uses(m)
    if not uses:
        return None
    seen = set(s.track.deprecated)  # reported earlier in this session
    out = []
    for feature, path, what in uses:
        if feature in seen:
            continue
        seen.add(feature)
        out.append(Hit(f"{feature} is deprecated in 2026-07-28 ({REMOVAL}): {what}", path=path))
    return out
