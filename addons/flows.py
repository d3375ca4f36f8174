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
    return _fields(headers.fields)


def _fields(fields: tuple) -> list[list[str]]:
    return [[_text(k), _text(v)] for k, v in fields]


def request_facts(flow: http.HTTPFlow, *, live: bool = True) -> tuple:
    """What the recorder needs of a request, taken at once from the flow (cheap: raw header
    fields, the body as mitmproxy holds it); decoding them waits for `exchange_from`."""
    req = flow.request
    conn = flow.client_conn
    body = req.get_content(strict=False) if req.raw_content is not None else None
    # live: now (the request hook runs as its body completes); from a file: the flow's timestamps
    t_ns = time.time_ns() if live else int((req.timestamp_end or req.timestamp_start) * 1e9)
    return (
        flow.id,
        conn.peername if conn else None,
        conn.id if conn else "",
        req.method,
        req.url,
        req.headers.fields,
        body,
        t_ns,
        req.http_version,
    )


def exchange_from(facts: tuple) -> Exchange:
    fid, peer, client_id, method, url, fields, body, t_ns, version = facts
    client = f"{peer[0]}:{peer[1]}" if peer else ""
    ex = Exchange(
        id=fid, client=client, method=method, url=url, req_headers=_fields(fields), client_id=client_id
    )
    ex.req_body = body
    ex.t_ns = t_ns
    ex.http_version = version
    return ex


def exchange_of(flow: http.HTTPFlow, *, live: bool = True) -> Exchange:
    """The recorder's view of a flow."""
    return exchange_from(request_facts(flow, live=live))


def response_facts(flow: http.HTTPFlow, *, live: bool = True) -> tuple:
    resp = flow.response
    t_ns = time.time_ns() if live else int(resp.timestamp_start * 1e9)
    return (
        resp.status_code,
        resp.headers.fields,
        t_ns,
        flow.server_conn.peername if flow.server_conn else None,
    )


def note_response_facts(ex: Exchange, facts: tuple) -> None:
    ex.status, fields, ex.t_resp_ns, peer = facts
    ex.resp_headers = _fields(fields)
    if peer:  # the address the server was really reached at (DNS rebinding: MCP706)
        ex.server = f"[{peer[0]}]:{peer[1]}" if ":" in str(peer[0]) else f"{peer[0]}:{peer[1]}"


def note_response(ex: Exchange, flow: http.HTTPFlow, *, live: bool = True) -> None:
    note_response_facts(ex, response_facts(flow, live=live))
