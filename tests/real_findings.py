"""The findings mcptrace reports on the real peers' clean sessions, each a real deviation from the
spec (README "Findings on real peers"). Tests of live sessions accept exactly these, checked on the
message they point at, and nothing else."""

from __future__ import annotations

import json

from tracer.model import Record


def _body(rec: Record | None) -> dict:
    try:
        obj = json.loads(rec.raw) if rec is not None and rec.raw else None
    except ValueError:
        return {}
    return obj if isinstance(obj, dict) else {}


def logging_without_capability(f, by_seq: dict[int, Record]) -> bool:
    """mcp 2.3.0's client asks for log messages (`_meta` logLevel, deprecated Logging: MCP905 info)."""
    meta = (_body(by_seq.get(f.seq)).get("params") or {}).get("_meta") or {}
    return f.rule == "MCP905" and f.severity.label == "info" and "io.modelcontextprotocol/logLevel" in meta


def answer_after_cancel(f, by_seq: dict[int, Record]) -> bool:
    """mcp 2.3.0's Streamable HTTP server answers a cancelled 2025-era request with error -32800
    (MCP504: receivers SHOULD "Not send a response for the cancelled request"). It reaches the
    capture only when the client has not closed the request's stream yet: timing decides."""
    answer, cancel = _body(by_seq.get(f.seq)), _body(by_seq.get(f.related_seq))
    return (f.rule == "MCP504" and (answer.get("error") or {}).get("code") == -32800
            and cancel.get("method") == "notifications/cancelled")


SDK_HTTP = (logging_without_capability, answer_after_cancel)


def unexpected(findings, by_seq: dict[int, Record], known=SDK_HTTP) -> list:
    """The findings that are none of KNOWN."""
    return [f for f in findings if not any(k(f, by_seq) for k in known)]
