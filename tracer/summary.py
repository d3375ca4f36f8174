"""Session summary numbers: eras and compatibility cells, negotiated versions, declared
capabilities, counts by kind and by rule, latency p50/p95/max per method.

Fed one analysed message (or record, or end finding) at a time, like the analyser, so the viewer's
background analysis and lint can build it in the same pass. The result is a plain JSON-able dict.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from tracer.model import Analysed, Finding, Kind, Record, RecordType, Severity
from tracer.protocol import META_CLIENT_CAPS, META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO


def percentile(sorted_values: Any, q: float) -> int:
    """Nearest-rank percentile (q in 0..100) of an already sorted, non-empty sequence."""
    n = len(sorted_values)
    rank = max(1, min(n, math.ceil(q * n / 100)))
    return sorted_values[rank - 1]


@dataclass
class SessionFacts:
    conn: str
    transport: str = ""
    messages: int = 0
    first_t_ns: int = 0
    last_t_ns: int = 0
    eras: Counter = field(default_factory=Counter)
    requested_version: str | None = None  # initialize params.protocolVersion
    negotiated_version: str | None = None  # initialize result protocolVersion
    modern_versions: set[str] = field(default_factory=set)  # _meta protocolVersion values
    client_caps: dict | None = None
    server_caps: dict | None = None
    client_info: Any = None
    server_info: Any = None
    discover: str | None = None  # "result" / "error" / "unanswered"
    supported_versions: list | None = None  # server/discover result

    def to_dict(self, cell: str | None) -> dict[str, Any]:
        return {
            "conn": self.conn,
            "transport": self.transport,
            "messages": self.messages,
            "first_t_ns": self.first_t_ns,
            "last_t_ns": self.last_t_ns,
            "eras": _text_keys(self.eras),
            "cell": cell,
            "requested_version": self.requested_version,
            "negotiated_version": self.negotiated_version,
            "modern_versions": sorted(self.modern_versions),
            "client_caps": self.client_caps,
            "server_caps": self.server_caps,
            "client_info": self.client_info,
            "server_info": self.server_info,
            "discover": self.discover,
            "supported_versions": self.supported_versions,
        }


class SummaryBuilder:
    def __init__(self) -> None:
        self.records: Counter = Counter()  # by record type
        self.kinds: Counter = Counter()
        self.eras: Counter = Counter()
        self.dirs: Counter = Counter()
        self.rules: Counter = Counter()
        self.severities: Counter = Counter()
        self.latencies: dict[str, array] = {}
        self.sessions: dict[str, SessionFacts] = {}
        self.messages = 0
        self.first_t_ns = 0
        self.last_t_ns = 0
        self.headers: list[dict] = []
        self._last: SessionFacts | None = None

    # -- feeding -----------------------------------------------------------------------------

    def add_record(self, rec: Record) -> None:
        """Every record (messages too: add() counts the analysis of those)."""
        self.records[rec.type.value] += 1
        if rec.type is RecordType.HEADER:
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
        self.messages += 1
        rec = m.rec
        kind = m.kind
        self.kinds[kind] += 1  # enum members as keys (StrEnum): converted to text in snapshot()
        self.eras[m.era] += 1
        if rec.dir is not None:
            self.dirs[rec.dir] += 1
        s = self._last
        if s is None or s.conn != rec.conn:
            s = self.sessions.get(rec.conn)
            if s is None:
                s = self.sessions[rec.conn] = SessionFacts(rec.conn, rec.transport, first_t_ns=rec.t_ns)
            self._last = s
        s.messages += 1
        s.last_t_ns = rec.t_ns
        s.eras[m.era] += 1
        if m.findings:
            for f in m.findings:
                self.add_finding(f)
        if kind is Kind.BATCH:
            for member in m.members or ():
                for f in member.findings:
                    self.add_finding(f)
                self._facts(member, s)
        else:
            self._facts(m, s)

    def add_finding(self, f: Finding) -> None:
        self.rules[f.rule] += 1
        self.severities[f.severity] += 1

    def _facts(self, m: Analysed, s: SessionFacts) -> None:
        kind = m.kind
        if m.latency_ns is not None and kind in (Kind.RESULT, Kind.ERROR) and m.answers_method:
            lat = self.latencies.get(m.answers_method)
            if lat is None:
                lat = self.latencies[m.answers_method] = array("q")
            lat.append(m.latency_ns)
        if kind is Kind.REQUEST:
            params = m.params or {}
            meta = m.meta
            if meta is not None:
                pv = meta.get(META_PROTOCOL_VERSION)
                if type(pv) is str:
                    s.modern_versions.add(pv)
                caps = meta.get(META_CLIENT_CAPS)
                if type(caps) is dict and s.client_caps is None:
                    s.client_caps = caps
                info = meta.get(META_CLIENT_INFO)
                if info is not None and s.client_info is None:
                    s.client_info = info
            if m.method == "initialize":
                pv = params.get("protocolVersion")
                s.requested_version = pv if type(pv) is str else s.requested_version
                caps = params.get("capabilities")
                if type(caps) is dict:
                    s.client_caps = caps
                if params.get("clientInfo") is not None:
                    s.client_info = params.get("clientInfo")
            elif m.method == "server/discover" and s.discover is None:
                s.discover = "unanswered"
        elif kind is Kind.RESULT or kind is Kind.ERROR:
            answered = m.answers_method
            res = m.result
            if answered == "initialize" and res is not None:
                pv = res.get("protocolVersion")
                s.negotiated_version = pv if type(pv) is str else s.negotiated_version
                caps = res.get("capabilities")
                if type(caps) is dict:
                    s.server_caps = caps
                if res.get("serverInfo") is not None:
                    s.server_info = res.get("serverInfo")
            elif answered == "server/discover":
                s.discover = "result" if kind is Kind.RESULT else "error"
                if res is not None:
                    caps = res.get("capabilities")
                    if type(caps) is dict:
                        s.server_caps = caps
                    sv = res.get("supportedVersions")
                    if type(sv) is list:
                        s.supported_versions = sv
                    info = res.get("serverInfo")
                    if info is not None:
                        s.server_info = info
            if res is not None and s.server_info is None:
                meta = res.get("_meta")
                if type(meta) is dict and meta.get(META_SERVER_INFO) is not None:
                    s.server_info = meta.get(META_SERVER_INFO)

    # -- reading -----------------------------------------------------------------------------

    def latency_table(self) -> dict[str, dict[str, int]]:
        out = {}
        for method, values in sorted(self.latencies.items()):
            ordered = sorted(values)
            out[method] = {
                "count": len(ordered),
                "p50": percentile(ordered, 50),
                "p95": percentile(ordered, 95),
                "max": ordered[-1],
            }
        return out

    def snapshot(self, cells: dict[str, str] | None = None) -> dict[str, Any]:
        """The summary as a JSON-able dict. `cells` maps conn -> the analyser's compatibility cell."""
        cells = cells or {}
        return {
            "records": dict(self.records),
            "messages": self.messages,
            "kinds": _text_keys(self.kinds),
            "eras": _text_keys(self.eras),
            "dirs": _text_keys(self.dirs),
            "rules": dict(sorted(self.rules.items())),
            "severities": _text_keys(self.severities),
            "latency": self.latency_table(),
            "sessions": [s.to_dict(cells.get(s.conn)) for s in self.sessions.values()],
            "first_t_ns": self.first_t_ns,
            "last_t_ns": self.last_t_ns,
            "headers": self.headers,
        }


def _text_keys(counter: Counter) -> dict[str, int]:
    return {(k.label if isinstance(k, Severity) else str(k)): v for k, v in counter.items()}


def analyser_cells(analyser: Any) -> dict[str, str]:
    """conn -> compatibility cell, for open and closed sessions of a tracer.analyser.Analyser."""
    cells = dict(analyser.session_cells)
    for conn, s in analyser.sessions.items():
        if s.messages:
            cells[conn] = s.compatibility
    return cells
