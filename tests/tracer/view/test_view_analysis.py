"""The viewer's analysis process says, row by row, what the analyser run in this process says.

The oracle is the analyser over the capture's records here, each message's details built at once
(tracer.view.details.detail_of); the analysis process stores them compactly and the viewer expands
the one it shows. Both must give the same words, for every fixture capture and every rule case.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cases import build_records, initialize, initialize_result, load_rule_cases
from tracer.analyser import analyse_all
from tracer.capture import header_record, read_capture, write_records
from tracer.model import RecordType
from tracer.safejson import dumps as safe_dumps
from tracer.view.annotate import Annotator
from tracer.view.annotations import Annotations
from tracer.view.details import SseClock, detail_of
from tracer.view.rowformat import SeqMap, finding_list

CAPTURES = Path(__file__).resolve().parents[3] / "fixtures" / "captures"
FIXTURES = sorted(CAPTURES.glob("*.jsonl"))
CASES = load_rule_cases()
RULE_IDS = sorted({rule_id for rule_id, _ in CASES})


def _in_process(path: Path) -> dict[int, dict]:
    """Row -> the details of its message, from the analyser run here over the capture's records."""
    with open(path, "rb") as fh:
        recs = [r for r in read_capture(fh, str(path)) if getattr(r, "type", None) is not None]
    msgs, ends = analyse_all(recs)
    seqs = SeqMap()
    sse = SseClock()
    timing = {}
    for r in recs:
        if r.type is RecordType.MESSAGE:
            seqs.add(r.seq, r.line - 1)
        t = sse.timing(r)
        if t is not None:
            timing[r.seq] = t
    out = {}
    for m in msgs:
        d = detail_of(m, seqs.row)
        if m.seq in timing:
            d["sse"] = timing[m.seq]
        out[m.rec.line - 1] = d
    for f in ends:
        row = seqs.row(f.seq) if f.seq else None
        if row is not None:
            out[row].setdefault("f", []).append(finding_list(f, seqs.row))
    return out


def _by_the_viewer(path: Path, work: Path) -> Annotations:
    progress: list = []
    Annotator(str(path), str(work), emit=progress.append).run()
    ann = Annotations(str(path), workdir=str(work))
    for msg in progress:
        ann._apply(msg)
    assert ann.done
    return ann


def _same_rows(path: Path, work: Path) -> int:
    expected = _in_process(path)
    ann = _by_the_viewer(path, work)
    try:
        _check_rows(ann, expected, path)
    finally:
        ann.stop()  # (its row files: ~1,800 cases would hold two descriptors each to the session's end)
    return len(expected)


def _check_rows(ann: Annotations, expected: dict[int, dict], path: Path) -> None:
    for row, want in expected.items():
        s = ann.row(row)
        got = ann.details(s)
        assert got == _plain(want), f"row {row} of {path.name}"
        assert s.kind == want["kind"] and s.era == want["era"]
        rules = [f[0] for f in want.get("f") or ()] + [
            f[0] for m in want.get("members") or () for f in m.get("f") or ()
        ]
        assert ann.finding_rules(s) == rules  # what the filter's rule: term reads
        assert s.nfind == len(want.get("f") or ()) + sum(
            len(m.get("f") or ()) for m in want.get("members") or ()
        )


def _plain(value):
    """A details dict as it is stored: JSON (no enums, no tuples), written by the readable policy
    (a lone surrogate becomes its visible escape, as the detail pane shows it)."""
    return json.loads(safe_dumps(value))


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_the_viewer_shows_for_each_row_of_a_fixture_what_the_analyser_says_of_it(path, tmp_path):
    assert _same_rows(path, tmp_path) > 0


@pytest.mark.parametrize("rule_id", RULE_IDS)
def test_the_viewer_shows_for_each_row_of_a_rule_case_what_the_analyser_says_of_it(rule_id, tmp_path):
    for i, (_, case) in enumerate(c for c in CASES if c[0] == rule_id):
        cap = tmp_path / f"case{i}.jsonl"
        transport = case.get("transport", "stdio")
        write_records(
            str(cap), header_record(transport), build_records(case["messages"], transport), redact=False
        )
        work = tmp_path / f"w{i}"
        work.mkdir()
        _same_rows(cap, work)


@pytest.mark.parametrize("flush", ["at the end", "after every row"])
def test_each_request_of_a_batch_answered_apart_shows_its_own_answer(tmp_path, monkeypatch, flush):
    # before, the batch's requests took one place in the row writer's stash (its seq): only the
    # first learned its answer; prompts/list, answered 2 ms later, read as unanswered
    from tracer.view import annotate

    if flush == "after every row":
        monkeypatch.setattr(annotate, "FLUSH_ROWS", 1)
        monkeypatch.setattr(annotate, "CHECK_ROWS", 1)
        monkeypatch.setattr(annotate, "flush_due", lambda unwritten, last: True)
    caps = {"tools": {}, "prompts": {}}
    messages = [
        {"c2s": initialize(1, "c", version="2025-03-26")},
        {"s2c": initialize_result(1, caps, version="2025-03-26")},
        {"c2s": {"jsonrpc": "2.0", "method": "notifications/initialized"}},
        {"c2s": [{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 6, "method": "prompts/list"}]},
        {"s2c": {"jsonrpc": "2.0", "id": 5, "result": {"tools": []}}, "t_ms": 1},
        {"s2c": {"jsonrpc": "2.0", "id": 6, "result": {"prompts": []}}, "t_ms": 2},
    ]  # fmt: skip
    cap = tmp_path / "batch.jsonl"
    write_records(str(cap), header_record("stdio"), build_records(messages), redact=False)
    work = tmp_path / "w"
    work.mkdir()
    assert _same_rows(cap, work) == 6
    batch = _in_process(cap)[4]["members"]
    assert [(m["method"], m.get("partner")) for m in batch] == [("tools/list", 5), ("prompts/list", 6)]
    assert all(m.get("lat") is not None for m in batch)  # (what the viewer shows: the test above)


def test_ids_and_reasons_that_json_cannot_keep_as_they_are_still_read_the_same(tmp_path):
    # a string id with a lone surrogate and an id beyond 64 bits: their reasons are stored as words
    cap = tmp_path / "c.jsonl"
    lines = [
        b'{"jsonrpc":"2.0","id":"\\ud800x","method":"ping"}',
        b'{"jsonrpc":"2.0","id":"\\ud800x","result":{}}',
        b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}',
        b'{"jsonrpc":"2.0","id":"caf\xc3\xa9","method":"initialize","params":{"protocolVersion":"\xc3\xa9"}}',
        b'{"jsonrpc":"2.0","id":"caf\xc3\xa9","result":{"protocolVersion":"\xc3\xa9"}}',
    ]
    from tests.cases import T0
    from tracer.model import Direction, Record

    recs = [
        Record(
            RecordType.MESSAGE,
            seq=i + 1,
            t_ns=T0 + i,
            dir=Direction.C2S if i % 2 == 0 else Direction.S2C,
            transport="stdio",
            conn="stdio-1",
            raw=line,
        )
        for i, line in enumerate(lines)
    ]
    write_records(str(cap), header_record("stdio"), recs, redact=False)
    assert _same_rows(cap, tmp_path) == len(lines)


@pytest.mark.parametrize("connections", [1, 3])
def test_plain_messages_store_no_details_and_still_read_as_the_analyser_says(
    connections, tmp_path, monkeypatch
):
    # rows flushed every few rows: requests answered after their row was written are patched,
    # requests still waiting at a flush are settled then
    import tracer.view.annotate as annotate
    from tests.gencapture import generate

    monkeypatch.setattr(annotate, "FLUSH_ROWS", 1)
    cap = tmp_path / "gen.jsonl"
    generate(cap, 600, 40, connections=connections)
    work = tmp_path / "w"
    work.mkdir()
    assert _same_rows(cap, work) >= 600
    with_findings = sum(1 for row, d in _in_process(cap).items() if d.get("f"))
    stored = (work / "details.jsonl").read_bytes().count(b"\n")
    assert stored <= with_findings + 2 * connections  # (a session's discover probe or end)


def test_the_analysis_reads_a_bounded_block_of_rows_at_a_time_each_its_own_line(tmp_path, monkeypatch):
    # a capture of long lines must not be read 2,048 rows at once (memory stays bounded), and
    # however the rows are cut into blocks each is its line, the torn last one too
    from tracer.index import LineIndex
    from tracer.view import hotrows

    monkeypatch.setattr(hotrows, "BLOCK_BYTES", 4096)
    lines = [(FIXTURES[0].read_bytes().splitlines() * 3)[i] for i in range(40)]
    lines[5] = lines[5][:-1] + b"," + b'"pad":"' + b"x" * 9000 + b'"}'  # (one row past the block)
    path = tmp_path / "cap.jsonl"
    path.write_bytes(b"\n".join(lines))  # (no final newline: a torn last line)
    idx = LineIndex(str(path), final=True)
    idx.update()
    got: list[bytes] = []
    while len(got) < len(idx):
        rows = hotrows.block(idx, len(got), len(idx))
        assert rows and (len(rows) == 1 or sum(len(x) + 1 for x in rows) <= 4096)
        got += rows
    assert got == [idx.line(r) for r in range(len(idx))] == lines
    idx.close()


@pytest.mark.parametrize("path", FIXTURES, ids=[p.name for p in FIXTURES])
def test_rows_analysed_in_small_blocks_still_say_what_the_analyser_says(path, tmp_path, monkeypatch):
    from tracer.view import hotrows

    monkeypatch.setattr(hotrows, "BLOCK_BYTES", 700)  # (a row or two a block)
    assert _same_rows(path, tmp_path) > 0
