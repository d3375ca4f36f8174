"""MCP750-MCP755, Streamable HTTP: how a modern server answers (session ids, SSE resumability
fields and headers, `subscriptions/listen`), and the dual-era fallback.

HTTP rules (`fn(rec, m, session)`, see mcp70_http.py); the flow facts come from
`tracer.http.state`.
"""

from __future__ import annotations

from tracer.catalog.registry import http_rule, rule
from tracer.http.state import current, req_header, state
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed, Hit, Kind, Record, Severity
from tracer.protocol import ALL, MODERN

SH_M = "spec/2026-07-28/basic/transports/streamable-http.mdx"

HTTP = "http"


def _modern_success_since(s, seq: int) -> bool:
    """Whether a modern request was answered with a result after the message at SEQ (the answered
    table is in answer order, so the walk stops at the first answer older than SEQ)."""
    for req in reversed(s.answered.values()):
        rseq = req.response_seq
        if rseq is None:  # ended without an answer (a stream the client closed)
            continue
        if rseq < seq:
            return False
        if req.era is _ERA_MODERN and req.response_kind is _KIND_RESULT:
            return True
    return False


@http_rule(
    "MCP750",
    "modern-session-id",
    Severity.WARNING,
    versions=MODERN,
    scope="http",
    spec=f"{SH_M}:L685-686; spec/2026-07-28/changelog.mdx:L12",
)
def modern_session_id(rec: Record, m: Analysed | None, s):
    """A modern exchange's response mints or echoes `Mcp-Session-Id`. 2026-07-28 has no sessions.

    "An Mcp-Session-Id header on a request: ignore it, and do not mint or echo session IDs."
    Example: a modern `tools/list` answered with `Mcp-Session-Id: 1868a90c`.
    """
    cur = current(rec, s)
    if cur is None or not cur.head:
        return None
    sid = cur.flow.resp_map.get("mcp-session-id")
    if sid is not None:
        return Hit(
            f"a modern response carries Mcp-Session-Id {sid[:40]!r}; modern servers do not mint or echo it"
        )
    return None


@http_rule(
    "MCP751",
    "modern-resumability-fields",
    Severity.INFO,
    versions=MODERN,
    scope="http",
    spec=f"{SH_M}:L157, :L687; spec/2026-07-28/changelog.mdx:L28",
)
def modern_resumability_fields(rec: Record, m: Analysed | None, s):
    """Modern traffic sends `Last-Event-ID`, or its SSE streams carry `id:` / `retry:` fields.
    Resumability was removed in 2026-07-28, so they have no effect. Reported once per stream.

    "Resumable SSE streams via Last-Event-ID are not supported." Example: `id: 17` on the events
    of a modern `tools/call` stream.
    """
    cur = current(rec, s)
    if cur is None:
        return None
    f = cur.flow
    if cur.first_of_flow and req_header(f, "last-event-id") is not None:
        return Hit("a modern request sends Last-Event-ID; streams are not resumable in 2026-07-28")
    closed = (rec.data or {}).get("event") == "stream-closed"
    if closed and (f.ids_seen or f.retry_seen):
        which = " and ".join(x for x, on in (("id", f.ids_seen), ("retry", f.retry_seen)) if on)
        return Hit(f"the modern SSE stream carried {which} fields, which have no effect (no resumability)")
    return None


@http_rule(
    "MCP752",
    "sse-without-accel-buffering",
    Severity.WARNING,
    versions=MODERN,
    scope="http",
    spec=f"{SH_M}:L136-142",
)
def sse_without_accel_buffering(rec: Record, m: Analysed | None, s):
    """A modern SSE response lacks `X-Accel-Buffering: no`, so a reverse proxy such as nginx may
    hold events back.

    "When initiating an SSE stream, servers SHOULD include the X-Accel-Buffering: no header."
    Example: a `tools/call` answered with `text/event-stream` and no such header.
    """
    if (rec.data or {}).get("event") != "stream-open":
        return None
    cur = current(rec, s)
    if cur is None:
        return None
    value = cur.flow.resp_map.get("x-accel-buffering")
    if value is None or value.strip().lower() != "no":
        return Hit("the SSE response has no 'X-Accel-Buffering: no' header")
    return None


@http_rule(
    "MCP753",
    "listen-answered-json",
    Severity.WARNING,
    versions=MODERN,
    scope="http",
    spec=f"{SH_M}:L127-131",
)
def listen_answered_json(rec: Record, m: Analysed | None, s):
    """(Inferred.) `subscriptions/listen` over HTTP is answered with a single `application/json`
    result instead of a long-lived SSE stream.

    "The server's response is itself an SSE stream that stays open." Example: the listen request
    answered `200` `application/json` with its closing result.
    """
    if m is None or m.kind is not _KIND_RESULT or m.answers_method != "subscriptions/listen":
        return None
    if rec.sse is None and rec.transport == HTTP:
        return Hit("subscriptions/listen was answered with application/json, not an SSE stream")
    return None


@http_rule(
    "MCP754",
    "fallback-after-modern-error",
    Severity.WARNING,
    versions=ALL,
    scope="http/pairing",
    spec=f"{SH_M}:L650-665, :L729-732; spec/2026-07-28/basic/versioning.mdx:L143-146",
)
def fallback_after_modern_error(rec: Record, m: Analysed | None, s):
    """A dual-era client falls back to `initialize` after a 400/404 whose body is a recognised
    modern JSON-RPC error (-32020, -32021, -32022 with 400; -32601 with 404): the server speaks a
    modern version, so the client should retry with a supported version or fix the request. (The
    fallback itself is legacy traffic, so this rule judges every version.)

    "If the body contains a recognized modern JSON-RPC error, the server speaks a modern version of
    MCP — retry ... rather than falling back." Example: `server/discover` answered 400 with -32022,
    then an `initialize` POST.
    """
    if m is None or m.kind is not _KIND_REQUEST or m.method != "initialize" or rec.dir is not _DIR_C2S:
        return None
    if m.era is _ERA_MODERN:
        return None  # an initialize with modern _meta is no fallback (MCP210 judges it)
    st = state(s)
    if st is None or st.modern_rejection is None:
        return None
    seq, status, code = st.modern_rejection
    if _modern_success_since(s, seq):
        return (
            None  # the client retried rightly and the server answered; this initialize is not that fallback
        )
    return Hit(
        f"the client fell back to initialize after a {status} with the modern error {code} (seq {seq}); "
        "that server speaks a modern version",
        related_seq=seq,
    )


@rule(
    "MCP755",
    "modern-server-initialize-error",
    Severity.WARNING,
    versions=ALL,
    kinds=(Kind.ERROR,),
    methods=("initialize",),
    scope="pairing",
    spec="spec/2026-07-28/basic/versioning.mdx:L154-157",
)
def modern_server_initialize_error(m: Analysed, s):
    """A modern-only server (it answered `server/discover` with a result) rejects `initialize` with
    an error that does not name the versions it supports (`error.data.supported`). (The error
    answers legacy traffic, so this rule judges every version.)

    "A server that supports only modern versions SHOULD name the protocol versions it supports in
    any error it returns to an initialize request, on any transport." Example: -32601
    with no `data` in answer to `initialize` after a successful discover.
    """
    disc = s.discover
    if disc is None or disc.outcome != "result" or m.rec.dir is not _DIR_S2C:
        return None
    data = (m.error or {}).get("data")
    sup = data.get("supported") if type(data) is dict else None
    if type(sup) is list and sup:
        return None
    return Hit(
        "the modern server's error to initialize does not list its supported versions (error.data.supported)",
        path="$.error",
    )
