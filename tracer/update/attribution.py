"""What the HTTP door's attribution notes (tracer.http.tracks) tell the analysis.

`unattributed`:
The HTTP door could not tell which of several session-less legacy sessions a message belongs to; it
put the message on a connection of its own and named the candidates. Each candidate may then lack a
message of its own, so what that message would have settled is no longer judged as missing there:
a cancel's request is not "never answered" (MCP211), nor is a server's request an answer naming
its id may be the answer to, and a handshake is not "never initialized" (MCP407, MCP409). Nothing
is asserted about which candidate it was.

`session-continued`: a connection carries the rest of one of the sessions it names, which one
cannot be told. When their handshakes established the same things (versions, capabilities, client
and server info: concurrent runs of one client against one server do), the continued session
has that handshake too, whichever it was, and is judged by it (a request the server's capabilities
do not allow is still found); else it has none and nothing is judged by one.
"""

from __future__ import annotations

from dataclasses import replace

from tracer.classify import id_key
from tracer.model import Direction, Record
from tracer.session import BoundedMap, InitState, Session

HANDSHAKES_CAP = 4096  # handshakes of ended sessions a later continued one may still name
CONTINUING_CAP = 1024  # continued sessions waiting for a handshake's answer (the oldest give up)

CANDIDATES_MAX = 64  # candidate names read from one event (untrusted input: a file may hold more)


def unattributed(rec: Record, data: dict, sessions: dict[str, Session]) -> str:
    """Mark the candidate sessions DATA names; returns the reason, for the connection's own session."""
    why = data.get("why")
    why = why if type(why) is str and why else "not attributable to one session"
    names = data.get("candidates")
    names = names[:CANDIDATES_MAX] if type(names) is list else ()
    cancels = data.get("cancels")
    key = id_key(cancels) if cancels is not None and type(cancels) is not float else None
    answers = data.get("answers")
    asked = id_key(answers) if type(answers) is int or type(answers) is str else None
    initialized = data.get("method") == "notifications/initialized"
    for name in names:
        s = sessions.get(name) if type(name) is str else None
        if s is None:
            continue
        if key is not None:
            req = s.pending.get((Direction.C2S, key))
            if req is not None:
                req.maybe_cancelled = True
        if asked is not None:
            req = s.pending.get((Direction.S2C, asked))
            if req is not None:
                req.maybe_cancelled = True  # (its answer may be that message: not "never answered")
        if initialized and s.init is not None and s.init.initialized_seq is None:
            s.init.initialized_seq = rec.seq  # (one of them may have sent it: not judged as missing)
    return why


def _facts(init: InitState) -> tuple:
    return (
        init.requested_version,
        init.negotiated_version,
        init.client_caps,
        init.client_info,
        init.server_caps,
        init.server_info,
    )


def continued(
    rec: Record, data: dict, sessions: dict[str, Session], known: BoundedMap
) -> tuple[InitState | None, bool]:
    """The handshake the continued session DATA (the note REC) announces has, if every session it
    may continue had the same one (KNOWN: the handshakes of those already ended, by connection),
    and whether that is settled: False while one of them still awaits its answer (a file's later
    record may hold it: then ask again)."""
    names = data.get("of")
    if type(names) is not list or not names or len(names) > CANDIDATES_MAX or data.get("partial"):
        return None, True
    inits = []
    for name in names:
        if type(name) is not str:
            return None, True
        s = sessions.get(name)
        init = s.init if s is not None else known.get(name)
        if s is not None and init is not None:
            known.put(name, init)  # (the session ends here: a later continued one may name it)
        inits.append(init)
    if any(i is None or i.error_seq is not None for i in inits):
        return None, True
    if any(i.result_seq is None for i in inits):
        return None, False
    first = _facts(inits[0])
    if any(_facts(i) != first for i in inits[1:]):
        return None, True
    # (when one of them had not said initialized yet, where this one's went cannot be told: the
    # notification may be on another connection, so its absence is not judged here)
    said = all(i.initialized_seq is not None for i in inits)
    init = replace(
        inits[0],
        early_request=None,
        modern_before=0,
        initialized_seq=inits[0].initialized_seq if said else rec.seq,
    )
    return init, True
