"""The one writer of session state: nothing else changes a `Session` (tracer.session).

The analyser calls it from its pipeline, in the order the rules need (tracer.analyser `_one`):

- before the rules: `match_response` (an answer leaves the pending table and learns its request),
  then era labelling (tracer.era, which only reads), `register_request` (a request enters it,
  an MRTR retry links to its round), then the transport's updater (`updaters_for`: HTTP exchanges,
  stdio framing), so the rules see what this record established about pairing and transport;
- after the rules: `after_rules` (counters, the handshake, the discover probe, cancels, tracking),
  so a rule judges a message against the session as it was before it;
- for a record that is no message: `http_answer` (an HTTP error page answers a request) and the
  transport's updater;
- when a session ends: `close_session`, before the end-of-session rules read it.

Rules, the summary, the viewer and the exporters read the session through tracer.session,
tracer.state and the read-only queries (tracer.pairing, tracer.tracking, tracer.http.state).
The calls are plain module functions, not a dispatcher: this is the hot path of every analysis.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from tracer.http.state import HTTP_TRANSPORTS
from tracer.update import http, stdio
from tracer.update.pairing import match_response, register_request
from tracer.update.session import after_rules, close_session, http_answer

# Per-transport updaters: (transports, updater, the id block of the rules that read its facts, or
# None: always). HTTP facts change the pending table (a client closing a stream cancels its
# request), so the HTTP updater always runs; the stdio framing facts are read only by the stdio
# rules, MCP8xx (a lint with `--select MCP1,MCP2` does not pay for them).
UPDATERS: tuple[tuple[frozenset[str], Callable, str | None], ...] = (
    (frozenset(HTTP_TRANSPORTS), http.observe, None),
    (frozenset({"stdio"}), stdio.observe, "MCP8"),
)


def updaters_for(rule_ids: Iterable[str]) -> tuple[tuple[frozenset[str], Callable], ...]:
    """The transport updaters an analysis with these rules runs, as (transports, fn)."""
    ids = tuple(rule_ids)
    return tuple(
        (ts, fn) for ts, fn, block in UPDATERS if block is None or any(i.startswith(block) for i in ids)
    )


__all__ = [
    "UPDATERS",
    "after_rules",
    "close_session",
    "http_answer",
    "match_response",
    "register_request",
    "updaters_for",
]
