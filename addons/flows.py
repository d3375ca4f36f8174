"""mitmproxy flows as the HTTP recorder sees them (`tracer.http_recorder.Exchange`): live in the
capture addon, from a flow file in the .mitm importer."""

from __future__ import annotations

from mitmproxy import http

from tracer.http_recorder import Exchange


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")  # keeps every byte visible as one character (MCP744 sees it)


def headers_of(headers: http.Headers) -> list[list[str]]:
    return [[_text(k), _text(v)] for k, v in headers.fields]


def exchange_of(flow: http.HTTPFlow, *, live: bool = True) -> Exchange:
    """The recorder's view of a flow. Live: times are 'now'; from a file: the flow's timestamps."""
    req = flow.request
    peer = flow.client_conn.peername if flow.client_conn else None
    client = f"{peer[0]}:{peer[1]}" if peer else ""
    ex = Exchange(id=flow.id, client=client, method=req.method, url=req.url, req_headers=headers_of(req.headers))
    ex.req_body = req.get_content(strict=False) if req.raw_content is not None else None
    if not live:
        ex.t_ns = int((req.timestamp_end or req.timestamp_start) * 1e9)
    return ex


def note_response(ex: Exchange, flow: http.HTTPFlow, *, live: bool = True) -> None:
    resp = flow.response
    ex.status = resp.status_code
    ex.resp_headers = headers_of(resp.headers)
    if not live:
        ex.t_resp_ns = int(resp.timestamp_start * 1e9)
