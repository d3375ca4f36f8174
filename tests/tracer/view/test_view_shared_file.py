"""A capture that several tees appended to at once (a host starting the same server more than once
with one `-o`): each tee numbers its records from seq 1, so one seq names a row of each connection.
The viewer's partner row (the `p` jump) and the detail pane's pairing point at the row of the
message's own connection, as `mcptrace lint` pairs them, on two processes and on one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tracer.test_concurrent_recordings import CAPTURES, _interleaved
from tracer.analyser import analyse_all
from tracer.capture import read_capture
from tracer.model import RecordType
from tracer.view.annotations import Annotations

ROOT = Path(__file__).resolve().parents[3]
BOUND_S = 120.0  # generous: the machine may be loaded


def _analysed(capture: Path, workdir: Path, *extra: str) -> Annotations:
    workdir.mkdir()
    p = subprocess.run(
        [sys.executable, "-m", "tracer.view.annotate", str(capture), str(workdir), *extra],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=BOUND_S,
        check=True,
    )
    ann = Annotations(str(capture), workdir=str(workdir))
    for line in p.stdout.splitlines():
        ann._apply(json.loads(line))
    return ann


def _in_step(tmp_path: Path) -> Path:
    """The tees started together: a line of each in turn from their headers on (each seq is then
    written by every tee, one just after the other)."""
    live = [c.read_bytes().splitlines(keepends=True) for c in CAPTURES]
    lines: list[bytes] = []
    while any(live):
        for r in live:
            if r:
                lines.append(r.pop(0))
    path = tmp_path / "in_step.jsonl"
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.parametrize("written", [_in_step, _interleaved], ids=["started-together", "started-apart"])
@pytest.mark.parametrize("mode", [(), ("--one-process",)], ids=["two-processes", "one-process"])
def test_every_paired_row_of_tees_sharing_a_file_points_at_its_own_connections_partner(
    tmp_path, mode, written
):
    shared = written(tmp_path)
    with open(shared, "rb") as fh:
        recs = list(read_capture(fh, str(shared)))
    msgs, _ = analyse_all(recs)
    messages = [r for r in recs if r.type is RecordType.MESSAGE]
    row_of = {(r.conn, r.seq): r.line - 1 for r in messages}  # (each tee's seqs are its own)
    assert len(row_of) == len(messages) and len({r.conn for r in messages}) == 3  # (three tees)
    ann = _analysed(shared, tmp_path / "w", *mode)
    checked = 0
    for m in msgs:
        row = m.rec.line - 1
        if m.partner_seq is None:
            continue
        want = row_of[(m.rec.conn, m.partner_seq)]
        summary = ann.row(row)
        assert summary.partner == want, (row, m.rec.conn, m.partner_seq)
        assert ann.details(summary)["prow"] == want, row
        checked += 1
    assert checked >= 60  # (every request and answer of the three sessions, each way)


@pytest.mark.parametrize("mode", [(), ("--one-process",)], ids=["two-processes", "one-process"])
def test_a_finding_made_when_a_tees_session_ends_marks_that_connections_row(tmp_path, mode):
    # the first tee's second answer (after initialize's) is missing: its request is flagged never
    # answered when the capture ends, and the other tees wrote rows of the same seq just after it
    live = [c.read_bytes().splitlines(keepends=True) for c in CAPTURES]
    answers = [i for i, line in enumerate(live[0]) if b'"dir":"s2c"' in line and b'\\"result\\"' in line]
    del live[0][answers[1]]
    lines: list[bytes] = []
    while any(live):
        for r in live:
            if r:
                lines.append(r.pop(0))
    shared = tmp_path / "unanswered.jsonl"
    shared.write_bytes(b"".join(lines))
    with open(shared, "rb") as fh:
        recs = list(read_capture(fh, str(shared)))
    _, ends = analyse_all(recs)
    (found,) = [f for f in ends if f.rule == "MCP211"]
    request = next(r for r in recs if r.line == found.line)
    same_seq = [r.line - 1 for r in recs if r.type is RecordType.MESSAGE and r.seq == request.seq]
    assert len(same_seq) == 3  # (a row of each tee)
    ann = _analysed(shared, tmp_path / "w", *mode)
    assert {row: ann.row(row).nfind for row in same_seq} == {
        row: int(row == request.line - 1) for row in same_seq
    }
    assert "MCP211" in ann.finding_rules(ann.row(request.line - 1))
