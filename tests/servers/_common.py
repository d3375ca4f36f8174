"""Shared by the fake stdio servers: read JSON-RPC lines from stdin, answer requests.

Fake servers exist only for misbehaviour no real server shows on purpose (a banner on stdout, a
crash mid-line, bad UTF-8...). Each one is a small script; this module holds the honest part.
Every server writes raw bytes to fd 1 so the test controls exactly what is on the wire.
"""

from __future__ import annotations

import json
import os
import sys


def out(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def err(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(2, view) :]


def requests():
    """Each request (a dict with an id) read from stdin, until EOF. Other lines are skipped."""
    for line in sys.stdin.buffer:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and "method" in msg and "id" in msg:
            yield msg


def result(msg: dict, value: dict, *, eol: bytes = b"\n") -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": value}, separators=(",", ":")).encode() + eol
    )


def answer(msg: dict) -> bytes:
    """The answer an echo server gives: the request's method and params back."""
    return result(msg, {"method": msg["method"], "params": msg.get("params", {})})
