"""What the analyser hands back: one stream of typed events, the same for every consumer.

`Analyser.feed(record)` and `Analyser.finish()` return these, in the order they happened:

- `Analysed` (tracer.model): a message record's analysis; a batch's members come with it
  (`members`), each with its own findings. A message record always gives exactly this one event,
  returned as itself (an Analysed iterates as its own one event) rather than in a tuple: messages
  are ~99% of records, and a tuple and a loop each cost more than the test for it. Every other
  record gives a tuple (often empty).
- `Findings`: findings that belong to no message: an HTTP exchange without a JSON-RPC body, an SSE
  stream event (`rec` is that record).
- `SessionClosed`: a session ended (its connection closed, a new recording's header, the end of
  input), with the findings of the end-of-session rules (never-answered requests...). The session
  itself comes with it, closed and no longer written, for a summary to read.

A consumer is one loop (`for ev in analyser.feed(rec)` works for every record), or, on a hot
path, the message first:

    a = analyser.feed(rec)
    if a.__class__ is Analysed: ...          # a message record: nearly every one
    else:
        for ev in a: ...                     # Findings, SessionClosed

`all_findings(ev)` gives every finding of any event, in report order.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tracer.model import Analysed, Finding, Record

if TYPE_CHECKING:
    from tracer.session import Session


@dataclass(slots=True, eq=False)
class Findings:
    """Findings of a record that is not a message (an HTTP exchange's, an SSE stream event's)."""

    rec: Record
    findings: list[Finding]


@dataclass(slots=True, eq=False)
class SessionClosed:
    """A session ended, with its end-of-session findings.

    `name` is the session's name among the analysis's sessions: its connection, or `conn#2`,
    `conn#3`... when a later recording in the same input reuses the connection name; None for a
    session that carried no message (a connection of bare HTTP exchanges or events), which no
    report counts. `t_ns` is when it ended (what the end rules measured ages against)."""

    session: Session
    findings: list[Finding]
    t_ns: int
    name: str | None = None
    cell: str | None = None  # its compatibility cell (Session.compatibility), with `name`


Event = Analysed | Findings | SessionClosed
Events = Analysed | tuple[Event, ...]  # what Analyser.feed returns (an Analysed is its own 1 event)


def all_findings(ev: Event) -> Iterator[Finding]:
    """Every finding an event carries, in the order lint reports them (a batch: its own, then each
    member's)."""
    yield from ev.findings
    if ev.__class__ is Analysed and ev.members:
        for member in ev.members:
            yield from member.findings


__all__ = ["Analysed", "Event", "Events", "Findings", "SessionClosed", "all_findings"]
