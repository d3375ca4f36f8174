"""A row's analysis details, as the viewer's analysis stores them and as the detail pane reads them.

Most rows are never looked at, and building the words of a row's era reason and pairing reason costs
more than the analysis of its era. So a plain message (no findings, no unusual pairing, no SSE
timing) stores no details at all: its row holds a note, an index into a table of (era reason,
version) the analysis sends along (one entry serves every message of a session that gives the same
reason), and `derive()` builds its details when it is shown, from its row, its partner's row and
its own bytes (its id, re-read as the analyser read it). Any other message's details are stored
compactly, `compact()`: a JSON
list of the parts, each reason kept as its format and values when those survive a JSON round trip
unchanged (ASCII text, integers); `expand()` builds, for the one row shown, the same dict that
`detail_of()` builds at once (kind, era, why, pairing, findings...). Rows whose details change after
they are written (end-of-session findings), batches and unreadable records are stored as that dict.

`SseClock` gives an SSE record its place in its stream and the gaps around it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from tracer.classify import classify_common, classify_raw
from tracer.model import Analysed, Kind, Record, RecordType, paired_reason
from tracer.pairing import PairStatus
from tracer.safejson import dumps as safe_dumps
from tracer.safejson import loads as safe_loads
from tracer.session import BoundedMap
from tracer.view.rowformat import (
    DIRS,
    ERAS,
    F_LAT_NS,
    F_OP,
    F_PARTNER,
    KINDS,
    NO_LAT,
    PAIR_STATUSES,
    finding_list,
)

RowOf = Callable[[int | None], int | None]

_PAIRED = (PairStatus.PAIRED, PairStatus.AFTER_CANCEL)
_ABSENT = 0  # `id` of a compact record whose message has no id (JSON null is an id of its own)


def detail_of(a: Analysed, row_of: RowOf, *, member: bool = False) -> dict[str, Any]:
    """A message's details as the detail pane reads them (keys: see ui.widgets.detail_render)."""
    d: dict[str, Any] = {"kind": a.kind, "era": a.era, "why": a.era_reason, "version": a.version}
    if a.method is not None:
        d["method"] = a.method
    if a.answers_method is not None:
        d["answers"] = a.answers_method
    if a.id is not None or a.idkey is not None:
        d["id"] = a.id
    if a.reason:
        d["reason"] = a.reason
        d["problem"] = a.problem
    if a.pair_status:
        d["ps"] = a.pair_status
    if a.pair_reason:
        d["pr"] = a.pair_reason
    if a.partner_seq is not None:
        d["partner"] = a.partner_seq
        d["prow"] = row_of(a.partner_seq)
    if a.latency_ns is not None:
        d["lat"] = a.latency_ns
    if a.op_seq is not None:
        d["op"] = a.op_seq
        d["oprow"] = row_of(a.op_seq)
    if a.findings:
        d["f"] = [finding_list(f, row_of) for f in a.findings]
    if a.members and not member:
        d["members"] = [detail_of(m, row_of, member=True) for m in a.members]
    return d


def _plain(values: tuple) -> bool:
    """Values a format can be filled with after a JSON round trip, with the same words: integers and
    ASCII text (a lone surrogate or an integer past 64 bits is written otherwise, see safejson)."""
    for v in values:
        t = type(v)
        if t is int:
            if not -(2**63) <= v < 2**63:
                return False
        elif t is not str or not v.isascii():
            return False
    return True


def compact(a: Analysed, row_of: RowOf, timing: dict[str, Any] | None) -> list[Any] | dict[str, Any]:
    """What `detail_of(a)` says, as few parts as can be stored (see expand); a batch as the dict."""
    if a.members:
        d = detail_of(a, row_of)
        if timing is not None:
            d["sse"] = timing
        return d
    why: Any = a._era_why
    if type(why) is not str:
        fmt, values = why
        why = [fmt, values] if values and _plain(values) else (fmt.format(*values) if values else fmt)
    pr: Any = a.pair_note
    if pr is None:
        req = a.request
        if req is not None and a.pair_status in _PAIRED:
            # the id is shown as its repr: it must come back from JSON as it was (the method and the
            # connection are shown as text, which the JSON round trip keeps, lone surrogates aside,
            # and those come out of the readable policy in the same words either way)
            kind, value = req.idkey
            if _plain((value,)):
                pr = [kind, value, req.method, req.dir.value, req.seq, a.rec.conn]
            else:
                pr = a.pair_reason
        else:
            pr = a.pair_reason
    partner = a.partner_seq
    op = a.op_seq
    findings = a.findings
    return [
        a.kind,
        a.era,
        why,
        a.version,
        a.method,
        a.answers_method,
        a.id if a.id is not None or a.idkey is not None else _ABSENT,
        a.id is not None or a.idkey is not None,
        a.reason,
        a.problem,
        a.pair_status,
        pr,
        partner,
        row_of(partner) if partner is not None else None,
        a.latency_ns,
        op,
        row_of(op) if op is not None else None,
        [finding_list(f, row_of) for f in findings] if findings else None,
        timing,
    ]


_LONG_NUMBER = re.compile(rb"[0-9]{20}")


def load(line: bytes) -> Any:
    """A stored record read back. orjson reads an integer past 64 bits (an id a peer sent) as a float
    without a word, so a record with a 20-digit run goes to the standard library, which keeps it."""
    if _LONG_NUMBER.search(line) is not None:
        return json.loads(line)
    return safe_loads(line)


def expand(c: Any) -> dict[str, Any] | None:
    """The details dict a stored record stands for (a dict is stored as itself)."""
    if type(c) is dict:
        return c
    if type(c) is not list or len(c) != 19:
        return None
    (kind, era, why, version, method, answers, ident, has_id, reason, problem, ps, pr, partner, prow, lat, op,
     oprow, found, timing) = c  # fmt: skip
    if type(why) is list:
        why = why[0].format(*why[1])
    d: dict[str, Any] = {"kind": kind, "era": era, "why": why, "version": version}
    if method is not None:
        d["method"] = method
    if answers is not None:
        d["answers"] = answers
    if has_id:
        d["id"] = ident
    if reason:
        d["reason"] = reason
        d["problem"] = problem
    if ps:
        d["ps"] = ps
    if type(pr) is list:
        pr = paired_reason((pr[0], pr[1]), pr[2], pr[3], pr[4], pr[5])
    if pr:
        d["pr"] = pr
    if partner is not None:
        d["partner"] = partner
        d["prow"] = prow
    if lat is not None:
        d["lat"] = lat
    if op is not None:
        d["op"] = op
        d["oprow"] = oprow
    if found:
        d["f"] = found
    if timing is not None:
        d["sse"] = timing
    return d


# era reasons whose values are the method and the seq of the request answered: one note serves every
# answer, its values read from the row's method and its partner's row
PARTNER_FMTS = frozenset({"answers modern {} (seq {})", "answers legacy {} (seq {})"})
_OTHER_DIR = {"c2s": "s2c", "s2c": "c2s"}


def derive(
    fields: Any, raw: bytes, conn: str, note: Any, methods: Any, seq_of: Callable[[int], int | None]
) -> dict[str, Any] | None:
    """The details of a message stored as a note (see tracer.view.notes.Notes.of): what
    `expand(compact(a))` gives, from its row FIELDS, its bytes and connection, its NOTE ([era reason,
    version, mode]), the method table and the seq of another row. None when a part is missing."""
    if type(note) is not list or len(note) != 3:
        return None
    why, version, mode = note
    kind = KINDS[fields[1]]
    midx = fields[7]
    label = methods[midx] if 0 <= midx < len(methods) else None
    prow = fields[F_PARTNER]
    partner = None
    if prow >= 0:
        partner = seq_of(prow)
        if partner is None:
            return None
    common = classify_common(raw)
    if common is not None:
        ident, idkey = common[3], common[4]
    else:
        c = classify_raw(raw)
        ident, idkey = c.id, c.idkey
    response = kind == Kind.RESULT or kind == Kind.ERROR
    if mode == 1:
        why = why.format(label, partner)
    elif type(why) is list:
        why = why[0].format(*why[1])
    d: dict[str, Any] = {"kind": kind, "era": ERAS[fields[3]], "why": why, "version": version}
    if label is not None:
        d["answers" if response else "method"] = label
    if ident is not None or idkey is not None:
        d["id"] = ident
    flags = fields[5] & 0x0F
    ps = PAIR_STATUSES[flags] if flags < len(PAIR_STATUSES) else ""
    if ps:
        d["ps"] = ps
    pr = None
    if response and ps in _PAIRED:
        if idkey is None or partner is None:
            return None
        pr = paired_reason(idkey, label, _OTHER_DIR.get(DIRS[fields[2]], ""), partner, conn)
    elif kind == Kind.REQUEST and partner is not None:
        pr = f"answered by seq {partner}"
    if pr:
        d["pr"] = pr
    if partner is not None:
        d["partner"] = partner
        d["prow"] = prow
    if fields[F_LAT_NS] != NO_LAT:
        d["lat"] = fields[F_LAT_NS]
    oprow = fields[F_OP]
    if oprow >= 0:
        op = seq_of(oprow)
        if op is None:
            return None
        d["op"] = op
        d["oprow"] = oprow
    # what a stored record reads back as: the same policy for text a peer sent (see safejson)
    return load(safe_dumps(d))


def finding_ids(c: Any) -> list[str]:
    """The rule ids of a stored record's findings (a batch: its own, then its members'), for the
    filter's `rule:` term, without building the rest."""
    if type(c) is list:
        found = c[17] if len(c) == 19 else None
        return [f[0] for f in found or ()]
    if type(c) is not dict:
        return []
    out = [f[0] for f in c.get("f") or ()]
    for mem in c.get("members") or ():
        out.extend(f[0] for f in mem.get("f") or ())
    return out


class SseClock:
    """Each SSE stream's opening and last event, for the timing of its events (bounded)."""

    def __init__(self, streams: int = 10_000):
        self.streams = BoundedMap(streams)  # stream -> [opened t_ns, last event t_ns, events]

    def timing(self, rec: Record) -> dict[str, Any] | None:
        """For a record of an SSE stream: its place in the stream and the gaps (SSE timing)."""
        stream = None
        if rec.sse:
            stream = rec.sse.get("stream")
        elif rec.type is RecordType.EVENT and rec.data and rec.data.get("event") == "stream-open":
            stream = rec.data.get("stream")
        if stream is None:
            return None
        key = str(stream)
        st = self.streams.get(key)
        if st is None:
            st = [rec.t_ns, rec.t_ns, 0]  # opened, last event, events with data so far
            self.streams.put(key, st)
            if not rec.sse:
                return None
        if rec.type is not RecordType.MESSAGE:
            return None
        st[2] += 1
        timing = {"stream": key, "n": st[2], "since_open": rec.t_ns - st[0], "since_prev": rec.t_ns - st[1]}
        st[1] = rec.t_ns
        return timing
