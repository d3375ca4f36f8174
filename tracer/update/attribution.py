"""What an `unattributed` event (tracer.http.tracks) tells the sessions it names.

The HTTP door could not tell which of several session-less legacy sessions a message belongs to; it
put the message on a connection of its own and named the candidates. Each candidate may then lack a
message of its own, so what that message would have settled is no longer judged as missing there:
a cancel's request is not "never answered" (MCP211), a handshake is not "never initialized"
(MCP407, MCP409). Nothing is asserted about which candidate it was.
"""

from __future__ import annotations

from tracer.classify import id_key
from tracer.model import Direction, Record
from tracer.session import Session

CANDIDATES_MAX = 64  # candidate names read from one event (untrusted input: a file may hold more)


def unattributed(rec: Record, data: dict, sessions: dict[str, Session]) -> str:
    """Mark the candidate sessions DATA names; returns the reason, for the connection's own session."""
    why = data.get("why")
    why = why if type(why) is str and why else "not attributable to one session"
    names = data.get("candidates")
    names = names[:CANDIDATES_MAX] if type(names) is list else ()
    cancels = data.get("cancels")
    key = id_key(cancels) if cancels is not None and type(cancels) is not float else None
    initialized = data.get("method") == "notifications/initialized"
    for name in names:
        s = sessions.get(name) if type(name) is str else None
        if s is None:
            continue
        if key is not None:
            req = s.pending.get((Direction.C2S, key))
            if req is not None:
                req.maybe_cancelled = True
        if initialized and s.init is not None and s.init.initialized_seq is None:
            s.init.initialized_seq = rec.seq  # (one of them may have sent it: not judged as missing)
    return why
