"""Records for tests, one call each, in the spirit of mitmproxy's `tflow`: every builder returns a
complete, valid `Record` with sensible defaults, and a keyword changes only what a test is about.

    session(
        request("initialize", 1, era="legacy"),
        result(1, {"protocolVersion": "2025-11-25"}),
        request("tools/list", 2, era="legacy"),
    )

- `era="modern"` puts the 2026-07-28 request metadata (`_meta` protocolVersion, clientInfo,
  clientCapabilities) into the params; `era="legacy"` sends none (the era is the session's then).
  `version=` changes the `_meta` protocolVersion (`version=None` with `era="modern"` leaves it out).
- Requests and notifications go host -> server, results and errors server -> host; `dir=` turns them
  round (a server's sampling request, a host's answer to it).
- `headers=[(name, value), ...]` sends the message over Streamable HTTP: the record gets the HTTP
  facts the proxy door writes (a POST to `URL`, its flow id, those request headers).
- Any other keyword is a `Record` field (`conn`, `transport`, `seq`, `t_ns`, `http`, `sse`...).
- `session(*records)` numbers records in order (seq, time, line) like a capture file does: records
  a test builds stay seq 0 until then, so a test that writes them by hand need not count.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from tracer.model import Direction, Record, RecordType
from tracer.protocol import META_CLIENT_CAPS, META_CLIENT_INFO, META_PROTOCOL_VERSION, MODERN_VERSION

T0 = 1_780_000_000_000_000_000  # the same origin as tests/cases.py, so times read alike
URL = "http://127.0.0.1:8765/mcp"
LEGACY = "2025-11-25"
CLIENT_INFO = {"name": "factory-client", "version": "1"}
Era = Literal["modern", "legacy"]
_DEFAULT = object()  # "the usual value", distinct from an explicit None ("leave it out")


def dumps(value: Any) -> bytes:
    """Compact JSON, as the SDKs and tests/cases.py write it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def modern_meta(version: str | None = MODERN_VERSION, **extra: Any) -> dict[str, Any]:
    """The `_meta` a modern client puts on every request (2026-07-28 basic#request-metadata)."""
    meta: dict[str, Any] = {META_CLIENT_INFO: CLIENT_INFO, META_CLIENT_CAPS: {}}
    if version is not None:
        meta[META_PROTOCOL_VERSION] = version
    meta.update(extra)
    return meta


def _with_meta(params: dict | None, era: Era, version: Any) -> dict | None:
    if era == "legacy":
        return params
    if era != "modern":
        raise ValueError(f"era must be 'modern' or 'legacy', not {era!r}")
    out = dict(params or {})
    meta = dict(out.get("_meta") or {})
    for k, v in modern_meta(MODERN_VERSION if version is _DEFAULT else version).items():
        meta.setdefault(k, v)
    out["_meta"] = meta
    return out


def _http_facts(headers, flow: int | str | None, status: int) -> dict[str, Any]:
    return {
        "method": "POST",
        "url": URL,
        "status": status,
        "flow": flow,
        "req_headers": [[k, v] for k, v in headers],
        "resp_headers": [["content-type", "application/json"]],
    }


def message(obj_or_raw: Any, dir: Direction = Direction.C2S, *, headers=None, flow=None, **fields) -> Record:
    """A `message` record of any JSON value (or exact bytes: invalid frames)."""
    raw = obj_or_raw if isinstance(obj_or_raw, bytes) else dumps(obj_or_raw)
    if headers is not None:
        fields.setdefault("transport", "http")
        fields.setdefault("http", _http_facts(headers, flow if flow is not None else 1, 200))
    fields.setdefault("conn", "c1")
    return Record(RecordType.MESSAGE, dir=dir, raw=raw, **fields)


_message = message  # (for builders whose parameters shadow the name)


def request(
    method: str,
    id: int | str | None = 1,
    params: dict | None = None,
    *,
    era: Era = "modern",
    version: Any = _DEFAULT,
    dir: Direction = Direction.C2S,
    **fields,
) -> Record:
    obj: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    params = _with_meta(params, era, version)
    if params is not None:
        obj["params"] = params
    return message(obj, dir, **fields)


def notification(
    method: str,
    params: dict | None = None,
    *,
    era: Era = "legacy",
    version: Any = _DEFAULT,
    dir: Direction = Direction.C2S,
    **fields,
) -> Record:
    """A notification; legacy by default, since modern clients send few (a modern one carries
    `_meta` like a request when `era="modern"`)."""
    obj: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    params = _with_meta(params, era, version)
    if params is not None:
        obj["params"] = params
    return message(obj, dir, **fields)


def result(
    id: int | str | None = 1, value: Any = _DEFAULT, *, dir: Direction = Direction.S2C, **fields
) -> Record:
    return message({"jsonrpc": "2.0", "id": id, "result": {} if value is _DEFAULT else value}, dir, **fields)


def error(
    id: int | str | None = 1,
    code: int = -32601,
    message: str = "Method not found",
    data: Any = _DEFAULT,
    *,
    dir: Direction = Direction.S2C,
    **fields,
) -> Record:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not _DEFAULT:
        err["data"] = data
    return _message({"jsonrpc": "2.0", "id": id, "error": err}, dir, **fields)


def http(
    status: int = 202,
    *,
    method: str = "POST",
    url: str = URL,
    req_headers=(("content-type", "application/json"),),
    resp_headers=(),
    body: bytes = b"",
    flow: int | str = 1,
    **fields,
) -> Record:
    """An `http` record: an exchange without a JSON-RPC body (a 202 for a notification, a 404...)."""
    facts = {
        "method": method,
        "url": url,
        "status": status,
        "flow": flow,
        "req_headers": [[k, v] for k, v in req_headers],
        "resp_headers": [[k, v] for k, v in resp_headers],
    }
    fields.setdefault("conn", "c1")
    fields.setdefault("transport", "http")
    return Record(RecordType.HTTP, http=facts, raw=body, **fields)


def initialize(
    id: int | str = 1, version: str = LEGACY, capabilities: dict | None = None, **fields
) -> Record:
    """A legacy client's opening request."""
    params = {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": CLIENT_INFO}
    return request("initialize", id, params, era="legacy", **fields)


def initialized(
    id: int | str = 1, version: str = LEGACY, capabilities: dict | None = None, **fields
) -> Record:
    """The server's answer to `initialize`."""
    res = {
        "protocolVersion": version,
        "capabilities": {"tools": {}} if capabilities is None else capabilities,
        "serverInfo": {"name": "factory-server", "version": "1"},
    }
    return result(id, res, **fields)


def handshake(version: str = LEGACY, **fields) -> list[Record]:
    """A complete legacy handshake: initialize, its result, notifications/initialized."""
    return [
        initialize(1, version, **fields),
        initialized(1, version, **fields),
        notification("notifications/initialized", **fields),
    ]


def session(*records: Record | list[Record]) -> list[Record]:
    """RECORDS (lists are spliced in) numbered in order like a capture: seq, line and a millisecond
    apart in time, for those still at seq 0."""
    out: list[Record] = []
    for r in records:
        out.extend(r if isinstance(r, list) else [r])
    for i, r in enumerate(out, 1):
        if r.seq == 0:
            r.seq = i
            r.line = i
            r.t_ns = r.t_ns or T0 + i * 1_000_000
    return out


def legacy_sse_stream(out: list):
    """The SSE tee of a legacy HTTP+SSE GET stream just opened through an HttpRecorder (redacting)
    whose records go to OUT: what a test feeds the server's events to."""
    from tracer.http.recorder import Exchange, HttpRecorder

    rec = HttpRecorder(out.extend, redact=True)
    ex = Exchange(
        "g1", "127.0.0.1:5000", "GET", "http://127.0.0.1:8000/sse", [["Accept", "text/event-stream"]]
    )
    rec.request(ex)
    ex.status, ex.resp_headers = 200, [["Content-Type", "text/event-stream"]]
    return rec.response_headers(ex)
