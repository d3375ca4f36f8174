"""HTTP capture records as a HAR 1.2 file, for browser devtools, HTTP Toolkit, and mcptrace itself.

Every exchange the HTTP door recorded (a capture record's `http.flow`) becomes one entry: the
request with its JSON-RPC body, the response with its JSON body or its whole event stream rebuilt
from the recorded SSE events (ids, event names, retry fields kept), and the times the capture knows
(request sent, response head, last byte). Each event of a stream is also listed, with its own time,
under `_eventSourceMessages` (the fields of Chrome DevTools' EventSource messages: time, eventName,
eventId, data), as HAR has no standard place for them. Headers are written as the capture holds
them: credentials were redacted when it was recorded, unless the user asked otherwise then.

mcptrace's HAR reader (tracer.inputs.har) reads the file back to the same envelopes, so `lint`
gives the same findings on both. A HAR is one JSON document: the exchanges are held in memory.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any
from urllib.parse import parse_qsl, urlsplit

import orjson

from tracer import __version__
from tracer.http.headers import header
from tracer.model import Direction, Record, RecordType
from tracer.safejson import dumps as safe_dumps


@dataclass(slots=True, eq=False)
class _Flow:
    method: str = "GET"
    url: str = ""
    req_headers: list = field(default_factory=list)
    req_t: int = 0
    req_body: bytes | None = None
    req_type: str | None = None
    status: int | None = None
    resp_headers: list | None = None
    head_t: int = 0
    end_t: int = 0
    body: bytes | None = None
    resp_type: str | None = None
    sse: list[tuple[int, dict]] | None = None  # (t_ns, event fields)
    error: str | None = None
    truncated: int | None = None
    conn: str = ""  # the capture's connection: the HAR entry's `connection`
    server: str | None = None  # where the server was reached (HAR: serverIPAddress)
    http_version: str = "HTTP/1.1"  # as the capture recorded it (older captures did not: HTTP/1.1)
    ended: str | None = None  # how an SSE stream ended (stream-closed reason)


def _iso(t_ns: int) -> str:
    return datetime.fromtimestamp(t_ns / 1e9, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def _headers(items: Any) -> list[dict[str, str]]:
    out = []
    for h in items if type(items) is list else ():
        if type(h) is list and len(h) == 2 and type(h[0]) is str and type(h[1]) is str:
            out.append({"name": h[0], "value": h[1]})
    return out


def _text_field(body: bytes) -> dict[str, str]:
    try:
        return {"text": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"text": base64.b64encode(body).decode(), "encoding": "base64"}


def _event_lines(fields: dict) -> str:
    lines = []
    if fields.get("id") is not None:
        lines.append(f"id: {fields['id']}")
    name = fields.get("event")
    if name and name != "message":
        lines.append(f"event: {name}")
    if fields.get("retry") is not None:
        lines.append(f"retry: {fields['retry']}")
    data = fields.get("data")
    if data is not None:
        lines.extend(f"data: {part}" if part else "data:" for part in data.split("\n"))
    return "\n".join(lines) + "\n\n"


class HarBuilder:
    """Feed it records (any order of flows, each flow's records in capture order); `write` the HAR."""

    def __init__(self) -> None:
        self.flows: dict[str, _Flow] = {}
        self.skipped = 0  # HTTP records without a flow id (nothing to group them by)
        self.records = 0

    def feed(self, rec: Record) -> None:
        http = rec.http
        if type(http) is not dict:
            return
        fid = http.get("flow")
        if type(fid) is not str:
            self.skipped += 1
            return
        self.records += 1
        f = self.flows.get(fid)
        if f is None:
            f = self.flows[fid] = _Flow()
        if type(http.get("method")) is str:
            f.method = http["method"]
        if type(http.get("url")) is str:
            f.url = http["url"]
        if "req_headers" in http:
            f.req_headers = http["req_headers"] if type(http["req_headers"]) is list else []
            t = http.get("request_t_ns")
            f.req_t = t if type(t) is int else rec.t_ns
        if type(http.get("status")) is int:
            f.status = http["status"]
        if "resp_headers" in http and f.resp_headers is None:
            f.resp_headers = http["resp_headers"] if type(http["resp_headers"]) is list else []
            f.head_t = rec.t_ns
        if type(http.get("error")) is str:
            f.error = http["error"]
        if type(http.get("server")) is str:
            f.server = http["server"]
        if type(http.get("http_version")) is str:
            f.http_version = http["http_version"]
        f.end_t = max(f.end_t, rec.t_ns)
        if not f.conn:
            f.conn = rec.conn
        data = rec.data if type(rec.data) is dict else {}
        event = data.get("event")
        if event == "stream-closed" and type(data.get("reason")) is str:
            f.ended = data["reason"]
        if rec.type is RecordType.MESSAGE and rec.dir is Direction.C2S:
            f.req_body = rec.raw
            f.req_type = header(f.req_headers, "content-type")
        elif rec.type is RecordType.MESSAGE and rec.sse is None:
            f.body = rec.raw
        elif rec.type is RecordType.HTTP:
            f.body = rec.raw
            if type(http.get("body_bytes")) is int:
                f.truncated = http["body_bytes"]
        elif rec.type is RecordType.MESSAGE or event in ("sse-event", "endpoint"):
            sse = rec.sse if type(rec.sse) is dict else {}
            fields = {"id": sse.get("id"), "event": sse.get("event"), "retry": sse.get("retry")}
            if rec.type is RecordType.MESSAGE:
                fields["data"] = rec.raw.decode("utf-8", "surrogatepass")
            elif event == "endpoint":
                fields["event"], fields["data"] = "endpoint", str(data.get("uri", ""))
            elif fields["id"] is not None:
                fields["data"] = ""  # a priming event: an id with empty data
            if f.sse is None:
                f.sse = []
            f.sse.append((rec.t_ns, fields))
        elif event == "stream-open" and f.sse is None:
            f.sse = []

    def entries(self) -> list[dict[str, Any]]:
        flows = sorted(self.flows.values(), key=lambda f: f.req_t)  # (stable: ties keep capture order)
        return [self._entry(f) for f in flows]

    def _entry(self, f: _Flow) -> dict[str, Any]:
        start = f.req_t or f.head_t or f.end_t
        u = urlsplit(f.url)
        request: dict[str, Any] = {
            "method": f.method,
            "url": f.url,
            "httpVersion": f.http_version,
            "cookies": [],
            "headers": _headers(f.req_headers),
            "queryString": [{"name": k, "value": v} for k, v in parse_qsl(u.query, keep_blank_values=True)],
            "headersSize": -1,
            "bodySize": len(f.req_body) if f.req_body is not None else 0,
        }
        if f.req_body is not None:
            request["postData"] = {"mimeType": f.req_type or "application/json", **_text_field(f.req_body)}
        ctype = header(f.resp_headers, "content-type") or ""
        body = f.body
        messages = None
        if f.sse is not None:
            stream = "".join(_event_lines(fields) for _, fields in f.sse)
            body = stream.encode("utf-8", "surrogatepass")
            messages = [
                {
                    "time": t / 1e9,
                    "eventName": fields.get("event") or "message",
                    "eventId": fields.get("id") or "",
                    "data": fields.get("data") or "",
                }
                for t, fields in f.sse
            ]
        content: dict[str, Any] = {
            "size": f.truncated or (len(body) if body is not None else 0),
            "mimeType": ctype or "x-unknown",
        }
        if body is not None:
            content.update(_text_field(body))
        failed = f.status is None
        response: dict[str, Any] = {
            "status": 0 if failed else f.status,
            "statusText": "",
            "httpVersion": f.http_version,
            "cookies": [],
            "headers": _headers(f.resp_headers),
            "content": content,
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": len(body) if body is not None else 0,
        }
        if f.error is not None:
            response["_error"] = f.error
        elif f.ended is not None and f.ended != "end":
            response["_error"] = f.ended  # (read back as the stream's end reason)
        head = f.head_t or f.end_t
        end = max(f.end_t, head)
        wait = max(0.0, (head - start) / 1e6)
        entry: dict[str, Any] = {
            "startedDateTime": _iso(start),
            "time": max(0.0, (end - start) / 1e6),
            "connection": f.conn,
            "request": request,
            "response": response,
            "cache": {},
            "timings": {
                "blocked": -1,
                "dns": -1,
                "connect": -1,
                "ssl": -1,
                "send": 0,
                "wait": wait,
                "receive": max(0.0, (end - head) / 1e6),
            },
        }
        if f.server:
            entry["serverIPAddress"] = f.server  # (as recorded: mcptrace's HAR reader reads it back)
        if messages is not None:
            entry["_eventSourceMessages"] = messages
        if failed and f.error is not None:
            entry["_error"] = f.error
        return entry

    def write(self, out: IO[bytes]) -> int:
        entries = self.entries()
        doc = {
            "log": {
                "version": "1.2",
                "creator": {"name": "mcptrace", "version": __version__},
                "pages": [],
                "entries": entries,
            }
        }
        # (safe_dumps: a lone surrogate a HAR's URL or header carries is legal JSON orjson refuses)
        out.write(safe_dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
        return len(entries)
