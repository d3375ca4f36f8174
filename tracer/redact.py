"""Credential redaction for HTTP headers stored in captures."""

from __future__ import annotations

from typing import Any

# Header names whose values are credentials. Compared case-insensitively.
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "x-api-key",
        "api-key",
        "x-auth-token",
        "x-access-token",
        "openai-api-key",
        "anthropic-api-key",
    }
)
REDACTED = "<redacted>"


def is_secret(name: str) -> bool:
    n = name.lower()
    return n in SECRET_HEADERS or n.endswith("-api-key") or n.endswith("-token")


def redact_value(name: str, value: str) -> str:
    # Keep the auth scheme ("Bearer") so a reader can still see which kind of credential was sent.
    if name.lower() in ("authorization", "proxy-authorization") and " " in value:
        return value.split(" ", 1)[0] + " " + REDACTED
    return REDACTED


def redact_headers(headers: Any) -> Any:
    """Headers are stored as a list of [name, value] pairs (order and repeats kept)."""
    if isinstance(headers, dict):
        return {k: (redact_value(k, v) if is_secret(k) else v) for k, v in headers.items()}
    out = []
    for pair in headers:
        name, value = pair[0], pair[1]
        out.append([name, redact_value(name, value) if is_secret(name) and isinstance(value, str) else value])
    return out
