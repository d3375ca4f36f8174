"""W3C Trace Context in MCP's `params._meta` (SEP-414: the unprefixed keys `traceparent` and
`tracestate`), read from untrusted messages: a value that is not valid W3C is ignored."""

from __future__ import annotations

import re
from typing import Any

_TRACEPARENT = re.compile(r"\A([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?\Z")
_TS_KEY = re.compile(
    r"\A(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})\Z"
)
_TS_VALUE = re.compile(r"\A[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]\Z")
_ZERO_TRACE = b"\0" * 16
_ZERO_SPAN = b"\0" * 8


def traceparent(value: Any) -> tuple[bytes, bytes, bool] | None:
    """(trace id, parent span id, sampled) of a valid W3C traceparent, else None."""
    if type(value) is not str:
        return None
    m = _TRACEPARENT.match(value)
    if m is None:
        return None
    version, trace, parent, flags, rest = m.groups()
    if version == "ff" or (version == "00" and rest):
        return None
    tid, pid = bytes.fromhex(trace), bytes.fromhex(parent)
    if tid == _ZERO_TRACE or pid == _ZERO_SPAN:
        return None
    return tid, pid, bool(int(flags, 16) & 1)


def valid_tracestate(value: Any) -> bool:
    """A W3C tracestate: at most 32 list members `key=value`, keys unique."""
    if type(value) is not str or len(value) > 512:
        return False
    keys = set()
    members = [p.strip(" \t") for p in value.split(",")]
    members = [p for p in members if p]
    if not members or len(members) > 32:
        return False
    for member in members:
        key, sep, val = member.partition("=")
        if not sep or not _TS_KEY.match(key) or not _TS_VALUE.match(val) or key in keys:
            return False
        keys.add(key)
    return True
