"""What the host gets when the upstream cannot be reached: a 502 with a short plain body naming it.

mitmproxy answers a failed upstream connection with an HTML page, built in its HTTP server layers
(`_http1.make_error_response`, `_http2`'s `format_error`) after the flow's hooks, with no hook of
its own. An MCP host shows that body to its user or logs it, so it should be one readable line.
The `server_connect_error` hook notes the failed connection's error message, the very object
mitmproxy then passes, unchanged, to the page builder of every request that waited for that
connection; the wrapped builders answer those messages with our body and leave every other error
page alone (a reset mid-exchange, a killed connection keep mitmproxy's).
"""

from __future__ import annotations

from collections import OrderedDict

from mitmproxy import http
from mitmproxy.net.http import http1
from mitmproxy.proxy.layers.http import _http1, _http2

NOTED_CAP = 256  # failed connections remembered (each answers the requests that waited for it)

# id(message) -> (message, body): the message is kept so its id cannot be reused while noted
_noted: OrderedDict[int, tuple[str, bytes]] = OrderedDict()


def body_for(where: str, reason: str) -> bytes:
    return f"mcptrace: cannot connect to the upstream server {where}: {reason}\n".encode("utf-8", "replace")


def note_failed_connection(message: str, where: str) -> None:
    """MESSAGE is the failed connection's `error` (the object itself, as the hook gets it)."""
    install()
    _noted[id(message)] = (message, body_for(where, message))
    while len(_noted) > NOTED_CAP:
        _noted.popitem(last=False)


def _body(message: object) -> bytes | None:
    entry = _noted.get(id(message))
    return entry[1] if entry is not None and entry[0] is message else None


def install() -> None:
    """Wrap mitmproxy's two error-page builders, once per process."""
    if getattr(_http1.make_error_response, "_mcptrace", False):
        return
    page1, page2 = _http1.make_error_response, _http2.format_error

    def make_error_response(status_code: int, message: str = "") -> bytes:
        body = _body(message)
        if body is None:
            return page1(status_code, message)
        headers = http.Headers(
            Server="mcptrace", Connection="close", Content_Type="text/plain; charset=utf-8"
        )
        return http1.assemble_response(http.Response.make(status_code, body, headers))

    def format_error(status_code: int, message: str) -> bytes:
        # (HTTP/2: mitmproxy writes the headers itself, with text/html; the body is ours)
        body = _body(message)
        return page2(status_code, message) if body is None else body

    make_error_response._mcptrace = True  # type: ignore[attr-defined]
    _http1.make_error_response = make_error_response
    _http2.format_error = format_error
