"""Credential redaction for HTTP headers stored in captures."""

from __future__ import annotations

import re
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


_extra: frozenset[str] | None = None  # the project config's `redact` list, read on first use


def extra_secret_headers() -> frozenset[str]:
    global _extra
    if _extra is None:
        from tracer.config import redact_from_config

        _extra = redact_from_config()
    return _extra


def is_secret(name: str) -> bool:
    n = name.lower()
    return (n in SECRET_HEADERS or n.endswith("-api-key") or n.endswith("-token")
            or n in (_extra if _extra is not None else extra_secret_headers()))


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


# Command-line arguments that carry credentials (host configs often pass API keys as arguments).
_SECRET_NAME = re.compile(r"(?i)(token|secret|passw(or)?d|api[-_]?key|access[-_]?key|private[-_]?key|"
                          r"credential|client[-_]?secret|bearer|cookie)")
_ENV_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_URL_USERINFO = re.compile(r"(://[^/:@\s]+):[^@/\s]+@")
_AUTH_VALUE = re.compile(r"(?i)^((proxy-)?authorization\s*:\s*|bearer\s+)")


def redact_argv(argv: list[str]) -> list[str]:
    """A command line fit for a capture header: values of options named like credentials
    (`--api-key X`, `--token=X`), `NAME=value` assignments (`env API_KEY=... server`),
    `Authorization:`/`Bearer` values and passwords in URLs are replaced by `<redacted>`."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            hide_next = False
            if not arg.startswith("-"):
                out.append(REDACTED)
                continue
        if arg.startswith("-"):
            name, eq, _value = arg.partition("=")
            if _SECRET_NAME.search(name):
                if eq:
                    out.append(f"{name}={REDACTED}")
                else:
                    out.append(arg)
                    hide_next = True
                continue
        else:
            env = _ENV_ASSIGNMENT.match(arg)
            if env and _SECRET_NAME.search(env.group(1)):
                out.append(f"{env.group(1)}={REDACTED}")
                continue
            auth = _AUTH_VALUE.match(arg)
            if auth:
                out.append(auth.group(0) + REDACTED)
                continue
        out.append(_URL_USERINFO.sub(r"\1:" + REDACTED + "@", arg))
    return out
