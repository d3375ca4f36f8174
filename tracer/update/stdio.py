"""The stdio updater: the framing facts of a stdio connection (in `Session.stdio`, types in
tracer.state.stdio). stdio frames messages by newlines, so the tee records one line per `message`
record; some problems only show across lines (a pretty-printed message is several lines that each
fail to parse but parse when joined, MCP802), and the server's stderr and the process life cycle
arrive as `stderr` and `event` records. Runs once per record of a stdio connection, before the
rules, when a rule of the stdio family is selected (nothing else reads these facts)."""

from __future__ import annotations

from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import DIR_S2C as _DIR_S2C
from tracer.model import KIND_BATCH as _KIND_BATCH
from tracer.model import KIND_INVALID as _KIND_INVALID
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import KIND_REQUEST as _KIND_REQUEST
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import REC_EVENT as _REC_EVENT
from tracer.model import REC_STDERR as _REC_STDERR
from tracer.model import Analysed, Record
from tracer.session import Session
from tracer.state.stdio import (
    MAX_STDERR_SAMPLES,
    NOT_A_MESSAGE,
    At,
    Group,
    Probe,
    StdioState,
    Verdict,
    json_apart_from_encoding,
    show_bytes,
)


def observe(rec: Record, m: Analysed | None, s: Session) -> None:
    st = s.stdio
    if st is None:
        st = s.stdio = StdioState()
    if m is None:
        _other_record(rec, st)
        return
    d = rec.dir
    kind = m.kind
    if st.probe is not None and kind is _KIND_RESULT and m.answers_method == "server/discover":
        st.probe.answered = True
    if (
        kind is not _KIND_INVALID
        and not st.groups
        and st.stdin_eof is None
        and not rec.raw.endswith(b"\r")
        and (kind is not _KIND_REQUEST or d is not _DIR_C2S or (st.client_requests and st.probe is None))
    ):
        # The common case, a plain line that parsed: nothing to note (kept cheap: lint runs this on
        # every stdio message). A client's request after its first, with no probe to count it for,
        # only counts (what the general path below gives it is a fresh Verdict of defaults).
        if kind is _KIND_REQUEST and d is _DIR_C2S:
            st.client_requests += 1
        v = st.current
        if v is None or v.frame or v.abandoned is not None:
            v = st.current = Verdict(rec.seq)
        else:
            v.seq = rec.seq
            v.crlf_first = v.first_client_request = False
        return
    st.current = v = Verdict(rec.seq)
    if d is None:
        return
    if kind is _KIND_REQUEST and d is _DIR_C2S:
        v.first_client_request = st.client_requests == 0
        st.client_requests += 1
        if v.first_client_request:
            _first_request(rec, m, s, st, v)
        elif st.probe is not None:
            st.probe.requests += 1
    if d is _DIR_S2C and st.stdin_eof is not None and kind in (_KIND_REQUEST, _KIND_NOTIFICATION):
        st.writes_after_eof += 1
    problem = m.problem if kind is _KIND_INVALID else None
    if problem == "not-utf8" and not json_apart_from_encoding(rec.raw):
        problem = "not-json"  # junk bytes: a stray line first, bad UTF-8 second
        v.not_utf8 = True
    g = st.groups.get(d)
    if g is not None:
        if (problem is not None and problem != "not-utf8") or (
            kind is _KIND_BATCH and not _real_batch(m.obj)
        ):
            g.add(rec)
            v.group = g
            if g.complete or g.too_big or not rec.eol:
                del st.groups[d]
                v.first_line = show_bytes(g.first_line)
                g.join()
                v.frame = "joined" if g.parses else "unjoinable"
            else:
                v.frame = "open"
            return
        del st.groups[d]  # a line that parsed (or is not UTF-8) interrupts the group
        v.abandoned = g
        v.first_line = show_bytes(g.first_line)
        g.parts = []
    if problem in NOT_A_MESSAGE:
        raw = rec.raw
        stripped = raw.strip()
        if not stripped:
            v.frame = "blank"
            return
        if problem == "not-json" and not v.not_utf8 and stripped[:1] in (b"{", b"[") and rec.eol:
            g = Group(d, rec.seq, rec.offset, At(rec.seq, rec.line, rec.source))
            g.add(rec)
            if not g.complete and not g.too_big:
                st.groups[d] = g
                v.frame = "open"
                v.group = g
                return
        v.frame = "stray"
        return
    if rec.raw.endswith(b"\r") and d not in st.crlf_seen:
        st.crlf_seen.add(d)
        v.crlf_first = True


def _first_request(rec: Record, m: Analysed, s: Session, st: StdioState, v: Verdict) -> None:
    """A connection's first client request: a probe is remembered for the analysis; any other
    request consumes the newest sibling probe if it was one (one probe, one session)."""
    shared = s.shared
    if m.method == "server/discover":
        st.probe = shared.sibling_probe = Probe(rec.conn)
        return
    p = shared.sibling_probe
    if p is not None and p.conn != rec.conn and p.answered and p.requests == 1:
        v.probed_on_sibling = True
        shared.sibling_probe = None


def _real_batch(obj) -> bool:
    """A line that is a JSON-RPC batch in its own right, not `[]` or `[1, 2]` inside pretty JSON."""
    return bool(obj) and all(type(x) is dict and "jsonrpc" in x for x in obj)


def _other_record(rec: Record, st: StdioState) -> None:
    if rec.type is _REC_STDERR:
        try:
            rec.raw.decode("utf-8")
        except UnicodeDecodeError:
            st.stderr_bad_count += 1
            if len(st.stderr_bad) < MAX_STDERR_SAMPLES:
                st.stderr_bad.append((rec.seq, rec.offset, rec.raw))
        return
    if rec.type is _REC_EVENT and rec.data:
        name = rec.data.get("event")
        if name == "stdin-eof":
            st.stdin_eof = (rec.seq, rec.t_ns)
        elif name == "terminate":
            st.terminated.append((rec.seq, rec.data))
