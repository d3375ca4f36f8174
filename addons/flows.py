"""mitmproxy flows as the HTTP recorder sees them (`tracer.http.recorder.Exchange`): live in the
capture addon, from a flow file in the .mitm importer."""

from __future__ import annotations

import time

from mitmproxy import http

from tracer.http.recorder import Exchange


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")  # keeps every byte visible as one character (MCP744 sees it)


def headers_of(headers: http.Headers) -> list[list[str]]:
    return [[_text(k), _text(v)] for k, v in headers.fields]


def exchange_of(flow: http.HTTPFlow, *, live: bool = True) -> Exchange:
    """The recorder's view of a flow."""
    req = flow.request
    peer = flow.client_conn.peername if flow.client_conn else None
    client = f"{peer[0]}:{peer[1]}" if peer else ""
    ex = Exchange(id=flow.id, client=client, method=req.method, url=req.url, req_headers=headers_of(req.headers),
                  client_id=flow.client_conn.id if flow.client_conn else "")
    ex.req_body = req.get_content(strict=False) if req.raw_content is not None else None
    # live: now (the request hook runs as its body completes); from a file: the flow's timestamps
    ex.t_ns = time.time_ns() if live else int((req.timestamp_end or req.timestamp_start) * 1e9)
    return ex


def note_response(ex: Exchange, flow: http.HTTPFlow, *, live: bool = True) -> None:
    resp = flow.response
    ex.status = resp.status_code
    ex.resp_headers = headers_of(resp.headers)
    ex.t_resp_ns = time.time_ns() if live else int(resp.timestamp_start * 1e9)
    peer = flow.server_conn.peername if flow.server_conn else None
    if peer:  # the address the server was really reached at (DNS rebinding: MCP706)
        ex.server = f"[{peer[0]}]:{peer[1]}" if ":" in str(peer[0]) else f"{peer[0]}:{peer[1]}"
