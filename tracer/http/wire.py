"""A minimal HTTP/1.1 for the replayer (client) and the mock server, on asyncio streams.

Only what Streamable HTTP needs: request and status lines, headers, bodies by Content-Length or
chunked transfer coding (or until close), and streamed responses for Server-Sent Events. No
dependency beyond the standard library, so `mcptrace mock --listen` runs wherever mcptrace does.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tracer.http.headers import header

MAX_HEAD = 64 * 1024
MAX_BODY = 256 * 1024 * 1024

REASONS = {
    200: "OK",
    202: "Accepted",
    204: "No Content",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    406: "Not Acceptable",
    413: "Content Too Large",
    415: "Unsupported Media Type",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class HttpError(Exception):
    """Malformed HTTP on the wire (the peer is not speaking HTTP/1.1 as we know it)."""


class BodiesTooLarge(HttpError):
    """The request bodies held at once (all connections together) would pass the server's budget."""


class BodyBudget:
    """The bytes of request bodies a server holds at once, across all its connections: each body
    is bounded by MAX_BODY, and this bounds their sum (many slow uploads at once)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.held = 0

    def take(self, n: int) -> None:
        if self.held + n > self.limit:
            raise BodiesTooLarge(f"{self.held + n} bytes of request bodies at once (limit {self.limit})")
        self.held += n

    def give(self, n: int) -> None:
        self.held = max(0, self.held - n)


@dataclass
class Headers:
    """Header fields in wire order, names compared case-insensitively."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def get(self, name: str, default: str | None = None) -> str | None:
        value = header(self.items, name)
        return default if value is None else value

    def add(self, name: str, value: str) -> None:
        self.items.append((name, value))

    def as_pairs(self) -> list[list[str]]:
        return [[k, v] for k, v in self.items]


@dataclass
class Request:
    method: str
    target: str
    version: str
    headers: Headers
    body: bytes = b""
    held: int = 0  # bytes of `body` counted in a BodyBudget until the server gives them back

    @property
    def path(self) -> str:
        return urlsplit(self.target).path or "/"

    @property
    def keep_alive(self) -> bool:
        conn = (self.headers.get("connection") or "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in conn
        return "close" not in conn


@dataclass
class ResponseHead:
    status: int
    reason: str
    version: str
    headers: Headers

    @property
    def content_type(self) -> str:
        return (self.headers.get("content-type") or "").split(";")[0].strip().lower()


async def _readline(reader: asyncio.StreamReader) -> bytes:
    """A line of a message head or chunked body. The stream's limit (the mock's 1 MiB) makes
    readline raise ValueError on a longer one: a peer's malformed message, not our bug."""
    try:
        return await reader.readline()
    except ValueError:
        raise HttpError("a line of the message longer than the connection's limit") from None


async def _read_head(reader: asyncio.StreamReader) -> list[str] | None:
    """The lines of a message head, or None at a clean end of stream before any byte."""
    lines: list[str] = []
    size = 0
    while True:
        line = await _readline(reader)
        if not line:
            if not lines:
                return None
            raise HttpError("connection closed inside the message head")
        size += len(line)
        if size > MAX_HEAD:
            raise HttpError("message head too large")
        text = line.decode("latin-1").rstrip("\r\n")
        if not text:
            if not lines:
                continue  # tolerate blank lines between messages
            return lines
        lines.append(text)


def _parse_headers(lines: list[str]) -> Headers:
    h = Headers()
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HttpError(f"malformed header line {line[:60]!r}")
        h.add(name, value.strip())
    return h


async def read_request(reader: asyncio.StreamReader, budget: BodyBudget | None = None) -> Request | None:
    """The next request on a connection. With a budget, its body's bytes are counted in it as they
    arrive (BodiesTooLarge when they do not fit); the caller gives `req.held` back when done."""
    lines = await _read_head(reader)
    if lines is None:
        return None
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise HttpError(f"malformed request line {lines[0][:80]!r}")
    headers = _parse_headers(lines[1:])
    req = Request(parts[0], parts[1], parts[2], headers)
    if budget is None:
        req.body = b"".join([c async for c in iter_body(reader, headers, until_close=False)])
        return req
    chunks: list[bytes] = []
    try:
        async for chunk in iter_body(reader, headers, until_close=False):
            budget.take(len(chunk))
            req.held += len(chunk)
            chunks.append(chunk)
    except BaseException:
        budget.give(req.held)
        raise
    req.body = b"".join(chunks)
    return req


async def read_response_head(reader: asyncio.StreamReader) -> ResponseHead:
    lines = await _read_head(reader)
    if lines is None:
        raise HttpError("connection closed before a response")
    version, _, rest = lines[0].partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/") or not (code.isascii() and code.isdigit()):  # ('²00': int() refuses)
        raise HttpError(f"malformed status line {lines[0][:80]!r}")
    return ResponseHead(int(code), reason, version, _parse_headers(lines[1:]))


async def iter_body(
    reader: asyncio.StreamReader, headers: Headers, *, until_close: bool
) -> AsyncIterator[bytes]:
    """The body's bytes as they arrive (chunked, Content-Length, or - for responses - until close)."""
    te = (headers.get("transfer-encoding") or "").lower()
    if "chunked" in te:
        total = 0
        while True:
            size_line = await _readline(reader)
            if not size_line:
                raise HttpError("connection closed inside a chunked body")
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError:
                raise HttpError(f"bad chunk size {size_line[:20]!r}") from None
            if size == 0:
                while (await _readline(reader)).strip():  # trailers
                    pass
                return
            total += size
            if total > MAX_BODY:
                raise HttpError("body too large")
            data = await reader.readexactly(size)
            await reader.readexactly(2)
            yield data
    length = headers.get("content-length")
    if length is not None:
        try:
            n = int(length)
        except ValueError:
            raise HttpError(f"bad Content-Length {length!r}") from None
        if n < 0 or n > MAX_BODY:
            raise HttpError(f"bad Content-Length {length!r}")
        remaining = n
        while remaining:
            data = await reader.read(min(remaining, 65536))
            if not data:
                raise HttpError("connection closed inside the body")
            remaining -= len(data)
            yield data
        return
    if until_close:
        while data := await reader.read(65536):
            yield data


def encode_head(start: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [start] + [f"{k}: {v}" for k, v in headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def encode_response(status: int, headers: list[tuple[str, str]], body: bytes = b"") -> bytes:
    hs = [*headers, ("Content-Length", str(len(body)))]
    return encode_head(f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}", hs) + body


def encode_chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n" if data else b""


LAST_CHUNK = b"0\r\n\r\n"


@dataclass
class Url:
    scheme: str
    host: str
    port: int
    target: str  # path and query
    text: str

    @classmethod
    def parse(cls, url: str) -> Url:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(parts.scheme, parts.hostname, port, target, url)

    @property
    def authority(self) -> str:
        default = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == default else f"{host}:{self.port}"


async def open_request(
    url: Url, method: str, headers: list[tuple[str, str]], body: bytes = b"", *, timeout: float | None = None
) -> tuple[ResponseHead, asyncio.StreamReader, asyncio.StreamWriter]:
    """Send one request on a fresh connection; returns the response head and the open streams.

    The caller reads the body with `iter_body(reader, head.headers, until_close=True)` and closes
    the writer. One connection per request keeps concurrent POSTs and long SSE streams independent.
    """
    ctx = ssl.create_default_context() if url.scheme == "https" else None
    connect = asyncio.open_connection(
        url.host, url.port, ssl=ctx, server_hostname=url.host if ctx else None, limit=MAX_HEAD * 16
    )
    reader, writer = await asyncio.wait_for(connect, timeout)
    hs = [("Host", url.authority), *headers, ("Content-Length", str(len(body))), ("Connection", "close")]
    writer.write(encode_head(f"{method} {url.target} HTTP/1.1", hs) + body)
    await writer.drain()
    head = await asyncio.wait_for(read_response_head(reader), timeout)
    return head, reader, writer
