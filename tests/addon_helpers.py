"""Flows for the capture addon's tests, built with mitmproxy's own helpers (tflow, tutils), and a
driver that calls the addon's hooks in the order mitmproxy does, streaming included."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mitmproxy import http
from mitmproxy.test import taddons, tflow, tutils

from addons.mcp_capture import McpCapture
from tests.cases import initialize, initialize_result
from tracer.capture import read_capture
from tracer.model import Record, RecordType

URL_HOST, URL_PORT = "127.0.0.1", 8765
ACCEPT_BOTH = (b"accept", b"application/json, text/event-stream")
INIT = initialize()
INIT_RESULT = initialize_result()


@contextmanager
def running_capture(path: Path) -> Iterator[tuple[McpCapture, taddons.context]]:
    """The capture addon writing PATH, as mitmproxy runs it (configured, running, then done)."""
    addon = McpCapture()
    with taddons.context(addon) as tctx:
        tctx.configure(addon, mcptrace_output=str(path))
        addon.running()  # mitmproxy is up: the capture file exists from here on
        yield addon, tctx
        addon.done()


def body(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def flow(
    method: bytes = b"POST",
    path: bytes = b"/mcp",
    content: bytes | None = b"",
    headers=(),
    status: int = 200,
    resp_headers=(),
    resp_content: bytes | None = b"",
    client=("127.0.0.1", 50000),
):
    """A flow with its response (headers and, unless streamed, body)."""
    req = tutils.treq(
        method=method,
        host=URL_HOST,
        port=URL_PORT,
        path=path,
        headers=http.Headers([*headers]),
        content=content,
    )
    resp = tutils.tresp(status_code=status, headers=http.Headers([*resp_headers]), content=resp_content)
    f = tflow.tflow(req=req, resp=resp)
    f.client_conn.peername = client
    return f


def post(
    obj_or_bytes,
    *,
    resp=None,
    status=200,
    headers=(ACCEPT_BOTH, (b"content-type", b"application/json")),
    resp_headers=((b"content-type", b"application/json"),),
    client=("127.0.0.1", 50000),
):
    content = obj_or_bytes if isinstance(obj_or_bytes, bytes) else body(obj_or_bytes)
    resp_content = resp if isinstance(resp, bytes) or resp is None else body(resp)
    return flow(
        content=content,
        headers=headers,
        status=status,
        resp_headers=resp_headers,
        resp_content=resp_content,
        client=client,
    )


def exchange(addon, f) -> None:
    """request -> responseheaders -> response, as mitmproxy calls them for a buffered answer."""
    addon.request(f)
    addon.responseheaders(f)
    addon.response(f)


def stream(addon, f, chunks: list[bytes], *, on_chunk=None, end: bool = True) -> list[bytes]:
    """request -> responseheaders -> each chunk through flow.response.stream (what mitmproxy does
    for a streamed body) -> b"" -> response. Returns the chunks mitmproxy would have forwarded."""
    addon.request(f)
    addon.responseheaders(f)
    fn = f.response.stream
    assert callable(fn), "an SSE answer must be streamed, not buffered"
    sent = []
    for chunk in chunks:
        out = fn(chunk)
        sent.extend([out] if isinstance(out, bytes) else list(out))
        if on_chunk is not None:
            on_chunk(chunk)
    if end:
        out = fn(b"")
        sent.extend([out] if isinstance(out, bytes) else list(out))
        addon.response(f)
    return sent


def records(path: Path) -> list[Record]:
    with open(path, "rb") as fh:
        return [
            r
            for r in read_capture(fh, str(path))
            if isinstance(r, Record) and r.type is not RecordType.HEADER
        ]


def sse_body(*events: tuple[str | None, str, str | None]) -> bytes:
    """SSE text for (event name, data, id) triples, CRLF line ends as the Python SDK sends them."""
    out = []
    for name, data, eid in events:
        if name:
            out.append(f"event: {name}\r\n")
        if eid is not None:
            out.append(f"id: {eid}\r\n")
        for line in data.split("\n"):
            out.append(f"data: {line}\r\n")
        out.append("\r\n")
    return "".join(out).encode()
