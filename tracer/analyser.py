"""The one analyser: classify -> pair -> era -> rules -> session update, one record at a time.

The same code serves live capture (feed records as they arrive) and offline lint (stream a file).
Memory stays flat apart from the pending-request table: analysed messages are handed back and not
kept, sessions are dropped when their connection closes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tracer.catalog.registry import Rule
from tracer.classify import Classified, classify_common, classify_raw
from tracer.dispatch import RuleSet
from tracer.era import label_era, possible_versions, session_versions
from tracer.events import Event, Events, Findings, SessionClosed
from tracer.model import ERA_UNKNOWN as _ERA_UNKNOWN  # (enum members as globals: tracer.model)
from tracer.model import KIND_BATCH as _KIND_BATCH
from tracer.model import KIND_ERROR as _KIND_ERROR
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import REC_EVENT as _REC_EVENT
from tracer.model import REC_HEADER as _REC_HEADER
from tracer.model import REC_HTTP as _REC_HTTP
from tracer.model import REC_MESSAGE as _REC_MESSAGE
from tracer.model import Analysed, Finding, Kind, Record, Severity
from tracer.session import BoundedMap, Session
from tracer.state.shared import SharedFacts
from tracer.update import (
    after_rules,
    close_session,
    http_answer,
    match_response,
    register_request,
    updaters_for,
)
from tracer.update.attribution import CONTINUING_CAP, HANDSHAKES_CAP, continued, unattributed

_RESPONSES = (Kind.RESULT, Kind.ERROR)
_CLOSE_EVENTS = frozenset({"closed", "exit", "session-closed", "connection-closed"})


STARTED_MAX = 1024


def tee_session(conn: str) -> bool:
    """A session `mcptrace stdio` names `stdio-<server pid>` and opens with its `started` event: no
    other process of a host gets that name while it runs, and the tee ends it with its own `exit`
    event. So a second tee appending to the same file at once (a host starting the server twice)
    writes its header in the middle of this session, which goes on: a header does not end it. (A
    session without its `started` event, a foreign or hand-made file, ends at a header as any.)"""
    return conn.startswith("stdio-") and conn[6:].isdigit() and conn.isascii()


class Analyser:
    def __init__(self, rules: RuleSet | Iterable[Rule] | None = None):
        self.ruleset = rules if isinstance(rules, RuleSet) else RuleSet(rules)
        self.sessions: dict[str, Session] = {}
        self.header: dict | None = None
        self.records = 0
        self.messages = 0
        self.last_t_ns = 0
        self.session_cells: dict[str, str] = {}  # conn -> compatibility cell, for closed sessions
        # what the sessions of one analysis share, e.g. a stateless HTTP endpoint's tools (tracer.state.shared)
        self.shared = SharedFacts()
        # the transports' session updaters (tracer.update), minus those no selected rule reads
        self._observers = updaters_for(r.id for r in self.ruleset.rules)
        self._observers_of: dict[str, tuple] = {}  # transport -> its observers (see _message_observers)
        self._runners = self.ruleset.runners  # the compiled rule runners by shape (tracer.dispatch)
        # a tee's sessions (tee_session): connections whose `started` event came before their
        # session (at most STARTED_MAX waiting), then the open sessions that had one
        self._started: dict[str, None] = {}
        self._tee_sessions: set[str] = set()
        # HTTP connections not attributable to one session (tracer.http.tracks): kept out of
        # `sessions`, so the hot path never looks for them (see _loose)
        self._loose: dict[str, Session] = {}
        self._handshakes = BoundedMap(HANDSHAKES_CAP)  # (tracer.update.attribution.continued)
        self._continuing = BoundedMap(CONTINUING_CAP)  # conn -> its session-continued note, waiting

    # -- public API --------------------------------------------------------------------------
    # Every consumer is one loop over what these return (tracer.events): lint, export, the tee,
    # the addon, the viewer. A message record (~99% of records) gives its Analysed itself, which
    # iterates as its own one event: no tuple, no generator, no loop per message for a consumer
    # that tests for it first (bench_contract measures what each would cost).

    def feed(self, rec: Record) -> Events:
        """Analyse one record: its events, in order (tracer.events). A message record gives its
        `Analysed` (itself a sequence of one event); any other record a tuple: `Findings` of an
        HTTP or SSE record without a message, a `SessionClosed` per session a close event or a new
        recording's header ends, or nothing."""
        self.records += 1
        if rec.t_ns > self.last_t_ns:
            self.last_t_ns = rec.t_ns
        rtype = rec.type
        if rtype is _REC_MESSAGE:
            return self._message(rec)
        if rtype is _REC_EVENT and rec.data:
            note = rec.data.get("event")
            if note == "unattributed":
                self._unattributed(rec)
            elif note == "session-continued":
                self._continued(rec, self.session(rec))
        if rtype is _REC_HEADER:
            # another recording appended to the file (a host restarted its server): the sessions
            # of the earlier one are over, even where a connection name comes back (the proxy's
            # client→upstream names do); but not a tee's own (see tee_session)
            out = self.end_recording() if self.header is not None else ()
            self.header = rec.data
            return out
        if rtype is _REC_HTTP and rec.http is not None:
            http_answer(rec, self.sessions.get(rec.conn))
        if self._observers:
            self._observe(rec, None, None)
        out: tuple[Event, ...] = ()
        if rec.http is not None and self.ruleset.http_rules:
            loose = self._run_http_rules(rec, None, self.sessions.get(rec.conn) or self.session(rec))
            if loose:
                out = (Findings(rec, loose),)
        if rtype is _REC_EVENT and rec.data:
            event = rec.data.get("event")
            if event in _CLOSE_EVENTS or (event == "started" and rec.conn in self.sessions):
                # (a server started on a connection whose session is still open: a tee killed before
                # its exit event, its server's pid given again to a later one; that session is over)
                closed = self.close(rec.conn, rec.t_ns)
                if closed is not None:
                    out += (closed,)
            if event == "started" and tee_session(rec.conn):
                started = self._started
                started[rec.conn] = None
                if len(started) > STARTED_MAX:  # (started servers that never said a word)
                    del started[next(iter(started))]
        return out

    def close(self, conn: str, t_ns: int | None = None) -> SessionClosed | None:
        """A connection closed: run the end-of-session rules and forget its state (None: it had no
        session)."""
        s = self.sessions.pop(conn, None)
        if s is None:
            s = self._loose.pop(conn, None) if self._loose else None
            if s is None:
                return None
        self._tee_sessions.discard(conn)
        return self._end(s, t_ns)

    def end_recording(self) -> tuple[SessionClosed, ...]:
        """A new recording's header: every open session ends, in the order they began, but a tee's
        own (tee_session), which its exit event, its server's next start or the end of input ends."""
        last = self.last_t_ns
        keep = self._tee_sessions
        ends = (self.close(conn, last) for conn in [*self.sessions, *self._loose] if conn not in keep)
        return tuple(ev for ev in ends if ev is not None)

    def keeps_at_header(self, conn: str) -> bool:
        """Whether a new recording's header leaves CONN's open session open (end_recording)."""
        return conn in self._tee_sessions

    def finish(self) -> tuple[SessionClosed, ...]:
        """End of input: every session still open is closed, in the order they began."""
        last = self.last_t_ns
        ends = (self.close(conn, last) for conn in [*self.sessions, *self._loose])
        return tuple(ev for ev in ends if ev is not None)

    def run(self, records: Iterable[Record]) -> Iterator[Event]:
        """Analyse a stream: every event, then the end of input's."""
        feed = self.feed
        for rec in records:
            a = feed(rec)
            if a.__class__ is Analysed:
                yield a
            else:
                yield from a
        yield from self.finish()

    # -- pipeline ----------------------------------------------------------------------------

    def session(self, rec: Record) -> Session:
        s = self.sessions.get(rec.conn)
        if s is None and self._loose:
            s = self._loose.get(rec.conn)
        if s is None:
            if self._started and self._started.pop(rec.conn, 0) is None:
                self._tee_sessions.add(rec.conn)
            s = self.sessions[rec.conn] = Session(
                rec.conn, transport=rec.transport, first_seq=rec.seq, shared=self.shared
            )
        return s

    def _continued(self, note: Record, s: Session) -> None:
        """A connection carries the rest of one of several sessions (tracer.http.tracks): it has
        their handshake when they all had the same one. One still unanswered at the note (its
        answer came later in the file) is waited for, until the next messages of the connection."""
        if s.init is not None or s.unattributed is not None:
            self._continuing.pop(note.conn, None)
            return
        init, settled = continued(note, note.data, self.sessions, self._handshakes)
        if init is not None:
            s.init = init
            self._handshakes.put(note.conn, init)
        if init is not None or settled:
            self._continuing.pop(note.conn, None)
        elif note.conn not in self._continuing:
            self._continuing.put(note.conn, note)

    def _message(self, rec: Record) -> Analysed:
        self.messages += 1
        s = self.sessions.get(rec.conn)
        if s is None:
            s = self.session(rec)
            if s.unattributed is not None:
                return self._loose_message(rec, s)
        if self._continuing:  # (empty unless a continued session's handshake was still unanswered)
            note = self._continuing.get(rec.conn)
            if note is not None:
                self._continued(note, s)
        common = classify_common(rec.raw)
        if common is not None:  # nearly every message: one well-formed object
            kind, obj, method, msg_id, idkey = common  # (a call with *common costs more)
            return self._one(Analysed(rec, kind, obj, method, msg_id, idkey), s)
        c = classify_raw(rec.raw)
        if c.kind is _KIND_BATCH:
            batch = self._analysed(rec, c)
            label_era(batch, s)
            if self._observers:
                self._observe(rec, batch, s)
            batch.members = [
                self._one(self._analysed(rec, mc), s, batch_seq=rec.seq) for mc in c.members or ()
            ]
            if batch.members:
                # the batch speaks what its best-labelled member speaks: the last one that knows its
                # version (a batch [ping, initialize] is labelled by the initialize it carries)
                best = next((x for x in reversed(batch.members) if x.version is not None), batch.members[0])
                batch.era, batch.version, batch.era_reason = best.era, best.version, best.era_reason
            self._run_rules(batch, s)
            if rec.http is not None and self.ruleset.http_rules:
                self._run_http_rules(rec, batch, s)
            s.last_t_ns = rec.t_ns
            return batch
        return self._one(self._analysed(rec, c), s)

    @staticmethod
    def _analysed(rec: Record, c: Classified) -> Analysed:
        return Analysed(rec, c.kind, c.obj, c.method, c.id, c.idkey, c.reason, c.problem)

    def _one(self, m: Analysed, s: Session, batch_seq: int | None = None) -> Analysed:
        # The hot path of everything: keep it flat (every call costs at 100,000 messages/s).
        rec = m.rec
        kind = m.kind
        if batch_seq is not None:
            m.batch_seq = batch_seq
        if kind is _KIND_RESULT or kind is _KIND_ERROR:
            match_response(m, s)
        label_era(m, s)
        if kind is _KIND_REQUEST:
            register_request(m, s)
        if batch_seq is None:
            observers = self._observers_of.get(rec.transport)
            if observers is None:
                observers = self._message_observers(rec.transport)
            for fn in observers:
                fn(rec, m, s)
        # the rules (_run_rules, inlined: this is the hottest path there is)
        shape = (kind, m.method if m.method is not None else m.answers_method, m.era, m.version, rec.dir)
        run = self._runners.get(shape, False)
        if run is False:
            run = self.ruleset.runner(*shape)
        if run is not None:
            run(m, s)
        if rec.http is not None and batch_seq is None and self.ruleset.http_rules:
            self._run_http_rules(rec, m, s)
        after_rules(m, s)  # the session learns what this message established (tracer.update)
        return m

    def _unattributed(self, rec: Record) -> None:
        """The HTTP door put the next message on a connection of its own, not knowing which session
        it belongs to: the candidates learn what it may have settled (tracer.update.attribution)."""
        why = unattributed(rec, rec.data, self.sessions)
        s = self.sessions.pop(rec.conn, None) or self._loose.get(rec.conn)
        if s is None:
            s = Session(rec.conn, transport=rec.transport, first_seq=rec.seq, shared=self.shared)
        s.unattributed = why
        self._loose[rec.conn] = s

    def _loose_message(self, rec: Record, s: Session) -> Analysed:
        """A message on a connection not attributable to one session: paired with its exchange's
        other messages, its era unknown with the reason, and judged by no rule that depends on a
        session's state (only the HTTP rules of its exchange run)."""
        common = classify_common(rec.raw)
        m = Analysed(rec, *common) if common is not None else self._analysed(rec, classify_raw(rec.raw))
        if m.kind is _KIND_RESULT or m.kind is _KIND_ERROR:
            match_response(m, s)
        if m.kind is _KIND_REQUEST:
            register_request(m, s)
        m.era, m.version = _ERA_UNKNOWN, None
        m.explain_era("not attributable to one session: {}", s.unattributed)
        for fn in self._message_observers(rec.transport):
            fn(rec, m, s)
        if rec.http is not None and self.ruleset.http_rules:
            self._run_http_rules(rec, m, s)
        after_rules(m, s)
        s.last_t_ns = rec.t_ns
        return m

    def _run_http_rules(self, rec: Record, m: Analysed | None, s: Session) -> list[Finding]:
        """Rules about a record's HTTP facts: `fn(rec, m, session)`, `m` the analysed message or None
        (an HTTP exchange without a JSON-RPC body, an SSE stream event). They run when the versions
        the message (else the connection) may speak are all theirs. Findings of a message go with
        it; the others are returned (feed hands them out as a `Findings` event)."""
        versions = possible_versions(m) if m is not None else session_versions(s, rec)
        return self.ruleset.run_http(rec, m, s, versions)

    def _message_observers(self, transport: str) -> tuple:
        """The observers a message of this transport goes through, in registration order."""
        fns = tuple(fn for transports, fn in self._observers if transports is None or transport in transports)
        if len(self._observers_of) < 64:  # transports are a handful; odd values are not kept
            self._observers_of[transport] = fns
        return fns

    def _observe(self, rec: Record, m: Analysed | None, s: Session | None) -> None:
        transport = rec.transport
        for transports, fn in self._observers:
            if transports is None or transport in transports:
                if s is None:
                    s = self.sessions.get(rec.conn) or self.session(rec)
                fn(rec, m, s)

    def _run_rules(self, m: Analysed, s: Session) -> None:
        run = self.ruleset.runner(
            m.kind, m.method if m.method is not None else m.answers_method, m.era, m.version, m.rec.dir
        )
        if run is not None:
            run(m, s)

    def _end(self, s: Session, t_ns: int | None) -> SessionClosed:
        close_session(s)
        key = cell = None
        if s.messages:
            key, n = s.conn, 1
            while key in self.session_cells:  # the name came back in a later recording of the file
                n += 1
                key = f"{s.conn}#{n}"
            cell = self.session_cells[key] = s.compatibility
        end_t = t_ns or s.last_t_ns
        out = self.ruleset.run_end(s, end_t) if s.unattributed is None else []
        return SessionClosed(s, out, end_t, key, cell)


def analyse_all(
    records: Iterable[Record], rules: Iterable[Rule] | None = None
) -> tuple[list[Analysed], list[Finding]]:
    """Convenience for tests and small inputs: every analysed message and the end findings."""
    a = Analyser(rules)
    msgs: list[Analysed] = []
    ends: list[Finding] = []
    for ev in a.run(records):
        if ev.__class__ is Analysed:
            msgs.append(ev)
        else:
            ends.extend(ev.findings)
    return msgs, ends


__all__ = [
    "Analyser",
    "Event",
    "Events",
    "Findings",
    "RuleSet",
    "SessionClosed",
    "Severity",
    "analyse_all",
    "possible_versions",
]
