"""What the HTTP rules (MCP7xx, MCP901-MCP904) know beyond one record: read-only queries.

The HTTP door (tracer.http.recorder) writes each exchange as records sharing `http["flow"]`: the
request's `c2s` message (or, for a GET or DELETE, the first response-side record) carries the
request headers; the first response-side record (a JSON answer, a `stream-open` event, an `http`
record) carries the status and response headers; SSE events follow, then `stream-closed`.
tracer.update.http runs once per record of an HTTP connection, before the rules, and keeps its
facts in `Session.http` (types in tracer.state.http): per flow (what was asked, how it was
answered, the stream's progress) and per session (the Mcp-Session-Id, its termination, event ids,
the HTTP+SSE endpoint). The rules read them here; `current` holds what the updater concluded
about the record being analysed.
"""

from __future__ import annotations

from typing import Any

from tracer.http.endpoint_rounds import endpoint_fact
from tracer.http.headers import pairs
from tracer.model import Record
from tracer.session import Session
from tracer.state.http import Current, EndpointFacts, FlowFacts, HttpState

# Why an exchange's stream ended when its capture cannot say who ended it: mitmproxy's HAR of a body
# that never ended (tracer.inputs.har). The recorder makes it the stream's close reason
# "error: <why>" (no "client" or "server" in it: not judged); tracer.update.http reads exactly that.
UNFINISHED = "its body never ended (the HAR's writer recorded no end of it)"
UNFINISHED_REASON = f"error: {UNFINISHED}"
# stream-closed reasons that say the server ended the stream (tracer.http.sse_tee.SseTee.end)
SERVER_ENDS = ("end", "server-closed")

HTTP_TRANSPORTS = ("http", "http+sse")


def _endpoint(s: Session, url: str | None) -> EndpointFacts | None:
    return endpoint_fact(s.shared.endpoints, url)


def endpoint_tool(s: Session, facts: FlowFacts | None, name: Any) -> dict | None:
    """The tool NAME as a modern request over HTTP may rely on: from the newest complete
    `tools/list` any connection got from the same endpoint, else from this session's own."""
    ep = _endpoint(s, facts.url if facts is not None else None)
    for track in ep.listers if ep is not None else ():
        if track.tools is not None or "tools/list" in track.chains:
            return track.tool(name)
    return s.track.tool(name)


def endpoint_request(s: Session, rec: Record, idkey: tuple) -> int | None:
    """The seq of a recent modern request with id IDKEY sent to REC's endpoint on any connection."""
    cur = current(rec, s)
    facts = cur.flow if cur is not None else None
    ep = _endpoint(s, facts.url if facts is not None else None)
    return ep.requests.get(idkey) if ep is not None else None


def state(s: Session) -> HttpState | None:
    return s.http


def current(rec: Record, s: Session) -> Current | None:
    """The observer's conclusions about REC, or None outside HTTP."""
    st = s.http
    if st is None or st.current.seq != rec.seq or st.current.flow is None:
        return None  # (a record without a flow id, hand-made or hostile, has no conclusions to read)
    return st.current


def header_map(headers: Any) -> dict[str, str]:
    """Lowercased header names to their first value (looked up many times per record)."""
    out: dict[str, str] = {}
    for k, v in pairs(headers):
        out.setdefault(k.lower(), v)
    return out


def req_header(facts: FlowFacts | None, name: str) -> str | None:
    """NAME must be lowercase."""
    return facts.req_map.get(name) if facts is not None else None


def resp_header(facts: FlowFacts | None, name: str) -> str | None:
    """NAME must be lowercase."""
    return facts.resp_map.get(name) if facts is not None else None
