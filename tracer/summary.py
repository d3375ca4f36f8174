"""Session summary numbers: eras and compatibility cells, negotiated versions, declared
capabilities, counts by kind and by rule, latency p50/p95/max per method.

Fed one analysed message (or record, or end finding) at a time, like the analyser, so the viewer's
background analysis and lint can build it in the same pass. The result is a plain JSON-able dict.

The summary keeps only its own counters (messages, kinds, eras, rules, latencies, and what the
messages' per-request `_meta` showed). What a session established (the handshake's versions,
capabilities and peers, the discover probe, the compatibility cell) it reads from the analyser's
`Session`, never re-derived: a closed session through `session_closed`, an open one from the
analyser at `snapshot`. Sessions are told apart by the analyser's name for them, so a connection
name that comes back in a later recording of the same file (`conn#2`) is a session of its own.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tracer.latency import Latencies
from tracer.model import REC_HEADER as _HEADER  # (enum members as globals: tracer.model)
from tracer.model import REC_MESSAGE as _MESSAGE
from tracer.model import Analysed, Finding, Kind, Record, RecordType, Severity
from tracer.protocol import META_CLIENT_CAPS, META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO

_RESULT, _ERROR, _REQUEST = Kind.RESULT, Kind.ERROR, Kind.REQUEST  # (read once: see tracer.view.notes)
_Q_MIN, _Q_MAX = -(2**63), 2**63
LATENCY_BATCH = 8192

if TYPE_CHECKING:
    from tracer.analyser import Analyser
    from tracer.session import Session


@dataclass
class SessionFacts:
    """One session's summary: the builder's own counters, and what its `Session` established."""

    conn: str
    transport: str = ""
    first_t_ns: int = 0
    last_t_ns: int = 0
    # (kind, era, direction) -> [messages]: one count per message, its totals read at the snapshot
    shapes: dict[tuple, list[int]] = field(default_factory=dict)
    # kind -> (era, direction, this session's count, the builder's) of its last message of that kind:
    # a message like the last of its kind is counted without hashing its shape (add_message)
    last_shape: dict[Any, tuple] = field(default_factory=dict, repr=False)
    # what the messages' per-request _meta showed (the modern era has no handshake to keep it)
    modern_versions: set[str] = field(default_factory=set)  # _meta protocolVersion values
    meta_client_caps: dict | None = None  # of the first request that carried them
    meta_client_info: Any = None
    meta_server_info: Any = None  # a result's _meta serverInfo
    name: str | None = None  # the analyser's name for the session, once it closed
    established: dict[str, Any] | None = None  # session_facts() of the closed session

    @property
    def messages(self) -> int:
        return sum(n for (n,) in self.shapes.values())

    @property
    def eras(self) -> Counter:
        out: Counter = Counter()
        for (_, era, _), (n,) in self.shapes.items():
            out[era] += n
        return out

    def to_dict(self, name: str, established: dict[str, Any]) -> dict[str, Any]:
        facts = dict(established)
        if facts["client_caps"] is None:
            facts["client_caps"] = self.meta_client_caps
        if facts["client_info"] is None:
            facts["client_info"] = self.meta_client_info
        if facts["server_info"] is None:
            facts["server_info"] = self.meta_server_info
        return {
            "conn": name,
            "transport": self.transport,
            "messages": self.messages,
            "first_t_ns": self.first_t_ns,
            "last_t_ns": self.last_t_ns,
            "eras": _text_keys(self.eras),
            "cell": facts.pop("cell"),
            "requested_version": facts["requested_version"],
            "negotiated_version": facts["negotiated_version"],
            "modern_versions": sorted(self.modern_versions),
            "client_caps": facts["client_caps"],
            "server_caps": facts["server_caps"],
            "client_info": facts["client_info"],
            "server_info": facts["server_info"],
            "discover": facts["discover"],
            "supported_versions": facts["supported_versions"],
        }


class KnownFacts:
    """A session's facts read in another process (tracer.view.pipeline: the analysis hands the
    row writer what `session_facts` gave there): stands for the `Session` wherever this module
    reads one."""

    __slots__ = ("conn", "facts")

    def __init__(self, conn: str, facts: dict[str, Any]):
        self.conn = conn
        self.facts = facts


def session_facts(s: Session | KnownFacts | None, cell: str | None = None) -> dict[str, Any]:
    """What a session established, as the analyser keeps it (the first successful `initialize`, the
    first `server/discover` probe). None values where the session did not establish it."""
    if type(s) is KnownFacts:
        return dict(s.facts)
    out: dict[str, Any] = dict.fromkeys(
        (
            "requested_version",
            "negotiated_version",
            "client_caps",
            "server_caps",
            "client_info",
            "server_info",
            "discover",
            "supported_versions",
        )
    )
    out["cell"] = cell if cell is not None or s is None else s.compatibility
    if s is None:
        return out
    init, disc = s.init, s.discover
    if init is not None:
        out["requested_version"] = init.requested_version
        out["negotiated_version"] = init.negotiated_version
        out["client_caps"] = init.client_caps
        out["client_info"] = init.client_info
        if init.result_seq is not None:
            out["server_caps"] = init.server_caps
            out["server_info"] = init.server_info
    if disc is not None:
        out["discover"] = disc.outcome or "unanswered"
        res = disc.result if disc.outcome == "result" else None
        if res is not None:
            sv = res.get("supportedVersions")
            out["supported_versions"] = sv if type(sv) is list else None
            if out["server_caps"] is None:
                caps = res.get("capabilities")
                out["server_caps"] = caps if type(caps) is dict else None
            if out["server_info"] is None:
                out["server_info"] = res.get("serverInfo")
    if out["server_caps"] is None and s.track.discover_caps is not None:
        out["server_caps"] = s.track.discover_caps
    return out


class SummaryBuilder:
    def __init__(self) -> None:
        self.records: dict[RecordType, int] = {}  # by record type
        # (kind, era, direction) -> messages, in the order each first came: one count per message
        # (the viewer's analysis counts every row), the totals by kind, era and direction at snapshot
        self.shapes: dict[tuple, list[int]] = {}  # (a count in a list: see SessionFacts.last_shape)
        self.rules: Counter = Counter()
        self.severities: Counter = Counter()
        self.latencies = Latencies()  # bounded: exact in a short session, a histogram in a long one
        self._latency: dict[str, list[int]] = {}  # answers' latencies not yet in the table, by method
        self._latency_n = 0
        self.sessions: dict[str, SessionFacts] = {}  # the open ones, by connection
        self.closed: list[SessionFacts] = []  # in the order they closed, each with its name
        self._names: set[str] = set()  # the closed sessions' names
        self.first_t_ns = 0
        self.last_t_ns = 0
        self.headers: list[dict] = []
        self._last: SessionFacts | None = None

    # -- feeding -----------------------------------------------------------------------------

    def add_record(self, rec: Record) -> None:
        """Every record (messages too: add() counts the analysis of those)."""
        rtype = rec.type
        records = self.records
        records[rtype] = records.get(rtype, 0) + 1
        if rtype is _HEADER:
            if rec.data is not None and len(self.headers) < 20:
                self.headers.append({k: v for k, v in rec.data.items() if k != "type"})
            return
        t = rec.t_ns
        if t:
            if not self.first_t_ns or t < self.first_t_ns:
                self.first_t_ns = t
            if t > self.last_t_ns:
                self.last_t_ns = t

    def add(self, m: Analysed) -> None:
        """An analysed message (batches count their members' findings too)."""
        rec = m.rec
        kind = m.kind
        key = (kind, m.era, rec.dir)  # enum members (StrEnum): converted to text in snapshot()
        s = self._last
        if s is None or s.conn != rec.conn:
            s = self.sessions.get(rec.conn)
            if s is None:
                s = self.sessions[rec.conn] = SessionFacts(rec.conn, rec.transport, first_t_ns=rec.t_ns)
            self._last = s
        self._count_shape(s, key)
        s.last_t_ns = rec.t_ns
        if m.findings:
            for f in m.findings:
                self.add_finding(f)
        if kind is Kind.BATCH:
            for member in m.members or ():
                for f in member.findings:
                    self.add_finding(f)
                self._facts(member, s)
        elif kind is Kind.REQUEST:
            if m.meta is not None:
                self._facts(m, s)
        elif kind is Kind.RESULT or kind is Kind.ERROR:
            self._facts(m, s)

    def add_message(self, rec: Record, m: Analysed) -> None:
        """add_record(rec) then add(m), for a message record whose analysis M has no findings and
        is no batch (nearly every one; the viewer's analysis calls this once per such row)."""
        records = self.records
        records[_MESSAGE] = records.get(_MESSAGE, 0) + 1
        t = rec.t_ns
        if t:
            if not self.first_t_ns or t < self.first_t_ns:
                self.first_t_ns = t
            if t > self.last_t_ns:
                self.last_t_ns = t
        kind = m.kind
        s = self._last
        if s is None or s.conn != rec.conn:
            s = self.sessions.get(rec.conn)
            if s is None:
                s = self.sessions[rec.conn] = SessionFacts(rec.conn, rec.transport, first_t_ns=t)
            self._last = s
        last = s.last_shape.get(kind)
        if last is not None and last[0] is m.era and last[1] is rec.dir:
            last[2][0] += 1
            last[3][0] += 1
        else:
            self._count_shape(s, (kind, m.era, rec.dir))
        s.last_t_ns = t
        if kind is _REQUEST:
            if m.meta is not None:
                self._facts(m, s)
        elif kind is _RESULT or kind is _ERROR:
            self._facts(m, s)

    def _count_shape(self, s: SessionFacts, key: tuple) -> None:
        """One message of shape KEY (kind, era, direction) in session S, and in the whole capture."""
        mine = s.shapes.get(key)
        if mine is None:
            mine = s.shapes[key] = [0]
        mine[0] += 1
        every = self.shapes.get(key)
        if every is None:
            every = self.shapes[key] = [0]
        every[0] += 1
        s.last_shape[key[0]] = (key[1], key[2], mine, every)

    def add_finding(self, f: Finding) -> None:
        self.rules[f.rule] += 1
        self.severities[f.severity] += 1

    def session_closed(self, session: Session, name: str | None, cell: str | None) -> None:
        """The analyser closed SESSION (tracer.events.SessionClosed: its name and cell): its facts are
        read now, and a later message on the same connection starts a session of its own."""
        s = self.sessions.pop(session.conn, None)
        if self._last is s:
            self._last = None
        if s is None or name is None:  # (no message: not a session any report counts)
            return
        s.name = name
        s.established = session_facts(session, cell)
        self.closed.append(s)
        self._names.add(name)

    def _facts(self, m: Analysed, s: SessionFacts) -> None:
        kind = m.kind
        ns = m.latency_ns
        if ns is not None and (kind is _RESULT or kind is _ERROR) and m.answers_method:
            if _Q_MIN <= ns < _Q_MAX:
                # kept here and given to the table in batches (Latencies.add_many: the same table,
                # without four calls per answer); a list per method, at most LATENCY_BATCH values
                pending = self._latency.get(m.answers_method)
                if pending is None:
                    pending = self._latency[m.answers_method] = []
                pending.append(ns)
                self._latency_n += 1
                if self._latency_n >= LATENCY_BATCH:
                    self._add_latencies()
            else:  # (not a latency two timestamps of a capture give: as the table takes it)
                self._add_latencies()
                self.latencies.add(m.answers_method, ns)
        if kind is _REQUEST:
            meta = m.meta
            if meta is not None:
                pv = meta.get(META_PROTOCOL_VERSION)
                if type(pv) is str and len(s.modern_versions) < 16:  # (a peer could send thousands)
                    s.modern_versions.add(pv)
                if s.meta_client_caps is None:  # (the first request's that carried them)
                    caps = meta.get(META_CLIENT_CAPS)
                    if type(caps) is dict:
                        s.meta_client_caps = caps
                if s.meta_client_info is None:
                    info = meta.get(META_CLIENT_INFO)
                    if info is not None:
                        s.meta_client_info = info
        elif (kind is _RESULT or kind is _ERROR) and s.meta_server_info is None:
            res = m.result
            meta = res.get("_meta") if res is not None else None
            if type(meta) is dict and meta.get(META_SERVER_INFO) is not None:
                s.meta_server_info = meta.get(META_SERVER_INFO)

    # -- reading -----------------------------------------------------------------------------

    @property
    def messages(self) -> int:
        return sum(n for (n,) in self.shapes.values())

    def _add_latencies(self) -> None:
        """The latencies kept since the last call, into the table, methods in the order they came."""
        add = self.latencies.add_many
        for method, values in self._latency.items():
            add(method, values)
        self._latency = {}
        self._latency_n = 0

    def latency_table(self) -> dict[str, dict[str, int]]:
        self._add_latencies()
        return self.latencies.table()

    def snapshot(self, analyser: Analyser | None = None) -> dict[str, Any]:
        """The summary as a JSON-able dict: closed sessions as they closed, open ones as ANALYSER
        (the one this builder was fed from) holds them now."""
        sessions = [s.to_dict(s.name or s.conn, s.established or session_facts(None)) for s in self.closed]
        live = analyser.sessions if analyser is not None else {}
        for s in self.sessions.values():
            name, n = s.conn, 1
            while name in self._names:  # as the analyser will name it (Analyser._end)
                n += 1
                name = f"{s.conn}#{n}"
            sessions.append(s.to_dict(name, session_facts(live.get(s.conn))))
        kinds: Counter = Counter()
        eras: Counter = Counter()
        dirs: Counter = Counter()
        for (kind, era, d), (n,) in self.shapes.items():
            kinds[kind] += n
            eras[era] += n
            if d is not None:
                dirs[d] += n
        return {
            "records": {t.value: n for t, n in self.records.items()},
            "messages": self.messages,
            "kinds": _text_keys(kinds),
            "eras": _text_keys(eras),
            "dirs": _text_keys(dirs),
            "rules": dict(sorted(self.rules.items())),
            "severities": _text_keys(self.severities),
            "latency": self.latency_table(),
            "sessions": sessions,
            "first_t_ns": self.first_t_ns,
            "last_t_ns": self.last_t_ns,
            "headers": self.headers,
        }


def _text_keys(counter: Counter) -> dict[str, int]:
    return {(k.label if isinstance(k, Severity) else str(k)): v for k, v in counter.items()}
