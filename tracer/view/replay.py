"""The row writer of the two-process analysis (tracer.view.pipeline says why and what crosses): the
one-process code (tracer.view.annotate.Annotator, tracer.view.hotrows) over the capture's rows,
with the analysis process's results standing in for the analyser's, and its flushes done when that
process says, as it decided them.
"""

from __future__ import annotations

import marshal
import os
import pickle
import signal
import threading
import time
from typing import Any, BinaryIO

from tracer.classify import classify_common, classify_raw
from tracer.model import KIND_REQUEST as _REQUEST
from tracer.model import Analysed, Direction, Era, Kind, Record
from tracer.protocol import META_SERVER_INFO
from tracer.summary import KnownFacts
from tracer.view.annotate import Annotator
from tracer.view.hotrows import block, fill
from tracer.view.pipeline import HEAD

_KIND = {k._value_: k for k in Kind}
_ERA = {e._value_: e for e in Era}
_DIR = {d._value_: d for d in Direction}
_RAISED: dict[str, type] = {}

_OTHER = {Direction.C2S: "s2c", Direction.S2C: "c2s"}
# a row's results in a rows frame, by its tag: its line, the tag, then a plain message's ten values
# (0), a record's events and updates (1), a raised exception's name and text (2), a message's
# tuple (3)
_SIZE = (12, 4, 4, 3)
PRUNE_SLACK = 4096  # requests' messages kept beyond twice the stash's before they are pruned
REAP_SECONDS = 2.0


class PipelineBroken(Exception):
    """The analysis process's frames stopped making sense (it died mid-frame, or a bug)."""


class _Request:
    """What the writer reads of a PendingRequest (a response's `request`)."""

    __slots__ = ("dir", "idkey", "method", "op_seq", "seq")

    def __init__(self, seq, idkey, method, direction, op_seq):
        self.seq = seq
        self.idkey = idkey
        self.method = method
        self.dir = _DIR[direction]
        self.op_seq = op_seq


class _Event:
    __slots__ = ("cell", "findings", "name", "session")

    def __init__(self, findings, closed):
        self.findings = findings
        if closed is None:
            self.session = self.name = self.cell = None
        else:
            conn, self.name, self.cell, facts = closed
            self.session = KnownFacts(conn, facts)


def decode_events(data: bytes) -> list[_Event]:
    return [_Event(f, c) for f, c in pickle.loads(data)]


def _raised(name: str, text: str) -> Exception:
    """An exception that reads as the one the analyser raised (RowFiller.unreadable shows both)."""
    cls = _RAISED.get(name)
    if cls is None:
        cls = _RAISED[name] = type(name, (Exception,), {}) if len(_RAISED) < 1000 else RuntimeError
    return cls(text)


class ReplayAnalyser:
    """Analyser.feed and finish, answered from the analysis process's results."""

    def __init__(self) -> None:
        self.results: list[Any] = []  # the last rows frame's, flat (tracer.view.pipeline)
        self.at = 0  # where the next row's results start in it
        self.sessions: dict[str, KnownFacts] = {}  # the open ones, at the last summary's row
        self.ended: list[_Event] = []
        self.last_why: Any = None  # the last plain message's era reason (tracer.view.pipeline)
        # (line, place in its batch) -> a request's message, which its answer's pairing may change
        self.requests: dict[tuple, Analysed] = {}

    def decode(self, rec: Record, t: tuple, pos: int = -1) -> Analysed:
        (
            kind,
            era,
            why,
            version,
            method,
            answers,
            ident,
            idkey,
            partner,
            lat,
            ps,
            op,
            meta,
            srv,
            req,
            extra,
            upd,
        ) = t
        reason = problem = note = batch_seq = members = None
        findings: list = []
        if upd is not None:
            for u in upd:
                self.update(u)
        if extra is not None:
            reason, problem, note, findings, members, batch_seq = pickle.loads(extra)
            if members is not None:
                members = [self.decode(rec, m, i) for i, m in enumerate(members)]
        kind = _KIND[kind]
        a = Analysed(
            rec,
            kind,
            None,
            method,
            ident,
            idkey,
            reason,
            problem,
            _ERA[era],
            version,
            partner,
            lat,
            note,
            ps,
            None if req is None else _Request(*req),
            answers,
            findings,
            members,
            batch_seq,
            op,
        )
        a._era_why = why
        a.meta = meta
        if srv is not None:
            a.result = {"_meta": {META_SERVER_INFO: srv}}
        if kind is _REQUEST and idkey is not None:
            self.requests[(rec.line, pos)] = a
        return a

    def plain(self, rec: Record, v: list[Any], i: int) -> Analysed:
        """A plain message's Analysed: its kind, method, id and _meta classified here from its own
        bytes as the analyser classifies them (tracer.analyser.Analyser._message), the rest as the
        analysis process found it."""
        common = classify_common(rec.raw)
        if common is not None:
            a = Analysed(rec, *common)
        else:
            c = classify_raw(rec.raw)
            a = Analysed(rec, c.kind, c.obj, c.method, c.id, c.idkey, c.reason, c.problem)
        a.era = _ERA[v[i]]
        why = v[i + 1]
        if why.__class__ is int:  # (1: the previous plain message's reason, tracer.view.pipeline)
            why = self.last_why
        else:
            self.last_why = why
        a._era_why = why
        a.version = v[i + 2]
        a.pair_status = v[i + 3]
        answers = a.answers_method = v[i + 4]
        partner = a.partner_seq = v[i + 5]
        lat = a.latency_ns = v[i + 6]
        op = a.op_seq = v[i + 7]
        req = v[i + 8]
        if req is not None:
            # 0: the request the answer's pairing derives (Analysis.analyse says when)
            a.request = (
                _Request(partner, a.idkey, answers, _OTHER[rec.dir], op)
                if type(req) is int
                else _Request(*req)
            )
        upd = v[i + 9]
        if upd is not None:
            if type(upd) is int:  # the request's message learns what the answer's pairing gave it
                held = self.requests.pop((upd, -1), None)
                if held is not None:
                    held.partner_seq = rec.seq
                    held.latency_ns = lat
                    held.op_seq = op
            else:
                for u in upd:
                    self.update(u)
        if a.kind is _REQUEST and a.idkey is not None:
            self.requests[(rec.line, -1)] = a
        return a

    def update(self, u: tuple) -> None:
        """A request's message as pairing changed it in the analysis process (kept: a response
        whose request the writer's stash no longer held may not be its answer, which comes later)."""
        line, pos, partner, lat, op, note = u
        a = self.requests.get((line, pos))
        if a is not None:
            a.partner_seq = partner
            a.latency_ns = lat
            a.op_seq = op
            a.pair_note = note

    def prune(self, stash: dict) -> None:
        """After a flush: only the requests the writer's stash still holds (with their batches'
        other requests) can change again; the others are forgotten (memory stays bounded)."""
        requests = self.requests
        if len(requests) <= 2 * (len(stash) + PRUNE_SLACK):
            return
        keep = {}
        for _, _, top in stash.values():
            line = top.rec.line
            members = top.members
            for k in [(line, i) for i in range(len(members))] if members else [(line, -1)]:
                a = requests.get(k)
                if a is not None:
                    keep[k] = a
        self.requests = keep

    def feed(self, rec: Record) -> Any:
        line = rec.line
        v = self.results
        i = self.at
        n = len(v)
        while i < n and v[i] < line:  # (rows the analysis met as unreadable before feeding)
            if v[i + 1] == 0 and v[i + 3].__class__ is not int:
                self.last_why = v[i + 3]
            i += _SIZE[v[i + 1]]
        if i >= n or v[i] != line:
            raise PipelineBroken("the analysis process sent no result for this row")
        tag = v[i + 1]
        self.at = i + _SIZE[tag]
        if tag == 0:
            return self.plain(rec, v, i + 2)
        if tag == 3:
            return self.decode(rec, v[i + 2])
        if tag == 1:
            for u in v[i + 3]:
                self.update(u)
            return decode_events(v[i + 2])
        raise _raised(v[i + 2], v[i + 3])

    def finish(self) -> list[_Event]:
        return self.ended


def read_frame(src: BinaryIO) -> Any:
    head = src.read(HEAD.size)
    if not head:
        return None
    if len(head) != HEAD.size:
        raise PipelineBroken("the analysis process stopped mid-frame")
    tag, size = HEAD.unpack(head)
    data = src.read(size)
    if len(data) != size:
        raise PipelineBroken("the analysis process stopped mid-frame")
    return marshal.loads(data) if tag == b"M" else pickle.loads(data)


class Writer(Annotator):
    """Annotator's rows, notes, details and summary, from the frames of SOURCE."""

    def __init__(self, capture: str, workdir: str, source: BinaryIO, *, follow: bool = False, emit=None):
        super().__init__(capture, workdir, follow=follow, emit=emit, analyser=ReplayAnalyser())
        self.source = source
        self.finished = False  # the analysis said its last word (done, or an error)

    def run(self) -> None:
        try:
            replay = self.analyser
            while True:
                op = read_frame(self.source)
                if op is None:
                    if not self.finished and not self.stop.is_set():
                        self.emit({"error": "analysis stopped: the analysis process ended"})
                    return
                what = op[0]
                if what == "rows":
                    _, first, n, results = op
                    if first != self.row:
                        raise PipelineBroken(f"rows from {first}, expected {self.row}")
                    replay.results = results
                    replay.at = 0
                    fill(self, first, self.lines(first, n))
                elif what == "flush":
                    _, eof, done, take, facts, updates = op
                    for u in updates:
                        replay.update(u)
                    if facts is not None:
                        replay.sessions = {c: KnownFacts(c, f) for c, f in pickle.loads(facts).items()}
                    self.settle_rows()
                    replay.prune(self.stash)
                    self._eof_reported = eof
                    self.report(eof=eof, done=done, summary=take)
                    if done:
                        self.finished = True
                elif what == "finish":
                    for u in op[2]:
                        replay.update(u)
                    replay.ended = decode_events(op[1])
                    self.end_sessions()
                elif what == "error":
                    self.finished = True
                    self.emit({"error": op[1]})
                    return
                else:
                    raise PipelineBroken(f"unknown frame {what!r}")
        finally:
            self.close()

    def lines(self, first: int, n: int) -> list[bytes]:
        """Rows FIRST..FIRST+N-1 as the analysis read them (this index caught up to them first)."""
        index = self.index
        for _ in range(1000):
            if len(index) >= first + n:
                break
            if not index.update() and len(index) < first + n:
                time.sleep(0.01)  # (a followed file's growth the analysis saw, not yet seen here)
        if len(index) < first + n:
            raise PipelineBroken("the capture has fewer rows than the analysis read")
        out: list[bytes] = []
        while len(out) < n:
            got = block(index, first + len(out), first + n)
            if not got:
                raise PipelineBroken("the capture has fewer rows than the analysis read")
            out.extend(got)
        return out


def reap(pid: int) -> None:
    """The analysis process waited for (it stops when its stdin closes), killed past REAP_SECONDS."""
    deadline = time.monotonic() + REAP_SECONDS
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        if done:
            return
        if time.monotonic() >= deadline:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            return
        time.sleep(0.01)


class Closer:
    """Closes a descriptor once, from whichever thread gets there first."""

    def __init__(self, fd: int):
        self.fd = fd
        self.lock = threading.Lock()

    def close(self) -> None:
        with self.lock:
            if self.fd >= 0:
                try:
                    os.close(self.fd)
                except OSError:
                    pass
                self.fd = -1


def run_pipeline(capture: str, workdir: str, *, follow: bool = False, emit=None, configure=None) -> int:
    """The viewer's analysis on two processes: the analysis forked (tracer.view.pipeline.start),
    the rows written here. Stops when this process's stdin closes (a pipe: the viewer's), or at the
    end of the capture; the analysis stops with it, whichever ends first, and is reaped."""
    from tracer.view.pipeline import start

    pid, data_r, ctl_w = start(capture, follow, configure)
    ctl = Closer(ctl_w)
    try:
        writer = Writer(capture, workdir, os.fdopen(data_r, "rb"), follow=follow, emit=emit)
    except BaseException:
        ctl.close()
        reap(pid)
        raise

    def watch_stdin() -> None:  # the viewer closes our stdin (or dies): stop, and the analysis with us
        try:
            while os.read(0, 4096):  # (the descriptor: see tracer.view.annotate.main)
                pass
        except (OSError, ValueError):
            pass
        writer.stop.set()
        ctl.close()

    def on_signal(signum, _frame) -> None:
        # the viewer stops us with SIGTERM (tracer.inputs.spooled.stop_process), a closed terminal
        # with SIGHUP: the analysis is stopped and reaped first, then the signal's own action, so
        # no process outlives the one the viewer waits for
        ctl.close()
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, on_signal)

    import stat

    if stat.S_ISFIFO(os.fstat(0).st_mode):
        threading.Thread(target=watch_stdin, daemon=True).start()
    try:
        writer.run()
    except BrokenPipeError:
        return 0
    except Exception as exc:
        try:
            writer.emit({"error": f"analysis stopped: {type(exc).__name__}: {str(exc)[:300]}"})
        except OSError:
            pass
        return 1
    finally:
        ctl.close()
        writer.source.close()
        reap(pid)
    return 0
