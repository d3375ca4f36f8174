"""The findings mcptrace reports on the real peers' clean sessions, each a real deviation from the
spec (`mcptrace help peers`), as predicates on the finding and the records it points at.
Tests of live sessions accept exactly these and nothing else."""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable

from tracer.model import Record


def _body(rec: Record | None) -> dict:
    try:
        obj = json.loads(rec.raw) if rec is not None and rec.raw else None
    except ValueError:
        return {}
    return obj if isinstance(obj, dict) else {}


def _meta(rec: Record | None) -> dict:
    params = _body(rec).get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else {}


def deprecated_logging(f, by_seq: dict[int, Record]) -> bool:
    """mcp 2.3.0's client asks for log messages in modern requests (`_meta` logLevel): Logging is
    deprecated in 2026-07-28 (MCP905, info)."""
    return f.rule == "MCP905" and "io.modelcontextprotocol/logLevel" in _meta(by_seq.get(f.seq))


def no_discover_probe(f, by_seq: dict[int, Record]) -> bool:
    """mcp 2.3.0's client in mode "2026-07-28" starts a stdio session without the RECOMMENDED
    `server/discover` probe (MCP808, info)."""
    return f.rule == "MCP808" and "io.modelcontextprotocol/protocolVersion" in _meta(by_seq.get(f.seq))


def log_without_capability(f, by_seq: dict[int, Record]) -> bool:
    """mcp 2.3.0's MCPServer, as configured by default, sends `notifications/message` without
    declaring `logging` (MCP419)."""
    return f.rule == "MCP419" and _body(by_seq.get(f.seq)).get("method") == "notifications/message"


def answer_after_cancel(f, by_seq: dict[int, Record]) -> bool:
    """mcp 2.3.0's Streamable HTTP server answers a cancelled 2025-era request with error -32800
    (MCP504). It reaches the capture only when the client has not closed the request's stream yet:
    timing decides, so it is allowed, not required."""
    answer, cancel = _body(by_seq.get(f.seq)), _body(by_seq.get(f.related_seq))
    return (
        f.rule == "MCP504"
        and (answer.get("error") or {}).get("code") == -32800
        and cancel.get("method") == "notifications/cancelled"
    )


def progress_after_cancel(f, by_seq: dict[int, Record]) -> bool:
    """server-everything's trigger-long-running-operation ignores the cancellation and keeps
    reporting progress (MCP504)."""
    return (
        f.rule == "MCP504"
        and _body(by_seq.get(f.seq)).get("method") == "notifications/progress"
        and _body(by_seq.get(f.related_seq)).get("method") == "notifications/cancelled"
    )


def foreign_origin_served(f, by_seq: dict[int, Record]) -> bool:
    """server-everything (Streamable HTTP) serves a request whose Origin is foreign (MCP706)."""
    rec = by_seq.get(f.seq)
    if f.rule != "MCP706" or rec is None or not rec.http or rec.http.get("status") != 200:
        return False
    flow = rec.http.get("flow")
    origins = {
        v
        for r in by_seq.values()
        if r.http and r.http.get("flow") == flow
        for k, v in r.http.get("req_headers") or ()
        if k.lower() == "origin"
    }
    return origins == {"https://evil.example"}


def _probe_rejection(rec: Record | None) -> bool:
    body = _body(rec)
    return (
        rec is not None
        and (rec.http or {}).get("status") == 400
        and "id" in body
        and body["id"] is None
        and (body.get("error") or {}).get("code") == -32000
    )


def probe_rejected_with_null_id(f, by_seq: dict[int, Record]) -> bool:
    """server-everything answers the `server/discover` probe with HTTP 400 and a -32000 error whose
    id is an explicit null: the HTTP status answers (a legacy server's 400 to a modern request is what
    the spec expects), but MCP ids are strings or integers, so omit the id (MCP118, warning)."""
    return f.rule == "MCP118" and _probe_rejection(by_seq.get(f.seq))


def http_sse_deprecated(f, by_seq: dict[int, Record]) -> bool:
    """The 2024-11-05 HTTP+SSE transport is deprecated (MCP904, info)."""
    return f.rule == "MCP904"


def origin_rejected_with_null_id(f, by_seq: dict[int, Record]) -> bool:
    """The TS SDK v2's `originValidationResponse` (the Origin check its docs put in front of
    `createMcpHandler`) answers a foreign Origin with 403 and a -32000 error whose id is an explicit
    null: the 403 is what the spec asks, and the transport lets that body lack an id, but MCP ids
    are strings or integers, so omit it (MCP118, warning)."""
    rec = by_seq.get(f.seq)
    body = _body(rec)
    return (
        f.rule == "MCP118"
        and rec is not None
        and (rec.http or {}).get("status") == 403
        and "id" in body
        and body["id"] is None
        and (body.get("error") or {}).get("code") == -32000
    )


def stream_refused_with_null_id(f, by_seq: dict[int, Record]) -> bool:
    """The TS SDK v2's `createMcpHandler` serves 2025-era traffic statelessly and refuses the GET
    for a server stream with 405 (as the transport allows) and a -32000 error whose id is an
    explicit null: omit it (MCP118, warning)."""
    rec = by_seq.get(f.seq)
    body = _body(rec)
    http = (rec.http or {}) if rec is not None else {}
    return (
        f.rule == "MCP118"
        and http.get("status") == 405
        and http.get("method") == "GET"
        and "id" in body
        and body["id"] is None
        and (body.get("error") or {}).get("code") == -32000
    )


def listen_cancel_posted(f, by_seq: dict[int, Record]) -> bool:
    """The TS SDK v2 client closes a 2026-07-28 `subscriptions/listen` over Streamable HTTP by
    aborting its stream AND POSTing `notifications/cancelled` ("both, unconditionally"), where the
    spec says that notification "is used only on the stdio transport" (MCP506, warning)."""
    body = _body(by_seq.get(f.seq))
    rid = (body.get("params") or {}).get("requestId") if isinstance(body.get("params"), dict) else None
    return (
        f.rule == "MCP506"
        and body.get("method") == "notifications/cancelled"
        and isinstance(rid, str)
        and rid.startswith("listen:")
    )


def recording_views(records: list[Record]) -> Callable:
    """finding -> the records by seq of the recording it points into. A capture file appended to by
    several tees (a dual-era client's probe process, then its session) numbers each recording from
    1, so seq alone is ambiguous; the finding's line says which recording it is in."""
    starts: list[int] = []
    views: list[dict[int, Record]] = []
    prev = None
    for r in records:
        if prev is None or r.seq <= prev:
            starts.append(r.line)
            views.append({})
        views[-1][r.seq] = r
        prev = r.seq
    return lambda f: views[max(0, bisect.bisect_right(starts, f.line or 0) - 1)] if views else {}


def _view(by_seq, f) -> dict[int, Record]:
    return by_seq(f) if callable(by_seq) else by_seq


def unexpected(findings, by_seq, known) -> list:
    """The findings that are none of KNOWN (BY_SEQ: records by seq, or recording_views')."""
    return [f for f in findings if not any(k(f, _view(by_seq, f)) for k in known)]


def missing(findings, by_seq, required) -> list:
    """The REQUIRED predicates no finding satisfies."""
    return [k.__name__ for k in required if not any(k(f, _view(by_seq, f)) for f in findings)]
