"""The background analysis writes, row by row, what the analyser says about each message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.analyser import analyse_all
from tracer.capture import read_capture
from tracer.model import Kind, RecordType
from tracer.view.annotate import Annotator
from tracer.view.annotations import Annotations
from tracer.view.viewdata import CaptureView

CAPTURES = Path(__file__).resolve().parents[3] / "fixtures" / "captures"
FIXTURES = sorted(CAPTURES.glob("*.jsonl"))


def _expected(path: Path):
    with open(path, "rb") as fh:
        recs = [r for r in read_capture(fh, str(path)) if not hasattr(r, "torn")]
    msgs, ends = analyse_all(recs)
    return recs, msgs, ends


def _annotate(path: Path, workdir: Path) -> list:
    msgs = []
    Annotator(str(path), str(workdir), emit=msgs.append).run()
    return msgs


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_row_summaries_agree_with_the_analyser_for_every_message(path, tmp_path):
    recs, msgs, ends = _expected(path)
    progress = _annotate(path, tmp_path)
    assert progress[-1]["done"] and progress[-1]["rows"] == len(recs)
    ann = Annotations(str(path), workdir=str(tmp_path))
    for m in progress:
        ann._apply(m)
    row_of_seq = {r.seq: i for i, r in enumerate(recs) if r.type is RecordType.MESSAGE}
    end_counts: dict[int, int] = {}
    for f in ends:
        end_counts[f.seq] = end_counts.get(f.seq, 0) + 1
    for m in msgs:
        row = row_of_seq[m.seq]
        s = ann.row(row)
        assert s.kind == m.kind.value and s.era == m.era.value
        assert s.method == (m.label or None)
        assert s.partner == (row_of_seq.get(m.partner_seq) if m.partner_seq is not None else None)
        if m.latency_ns is not None:
            assert s.latency_ns == m.latency_ns // 1000 * 1000
        own = len(m.findings) + sum(len(x.findings) for x in m.members or ())
        assert s.nfind == own + end_counts.get(m.seq, 0)
        d = ann.details(s)
        assert d["why"] == m.era_reason
        assert [f[0] for f in d.get("f", [])] == [f.rule for f in m.findings] + [
            f.rule for f in ends if f.seq == m.seq
        ]
    with_findings = sorted(
        {row_of_seq[m.seq] for m in msgs if m.findings} | {row_of_seq[f.seq] for f in ends if f.seq}
    )
    assert list(ann.finding_rows) == with_findings


def test_a_request_learns_its_partner_and_latency_when_the_answer_comes(tmp_path):
    path = CAPTURES / "demo.jsonl"
    _, msgs, _ = _expected(path)
    view = CaptureView(str(path))
    view.start()
    try:
        assert view.ann.wait(lambda: view.ann.done, 120)
        view.index.build()
        requests = [m for m in msgs if m.kind is Kind.REQUEST and m.partner_seq is not None]
        assert requests
        for m in requests:
            row = next(r for r in range(len(view)) if view.basics(r).seq == m.seq)
            info = view.info(row)
            assert view.basics(info.partner).seq == m.partner_seq
            assert info.latency_ns == m.latency_ns // 1000 * 1000
    finally:
        view.close()


def test_broken_and_blank_lines_become_rows_that_say_so(tmp_path):
    path = tmp_path / "cap.jsonl"
    path.write_bytes(
        b'{"type":"header","format":"mcptrace","version":1}\n\nnot json\n'
        b'{"type":"message","seq":1,"t_ns":5,"dir":"c2s","text":"{\\"jsonrpc\\":\\"2.0\\",\\"id\\":1,\\"method\\":\\"ping\\"}"}\n'
        b'{"type":"mess'
    )
    work = tmp_path / "w"
    work.mkdir()
    progress = _annotate(path, work)
    ann = Annotations(str(path), workdir=str(work))
    for m in progress:
        ann._apply(m)
    kinds = [ann.row(i).rtype for i in range(5)]
    assert kinds == ["header", "blank", "broken", "message", "broken"]
    assert "torn last line" in ann.details(ann.row(4))["broken"]
    assert "broken capture record" in ann.details(ann.row(2))["broken"]


def test_sse_events_get_their_place_and_gaps_in_the_stream(tmp_path):
    from tests.factory import notification, request, result
    from tracer.capture import CaptureWriter, header_record
    from tracer.model import Direction, Record

    path = tmp_path / "sse.jsonl"
    http = {"method": "POST", "url": "http://127.0.0.1/mcp", "status": 200}
    on = dict(conn="c", transport="http")
    sse = dict(on, http=http, sse={"stream": "s1", "event": "message"})
    with CaptureWriter(path, header_record("http")) as w:
        w.write(request("tools/call", 1, {"name": "x"}, era="legacy", t_ns=1_000_000, http=http, **on))
        w.write(Record(RecordType.EVENT, t_ns=2_000_000, data={"event": "stream-open", "stream": "s1"}, **on))
        progress = {"progressToken": 1, "progress": 1}
        w.write(notification("notifications/progress", progress, dir=Direction.S2C, t_ns=5_000_000, **sse))
        w.write(result(1, {"content": []}, t_ns=9_000_000, **sse))
    progress = _annotate(path, tmp_path)
    ann = Annotations(str(path), workdir=str(tmp_path))
    for m in progress:
        ann._apply(m)
    first, second = ann.details(ann.row(3))["sse"], ann.details(ann.row(4))["sse"]
    assert (first["n"], first["since_open"], first["since_prev"]) == (1, 3_000_000, 3_000_000)
    assert (second["n"], second["since_open"], second["since_prev"]) == (2, 7_000_000, 4_000_000)


def test_each_request_of_a_second_recording_in_the_file_points_at_its_own_answer(tmp_path):
    # A host restarted its server: the file holds two recordings, the second's connection named as
    # the first's, the same seqs again. The second header closes the first's sessions (a request
    # left unanswered is forgotten) and its answers, one with a finding, pair anew.
    from tests.cases import LEGACY_HANDSHAKE, build_records
    from tracer.capture import header_record, write_records

    call = {"name": "search", "arguments": {}}
    entries = [
        *LEGACY_HANDSHAKE,
        {"c2s": {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": call}},
        {"c2s": {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": call}},
        {"s2c": {"jsonrpc": "2.0", "id": 5, "result": {"content": "not a list"}}},  # (a finding)
        {"s2c": {"jsonrpc": "2.0", "id": 6, "result": {"content": []}}},
        {"c2s": {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call}},  # (never answered)
    ]
    one = tmp_path / "one.jsonl"
    write_records(str(one), header_record("stdio"), build_records(entries), redact=False)
    path = tmp_path / "two.jsonl"
    path.write_bytes(one.read_bytes() * 2)
    with open(path, "rb") as fh:
        recs = list(read_capture(fh, str(path)))
    msgs, _ = analyse_all(recs)
    second = [i for i, r in enumerate(recs) if r.type is RecordType.HEADER][1]
    work = tmp_path / "w"
    work.mkdir()
    progress = _annotate(path, work)
    ann = Annotations(str(path), workdir=str(work))
    for m in progress:
        ann._apply(m)
    checked = 0
    for m in msgs:
        row = next(i for i, r in enumerate(recs) if r is m.rec)
        part = range(second, len(recs)) if row > second else range(second)
        want = next(i for i in part if recs[i].seq == m.partner_seq) if m.partner_seq is not None else None
        assert ann.row(row).partner == want, row
        checked += want is not None
    assert checked == 2 * 2 * 3  # (initialize and both calls, each way, in each recording)
    assert any(ann.row(r).nfind for r in range(second, len(recs)))


def test_a_request_waiting_for_its_answer_reads_as_its_own_row_until_its_row_is_written(tmp_path):
    # the row loop leaves a waiting request's place in the buffer empty and packs it once, when
    # answered or at the flush: until then the analysis must read the row from its fields
    from tests.gencapture import generate
    from tracer.view.rowformat import F_SEQ, KIND_CODE

    whole = tmp_path / "whole.jsonl"
    generate(whole, 60)
    lines = whole.read_bytes().splitlines(keepends=True)
    last_request = max(i for i, line in enumerate(lines) if b'"c2s"' in line and b"tools/call" in line)
    path = tmp_path / "cut.jsonl"
    path.write_bytes(b"".join(lines[: last_request + 1]))  # (its answer not yet written)
    _, msgs, _ = _expected(path)
    waiting_seqs = {
        m.seq for m in msgs if m.kind is Kind.REQUEST and m.idkey is not None and m.partner_seq is None
    }
    assert waiting_seqs
    (tmp_path / "work").mkdir()
    ann = Annotator(str(path), str(tmp_path / "work"), emit=lambda m: None)
    try:
        ann.index.update()
        ann.process(len(ann.index))  # every row analysed; a capture this small is not flushed yet
        assert ann.store.flushed == 0
        waiting = {ann.fields_of(row)[F_SEQ]: row for row in ann.deferred}
        assert set(waiting) == waiting_seqs
        assert all(ann.fields_of(row)[1] == KIND_CODE["request"] for row in waiting.values())
        ann.flush(eof=True)
        for seq, row in waiting.items():
            assert ann.store.get(row)[F_SEQ] == seq
            assert ann.store.get(row)[1] == KIND_CODE["request"]
    finally:
        ann.close()


def test_a_capture_whose_lines_end_in_cr_alone_is_said_so_not_called_a_stopped_writer(tmp_path):
    # (an editor or a tool rewrote the line ends: the file is one unterminated line, no writer was stopped)
    path = tmp_path / "cap.jsonl"
    lines = (CAPTURES / "sdk-stdio-legacy.jsonl").read_bytes().splitlines()[:4]
    path.write_bytes(b"\r".join(lines) + b"\r")
    work = tmp_path / "w"
    work.mkdir()
    ann = Annotations(str(path), workdir=str(work))
    for m in _annotate(path, work):
        ann._apply(m)
    why = ann.details(ann.row(0))["broken"]
    assert "carriage return alone" in why and "stopped" not in why
    lint = subprocess.run(
        [sys.executable, "-m", "tracer", "lint", "--no-config", str(path)], capture_output=True, text=True
    )
    assert lint.returncode == 3 and "carriage return alone" in lint.stderr + lint.stdout


@pytest.mark.parametrize("mode", [[], ["--one-process"]], ids=["two processes", "one process"])
def test_a_line_past_the_line_cap_is_a_broken_row_that_says_so_and_is_never_held(tmp_path, mode):
    # as lint reports the line (tracer.lines): the viewer's analysis read it whole, four times its size
    lines = (CAPTURES / "sdk-stdio-legacy.jsonl").read_bytes().splitlines(keepends=True)
    long = b'{"type":"message","seq":99,"t_ns":5,"dir":"c2s","text":"' + b"a" * (9 << 20) + b'"}\n'
    path = tmp_path / "cap.jsonl"
    path.write_bytes(b"".join([*lines[:3], long, *lines[3:]]))
    work = tmp_path / "w"
    work.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "tracer.view.annotate", str(path), str(work), *mode],
        capture_output=True,
        env={**os.environ, "MCPTRACE_MAX_LINE_MB": "8"},
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    ann = Annotations(str(path), workdir=str(work))
    progress = [json.loads(x) for x in run.stdout.splitlines()]
    for m in progress:
        ann._apply(m)
    assert progress[-1]["done"] and progress[-1]["rows"] == len(lines) + 1
    assert ann.row(3).rtype == "broken"
    assert ann.details(ann.row(3))["broken"].startswith("a line longer than 8 MiB (the line cap")
    assert ann.row(4).rtype == "message"  # (and reading went on after it)
