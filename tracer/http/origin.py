"""Whether a request's `Origin` is foreign to the server it reached (MCP706), from values that came
off the wire: nothing here trusts a header to parse."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def host_of(url: str) -> str:
    """The lowercased host of an absolute URL ("" when it has none or does not parse)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def address_host(addr: str | None) -> str:
    """The host of an "ip:port" / "[v6]:port" address as the HTTP door records it."""
    if not addr or type(addr) is not str:
        return ""
    if addr.startswith("["):
        return addr[1:].split("]", 1)[0].lower()
    return addr.rsplit(":", 1)[0].lower() if addr.count(":") == 1 else addr.lower()


def is_loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


def foreign_origin(origin: str, url: str, server: str | None) -> str | None:
    """Why ORIGIN is foreign to a request for URL that reached SERVER ("ip:port" or None), or None
    when it is not: a loopback page (a local inspector), the endpoint's own host, the literal
    `null` (opaque origins: nothing to compare) and an Origin without a host are not judged."""
    o_host = host_of(origin) if origin != "null" else ""
    if not o_host or is_loopback(o_host):
        return None
    reached = address_host(server)
    if reached and is_loopback(reached):
        return f"is not loopback while the server was reached at {server}"
    target = host_of(url)
    if o_host != target:
        return f"differs from the endpoint's host {target or url!r}"
    return None
