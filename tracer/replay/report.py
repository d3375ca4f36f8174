"""The replay report: one line per recorded request (same / differs / no answer / new error...).

`differs` names the paths that changed (ids, timestamps and ignored paths aside); the server's own
requests and what the new run's wire showed (a dead server, HTTP errors) are listed after. Any
difference, missing answer or unreadable input makes the replay fail (exit 1).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import IO, Any

from tracer.classify import id_key
from tracer.replay.diff import Difference, Ignores, diff
from tracer.replay.driver import RunResult, Sent
from tracer.safejson import tame, terminal_text, wire_exact


class Outcome(StrEnum):
    SAME = "same"
    DIFFERS = "differs"
    NO_ANSWER = "no answer"
    NEW_ERROR = "new error"
    CANCELLED = "cancelled"  # the recorded host cancelled it: nothing to compare
    SKIPPED = "skipped"  # not sent (an MRTR retry the new server did not ask for...)
    UNRECORDED = "no recorded answer"  # the capture has no answer to compare with


FAILING = frozenset({Outcome.DIFFERS, Outcome.NO_ANSWER, Outcome.NEW_ERROR, Outcome.UNRECORDED})


@dataclass
class RequestReport:
    conn: str
    seq: int
    line: int
    method: str
    label: str
    outcome: Outcome
    differences: list[Difference] = field(default_factory=list)
    note: str = ""
    latency_ms: float | None = None
    synthetic: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "conn": self.conn,
            "seq": self.seq,
            "line": self.line,
            "method": self.method,
            "request": self.label,
            "outcome": self.outcome.value,
        }
        if self.differences:
            out["differences"] = [d.to_dict() for d in self.differences]
        if self.note:
            out["note"] = self.note
        if self.latency_ms is not None:
            out["latency_ms"] = round(self.latency_ms, 3)
        if self.synthetic:
            out["synthetic"] = True
        return out


@dataclass
class ReplayReport:
    capture: str
    target: str
    transport: str
    new_capture: str | None = None
    requests: list[RequestReport] = field(default_factory=list)
    server_requests: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # input problems and wire trouble
    notes: list[str] = field(default_factory=list)

    @property
    def summary(self) -> Counter:
        return Counter(r.outcome.value for r in self.requests)

    @property
    def failed(self) -> bool:
        return (
            any(r.outcome in FAILING for r in self.requests)
            or bool(self.problems)
            or any(s["outcome"] != "answered" for s in self.server_requests)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "capture": self.capture,
            "target": self.target,
            "transport": self.transport,
            "new_capture": self.new_capture,
            "ok": not self.failed,
            "summary": dict(self.summary),
            "requests": [r.to_dict() for r in self.requests],
            "server_requests": self.server_requests,
            "problems": self.problems,
            "notes": self.notes,
        }


def _summarise_error(obj: Any) -> str:
    err = obj.get("error") if type(obj) is dict else None
    if type(err) is not dict:
        return ""
    return f"{err.get('code')} {err.get('message', '')}".strip()


def compare(s: Sent, ignores: Ignores, run: RunResult) -> RequestReport:
    ex = s.exchange
    recorded = ex.answer.obj if ex.answer is not None else None
    label = ex.label()
    rounds, step = 1, s.step
    while step.retry_of is not None:
        rounds, step = rounds + 1, step.retry_of
    if rounds > 1:
        label += f" (MRTR round {rounds})"
    rep = RequestReport(ex.conn, ex.seq, ex.line, ex.method, label, Outcome.SAME, synthetic=s.step.synthetic)
    if s.answered and s.sent_at:
        rep.latency_ms = (s.answered_at - s.sent_at) * 1000
    if s.skipped is not None:
        rep.outcome, rep.note = Outcome.SKIPPED, s.skipped
        return rep
    if s.unsent is not None and not ex.cancelled:
        rep.outcome, rep.note = Outcome.NO_ANSWER, s.unsent
        return rep
    if s.step.synthetic:
        if not s.answered:
            rep.outcome, rep.note = Outcome.NO_ANSWER, "the synthesised initialize got no answer"
        elif "error" in s.answer:
            rep.outcome, rep.note = Outcome.NEW_ERROR, _summarise_error(s.answer)
        else:
            rep.note = "synthesised: the capture has no handshake; not compared"
        return rep
    if ex.cancelled and (recorded is None or not s.answered):
        rep.outcome = Outcome.CANCELLED
        rep.note = "the recorded host cancelled it" + ("" if s.answered else "; no answer, as expected")
        return rep
    if recorded is None:
        rep.outcome = Outcome.UNRECORDED
        rep.note = "the capture ends before the recorded server answered; nothing to compare with"
        return rep
    if not s.answered:
        rep.outcome = Outcome.NO_ANSWER
        why = run.no_answer_reason.get(id_key(s.id)) if s.id is not None else None
        rep.note = why or ("the server went away" if run.problems else "no answer within the timeout")
        return rep
    if type(s.answer) is dict and "error" in s.answer and "error" not in recorded:
        rep.outcome = Outcome.NEW_ERROR
        rep.note = _summarise_error(s.answer)
        return rep
    rep.differences = diff(recorded, s.answer, ignores)
    if rep.differences:
        rep.outcome = Outcome.DIFFERS
    return rep


def build_report(
    runs: list[RunResult],
    ignores: Ignores,
    *,
    capture: str,
    target: str,
    transport: str,
    new_capture: str | None,
    input_problems: list[str],
) -> ReplayReport:
    rep = ReplayReport(capture, target, transport, new_capture, problems=list(input_problems))
    for run in runs:
        rep.notes.extend(run.plan.notes)
        for s in sorted(run.sent, key=lambda s: (s.step.index, s.exchange.seq)):
            rep.requests.append(compare(s, ignores, run))
        for ask in run.asks:
            item: dict[str, Any] = {
                "conn": run.plan.conversation.conn,
                "method": ask.method,
                "outcome": ask.outcome,
            }
            if ask.recorded is not None:
                item["recorded_seq"] = ask.recorded.seq
            if ask.differences:
                item["differences"] = [d.to_dict() for d in ask.differences]
            if ask.note:
                item["note"] = ask.note
            rep.server_requests.append(item)
        for ex in run.unasked:
            rep.server_requests.append(
                {
                    "conn": ex.conn,
                    "method": ex.method,
                    "outcome": "not asked",
                    "recorded_seq": ex.seq,
                    "note": "the recorded server asked this; the new server did not",
                }
            )
        rep.problems.extend(f"connection {run.plan.conversation.conn}: {p}" for p in run.problems)
        if run.stray:
            rep.notes.append(
                f"connection {run.plan.conversation.conn}: {run.stray} answer(s) to requests "
                f"the replay never sent"
            )
    return rep


# -- rendering -------------------------------------------------------------------------------------

_MARK = {
    Outcome.SAME: "=",
    Outcome.DIFFERS: "≠",
    Outcome.NO_ANSWER: "∅",
    Outcome.NEW_ERROR: "!",
    Outcome.CANCELLED: "×",
    Outcome.SKIPPED: "-",
    Outcome.UNRECORDED: "?",
}
_COLOR = {
    Outcome.SAME: "32",
    Outcome.DIFFERS: "33",
    Outcome.NO_ANSWER: "31",
    Outcome.NEW_ERROR: "31",
    Outcome.UNRECORDED: "31",
}


def _fmt_diff(d: Difference) -> str:
    if d.change == "changed":
        return f"{d.path}: {wire_exact.compact(d.recorded, 60)} → {wire_exact.compact(d.new, 60)}"
    if d.change == "added":
        return f"{d.path}: added {wire_exact.compact(d.new, 60)}"
    if d.change == "removed":
        return f"{d.path}: removed (was {wire_exact.compact(d.recorded, 60)})"
    return f"{d.path}: {wire_exact.compact(d.recorded, 50)} → {wire_exact.compact(d.new, 50)} (another type)"


def render_text(rep: ReplayReport, out: IO[str], *, color: bool = False) -> None:
    # Labels, notes and differences quote what peers sent: each goes through `t` (a lone surrogate,
    # an ESC sequence or a bidi override is written as its escape); only `paint` writes an ESC.
    t = terminal_text

    def paint(text: str, code: str | None) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if color and code else text

    out.write(t(f"replay of {rep.capture} against {rep.target} ({rep.transport})") + "\n")
    for note in rep.notes:
        out.write(f"  note: {t(note)}\n")
    several = len({r.conn for r in rep.requests}) > 1
    labels = [t(r.label) for r in rep.requests]
    width = max(map(len, labels), default=10)
    width = min(max(width, 10), 48)
    conn = None
    for r, label in zip(rep.requests, labels, strict=True):
        where = f"line {r.line}" if r.line else f"seq {r.seq}"
        if several and r.conn != conn:
            conn = r.conn
            out.write(f"connection {t(str(conn))}:\n")
        label = label if len(label) <= width else label[: width - 1] + "…"
        outcome = paint(f"{_MARK[r.outcome]} {r.outcome.value}", _COLOR.get(r.outcome))
        note = f"  ({t(r.note)})" if r.note and r.outcome is not Outcome.SAME else ""
        out.write(f"  {where:>10}  {label:<{width}}  {outcome}{note}\n")
        for d in r.differences[:12]:
            out.write(f"  {'':>10}    {t(_fmt_diff(d))}\n")
        if len(r.differences) > 12:
            out.write(f"  {'':>10}    … and {len(r.differences) - 12} more\n")
    if rep.server_requests:
        out.write("server requests:\n")
        for s in rep.server_requests:
            note = f"  ({s['note']})" if s.get("note") else ""
            out.write(t(f"  {s['method']}: {s['outcome']}{note}") + "\n")
            for d in s.get("differences", [])[:6]:
                out.write(t(f"      {d['path']}: {d['change']}") + "\n")
    for p in rep.problems:
        out.write(paint(f"problem: {t(p)}", "31") + "\n")
    counts = rep.summary
    parts = [f"{n} {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    verdict = paint("differences found", "31") if rep.failed else paint("no differences", "32")
    out.write(f"{len(rep.requests)} request(s): {', '.join(parts) or 'none'} — {verdict}\n")
    if rep.new_capture:
        out.write(f"new capture: {t(str(rep.new_capture))}\n")


def render_json(rep: ReplayReport, out: IO[str]) -> None:
    # (the report quotes what peers sent: lone surrogates and such are tamed, tracer.safejson)
    out.write(json.dumps(tame(rep.to_dict()), indent=2, ensure_ascii=False) + "\n")
