"""What MCP over HTTP puts in headers and bodies, read without any HTTP library.

Headers are kept as they crossed the wire: a list of `[name, value]` pairs (order and repeats
kept), names compared case-insensitively, values case-sensitively (RULES.md MCP742). Captures
written by older code may hold a dict; every helper here accepts both.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Any
from urllib.parse import urljoin, urlsplit

import orjson

from tracer.classify import parse_json

# Request headers that only an MCP client sends: their presence makes an exchange MCP traffic.
HTTP, HTTP_SSE = "http", "http+sse"  # capture transports: Streamable HTTP, the 2024-11-05 HTTP+SSE
MCP_REQUEST_HEADERS = ("mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name")
SSE_TYPE = "text/event-stream"
JSON_TYPE = "application/json"
SENTINEL_PREFIX = "=?base64?"
SENTINEL_SUFFIX = "?="


_PAIR_TYPES = (list, tuple)


def pairs(headers: Any) -> Iterable[tuple[str, str]]:
    if not headers:
        return ()
    if isinstance(headers, dict):
        return headers.items()
    return ((p[0], p[1]) for p in headers)


def join_url(base: str, uri: str) -> str:
    """URI (an HTTP+SSE `endpoint` event's data: the server's) resolved against BASE; as it is when
    it cannot be (`http://[x/`, an authority urllib refuses with ValueError: one hostile event cost
    the whole session's records before)."""
    try:
        return urljoin(base, uri)
    except ValueError:
        return uri


def header(headers: Any, name: str) -> str | None:
    """The first value of header NAME (case-insensitive), or None: the one lookup of a header in a
    recorded header list (`[[name, value], ...]`, or an older capture's `{name: value}`) or in
    parsed wire headers (`[(name, value), ...]`). Entries of another shape are skipped and a
    non-string value reads as None, so a hand-made or foreign header list never raises."""
    if isinstance(headers, dict):
        headers = headers.items()
    elif not isinstance(headers, list | tuple):
        return None
    name = name.lower()
    for h in headers:
        if type(h) in _PAIR_TYPES and len(h) == 2:
            k, v = h
            if type(k) is str and k.lower() == name:
                return v if type(v) is str else None
    return None


def header_values(headers: Any, name: str) -> list[str]:
    name = name.lower()
    return [v for k, v in pairs(headers) if k.lower() == name]


def headers_with_prefix(headers: Any, prefix: str) -> list[tuple[str, str]]:
    prefix = prefix.lower()
    return [(k, v) for k, v in pairs(headers) if k.lower().startswith(prefix)]


def media_type(content_type: str | None) -> str:
    """`text/event-stream; charset=utf-8` -> `text/event-stream` (lowercase; "" when absent)."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


def is_sse(content_type: str | None) -> bool:
    return media_type(content_type) == SSE_TYPE


def is_json(content_type: str | None) -> bool:
    mt = media_type(content_type)
    return mt == JSON_TYPE or mt.endswith("+json")


def accept_lists(accept: str | None, wanted: str) -> bool:
    """Whether an Accept header lists WANTED explicitly (a `*/*` wildcard is not listing it)."""
    if not accept:
        return False
    return any(media_type(part) == wanted for part in accept.split(","))


def has_mcp_headers(headers: Any) -> bool:
    return any(
        k.lower() in MCP_REQUEST_HEADERS or k.lower().startswith("mcp-param-") for k, _ in pairs(headers)
    )


def looks_jsonrpc(body: bytes | str | None) -> bool:
    """Whether a body is meant as JSON-RPC: a JSON object with a `jsonrpc` member, or an array whose
    first element is one (a batch). A wrong `jsonrpc` value still counts: it is a finding, not
    somebody else's traffic."""
    if not body:
        return False
    head = body.lstrip()[:1]
    if head not in (b"{", b"[", "{", "["):
        return False
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        # JSON orjson refuses (a 65-bit id, a lone surrogate escape) is JSON-RPC all the same, and a
        # body that names `jsonrpc` but does not parse (cut, not UTF-8) is a broken message: both are
        # recorded, so the analysis can say what is wrong with them.
        obj, problem, _ = parse_json(body)
        if problem is not None:
            raw = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
            return b'"jsonrpc"' in raw[:4096]
    if type(obj) is list:
        obj = obj[0] if obj else None
    return type(obj) is dict and "jsonrpc" in obj


def split_url(url: str) -> tuple[str, str, str]:
    """(scheme://authority, path, query) of an absolute URL; path "/" when empty."""
    try:
        u = urlsplit(url)
    except ValueError:
        return "", url, ""
    return f"{u.scheme}://{u.netloc}" if u.scheme else u.netloc, u.path or "/", u.query


def endpoint_of(url: str) -> str:
    """The URL without its query: what identifies an MCP endpoint."""
    origin, path, _ = split_url(url)
    return origin + path


def authority_path(url: str) -> str:
    """`127.0.0.1:8765/mcp` for naming connections."""
    try:
        u = urlsplit(url)
    except ValueError:
        return url
    return f"{u.netloc}{u.path or '/'}"


# -- Mcp-Name / Mcp-Param-* value encoding (2026-07-28 streamable-http "Value Encoding") -----------


def needs_encoding(value: str) -> bool:
    """A value that cannot travel as a plain header value and MUST use the Base64 sentinel:
    non-ASCII, control characters, leading/trailing whitespace, or a literal that looks like the
    sentinel itself."""
    if value != value.strip(" \t"):
        return True
    if any(ord(c) > 0x7E or (ord(c) < 0x20 and c != "\t") or ord(c) == 0x7F for c in value):
        return True
    return value.startswith(SENTINEL_PREFIX) and value.endswith(SENTINEL_SUFFIX)


def decode_header_value(value: str) -> tuple[str | None, str | None]:
    """(decoded value, problem). Plain values come back as they are; a sentinel value is decoded.
    A problem is a sentence: a sentinel in the wrong case, invalid Base64, or not UTF-8 inside."""
    lower = value.lower()
    if lower.startswith(SENTINEL_PREFIX) and lower.endswith(SENTINEL_SUFFIX) and len(value) >= 11:
        if not (value.startswith(SENTINEL_PREFIX) and value.endswith(SENTINEL_SUFFIX)):
            return None, f"the Base64 sentinel must be exactly lowercase '=?base64?…?=', got {value[:12]!r}…"
        inner = value[len(SENTINEL_PREFIX) : -len(SENTINEL_SUFFIX)]
        try:
            raw = base64.b64decode(inner, validate=True)
        except (binascii.Error, ValueError):
            return None, f"{inner[:40]!r} is not valid Base64"
        try:
            return raw.decode("utf-8"), None
        except UnicodeDecodeError:
            return None, "the Base64 value does not decode to UTF-8"
    return value, None


def header_text(value: Any) -> str:
    """A JSON primitive as a header carries it: strings as is, integers in decimal, booleans
    lowercase (streamable-http "Type conversion")."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if type(value) is float and value.is_integer():
        return str(int(value))
    return str(value)
