"""Malformed HTTP a host (or anything on the port) can send the mock, and a status line a server can
send replay: each is a plain 4xx answer or an HttpError, never the mock's "cannot answer" 500 (an
Origin that does not parse made urlsplit raise; a header line past the connection's 1 MiB limit
made readline raise; a status code in digits that are not ASCII made int() raise)."""

from __future__ import annotations

import asyncio

import pytest

from tests.tracer.mock.test_mock_http import INIT, call, mock_url  # noqa: F401 (the fixture)
from tracer.http.wire import HttpError, read_response_head


async def test_an_origin_that_does_not_parse_is_refused_as_foreign(mock_url):  # noqa: F811
    head, body = await call(mock_url, "POST", INIT, Origin="http://[::1")
    assert head.status == 403 and "not allowed" in body["error"]["message"]


async def _raw(url: str, data: bytes) -> bytes:
    host, port = url.split("//")[1].split("/")[0].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(data)
    await writer.drain()
    out = await reader.read()  # the mock answers, then closes the connection
    writer.close()
    return out


async def test_a_header_line_past_the_connection_limit_is_a_bad_request(mock_url):  # noqa: F811
    head = b"POST /mcp HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n"
    out = await _raw(mock_url, head)
    assert out.startswith(b"HTTP/1.1 400 ") and b"bad HTTP request" in out


@pytest.mark.parametrize("status", [b"\xb200", b"2\xb90"], ids=["superscript-two", "superscript-one"])
async def test_a_status_code_in_digits_that_are_not_ascii_is_an_http_error(status):
    # (a head is read as latin-1, where the byte 0xb2 is '²': str.isdigit() takes it, int() does not)
    reader = asyncio.StreamReader()
    reader.feed_data(b"HTTP/1.1 " + status + b" OK\r\ncontent-length: 0\r\n\r\n")
    reader.feed_eof()
    with pytest.raises(HttpError):
        await read_response_head(reader)
