"""The viewer's analysis on two processes (tracer.view.pipeline: the analyser; tracer.view.replay: the
row writer) writes what the one-process analysis writes, follows a growing capture, and leaves no
process behind however it is stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.cases import build_records, load_rule_cases
from tests.gencapture import generate
from tracer.analyser import Analyser
from tracer.capture import header_record, read_capture, record_to_dict
from tracer.model import RecordType
from tracer.view.annotations import Annotations
from tracer.view.rowformat import F_LAT_NS, F_NOTE, F_SEQ, ROW, RTYPE_CODE

ROOT = Path(__file__).resolve().parents[3]
CAPTURES = sorted((ROOT / "fixtures" / "captures").glob("*.jsonl"))
BOUND_S = 120.0  # generous: the machine may be loaded; every wait below is on a condition


def _analyse(capture: Path, workdir: Path, *extra: str, flushes: str | None = None) -> list[dict]:
    """`python -m tracer.view.annotate` run to its end; FLUSHES (a key of FLUSHES) forces when it
    flushes, in whichever process decides (the analysis process on two): no clock then."""
    workdir.mkdir()
    cmd = ["-m", "tracer.view.annotate"] if flushes is None else ["-c", FLUSHES[flushes]]
    p = subprocess.run(
        [sys.executable, *cmd, str(capture), str(workdir), *extra],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=BOUND_S,
        check=True,
    )
    return [json.loads(line) for line in p.stdout.splitlines()]


_FORCED = """import sys
import tracer.view.annotate as a
{}
sys.exit(a.main(sys.argv[1:]))
"""
FLUSHES = {
    # a flush after every row (each row its own block): a request's answer always comes after it
    "every row": _FORCED.format(
        "a.FLUSH_ROWS = a.CHECK_ROWS = 1\na.flush_due = lambda unwritten, last: True"
    ),
    # at every flush check (2,048 rows, then every 256), as a slow machine flushes
    "every check": _FORCED.format("a.flush_due = lambda unwritten, last: True"),
    # none before the end of the file, as a fast machine flushes a small capture
    "the end only": _FORCED.format("a.flush_due = lambda unwritten, last: False"),
}


def _written(workdir: Path, progress: list[dict]) -> dict:
    """What a reader of the work directory gets: the files, the tables the reports sent, the end."""
    methods: dict = {}
    notes: list = []
    frows: list = []
    for m in progress:
        methods.update(m.get("m", {}))
        if "w" in m:
            assert m["w"][0] == len(notes)
            notes.extend(m["w"][1])
        frows.extend(m.get("fr", []))
    return {
        "rows": (workdir / "rows.bin").read_bytes(),
        "details": (workdir / "details.jsonl").read_bytes(),
        "methods": methods,
        "notes": notes,
        "frows": frows,
        "last": progress[-1],
    }


def _rule_cases_capture(path: Path) -> Path:
    """Every rule case's messages, one recording after another in one file (connections come back,
    requests go unanswered, batches, invalid messages, end-of-session findings)."""
    with open(path, "wb") as fh:
        for name, case in load_rule_cases():
            fh.write(orjson.dumps(header_record("stdio", command=["case", name])) + b"\n")
            for rec in build_records(case["messages"], case.get("transport", "stdio")):
                fh.write(orjson.dumps(record_to_dict(rec)) + b"\n")
        fh.write(b"not a record\n\n")
        fh.write(b'{"type": "message", "seq": 99999999999999999999999}\n')
        fh.write(b'{"type": "message", "dir": "c2s", "t_ns": 1, "seq": 5, "text": "torn')
    return path


def _inputs(tmp_path: Path) -> list[Path]:
    generated = tmp_path / "generated.jsonl"
    generate(generated, 3000, 50, connections=3)
    return [*CAPTURES, _rule_cases_capture(tmp_path / "cases.jsonl"), generated]


@pytest.mark.parametrize("flushes", ["every check", "the end only"])
def test_two_processes_write_the_rows_details_and_summary_one_process_writes(tmp_path, flushes):
    # the same flushes on both sides: the clock decides them otherwise, and the bytes depend on
    # them (where details are stored and in which order, the notes' numbering, what the last
    # report still carries) while what a reader gets does not (the test below)
    for i, capture in enumerate(_inputs(tmp_path)):
        one = _analyse(capture, tmp_path / f"one{i}", "--one-process", flushes=flushes)
        two = _analyse(capture, tmp_path / f"two{i}", flushes=flushes)
        assert one[-1]["done"] and two[-1]["done"], capture.name
        assert _written(tmp_path / f"two{i}", two) == _written(tmp_path / f"one{i}", one), capture.name


def _what_a_reader_gets(capture: Path, workdir: Path, progress: list[dict]) -> dict:
    """Every row as the viewer reads it (tracer.view.annotations: its summary, details and finding
    rules; its fields but where its details are stored), the rows with findings, the summary."""
    ann = Annotations(str(capture), workdir=str(workdir))
    try:
        for msg in progress:
            ann._apply(msg)
        assert ann.done
        rows = []
        for row in range(ann.rows_done):
            s = ann.row(row)
            seen = {k: getattr(s, k) for k in s.__slots__ if k not in ("det_off", "fields")}
            rows.append((seen, s.fields[:F_NOTE] + s.fields[F_SEQ:], ann.details(s), ann.finding_rules(s)))
        return {"rows": rows, "finding_rows": list(ann.finding_rows), "summary": ann.summary}
    finally:
        ann.stop()


@pytest.mark.parametrize("how", [(), ("--one-process",)], ids=["two processes", "one process"])
def test_what_a_reader_gets_does_not_depend_on_when_the_flushes_come(tmp_path, how):
    # before, a request answered at the HTTP level (a 4xx/5xx exchange without a response of its
    # own) after a flush kept the details it had at that flush: no answer, no latency, no reason;
    # so did a batch's requests answered apart but the first (_batch_answered_apart), and a request
    # whose stash place a later request of the same seq took (_restarting_seqs), answered after it
    captures = [
        *CAPTURES,
        _rule_cases_capture(tmp_path / "cases.jsonl"),
        _batch_answered_apart(tmp_path / "batch.jsonl"),
        _restarting_seqs(tmp_path / "restarts.jsonl"),
    ]
    for i, capture in enumerate(captures):
        seen = {}
        for flushes in ("every row", "the end only"):
            work = tmp_path / f"{i} {flushes}"
            seen[flushes] = _what_a_reader_gets(capture, work, _analyse(capture, work, *how, flushes=flushes))
        every, end = seen["every row"], seen["the end only"]
        differ = [row for row, (x, y) in enumerate(zip(every["rows"], end["rows"], strict=True)) if x != y]
        assert not differ, (
            f"{capture.name}: rows {differ[:5]}, as the end only gives them: {end['rows'][differ[0]]}"
        )
        assert every == end, capture.name


def _findings_on_records_no_message(capture: Path) -> dict[int, list[str]]:
    """Row -> the rules lint raises on that row's record when it is no message (an HTTP exchange,
    a stream's event, a session's end): the finding names the record's own seq and line."""
    with open(capture, "rb") as fh:
        recs = [r for r in read_capture(fh, str(capture)) if getattr(r, "type", None) is not None]
    by_line = {r.line: r for r in recs}
    an = Analyser()
    found = []
    for r in recs:
        out = an.feed(r)
        if r.type is not RecordType.MESSAGE:
            found += [f for ev in out for f in ev.findings]
    found += [f for ev in an.finish() for f in ev.findings]
    rows: dict[int, list[str]] = {}
    for f in found:
        rec = by_line.get(f.line)
        if f.seq and rec is not None and rec.type is not RecordType.MESSAGE and rec.seq == f.seq:
            rows.setdefault(f.line - 1, []).append(f.rule)
    return rows


@pytest.mark.parametrize("how", [(), ("--one-process",)], ids=["two processes", "one process"])
def test_a_finding_raised_on_an_http_record_or_an_event_shows_on_that_row(tmp_path, how):
    # MCP706 on an HTTP exchange without a message, MCP708 and MCP904 on a stream's event: before,
    # such a finding went to the summary's findings about the capture as a whole (or to a message
    # row of another recording that had the same seq), not to its row
    capture = _rule_cases_capture(tmp_path / "cases.jsonl")
    want = _findings_on_records_no_message(capture)
    assert {"MCP706", "MCP708", "MCP904"} <= {rule for rules in want.values() for rule in rules}
    progress = _analyse(capture, tmp_path / "w", *how)
    ann = Annotations(str(capture), workdir=str(tmp_path / "w"))
    try:
        for msg in progress:
            ann._apply(msg)
        assert ann.done
        got = {}
        for row in range(progress[-1]["rows"]):
            s = ann.row(row)
            if s.nfind and s.fields[0] != RTYPE_CODE["message"]:
                got[row] = ann.finding_rules(s)
                assert s.nfind == len(got[row]) and s.worst > 0
        assert got == want
        about_the_capture = {f[0] for f in progress[-1]["summary"]["capture_findings"]}
        assert not about_the_capture & {"MCP706", "MCP708", "MCP904"}
    finally:
        ann.stop()


def _restarting_seqs(path: Path) -> Path:
    """One connection whose seqs restart twice (recordings appended to one file without a header):
    a request is answered after a later request of the same seq took its place in the writer's
    stash, so the row writer learns of the answered request's new state otherwise."""

    def msg(seq: int, direction: str, body: dict) -> dict:
        return {"type": "message", "seq": seq, "t_ns": seq * 1_000_000, "dir": direction,
                "transport": "stdio", "conn": "c1", "text": json.dumps(body)}  # fmt: skip

    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    served = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "serverInfo": {"name": "s", "version": "1"},
    }
    records = [
        header_record("stdio", command=["server"]),
        msg(1, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}),
        msg(2, "s2c", {"jsonrpc": "2.0", "id": 1, "result": served}),
        msg(1, "c2s", {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
        msg(1, "c2s", {"jsonrpc": "2.0", "id": 8, "method": "ping"}),
        msg(2, "s2c", {"jsonrpc": "2.0", "id": 7, "result": {"tools": []}}),
        msg(3, "s2c", {"jsonrpc": "2.0", "id": 8, "result": {}}),
    ]
    path.write_bytes(
        b"".join(orjson.dumps(r if type(r) is dict else record_to_dict(r)) + b"\n" for r in records)
    )
    return path


def test_a_request_answered_after_a_later_one_took_its_seq_is_written_as_one_process_writes_it(tmp_path):
    capture = _restarting_seqs(tmp_path / "restarts.jsonl")
    one = _analyse(capture, tmp_path / "one", "--one-process")
    two = _analyse(capture, tmp_path / "two")
    assert one[-1]["done"] and two[-1]["done"]
    assert _written(tmp_path / "two", two) == _written(tmp_path / "one", one)
    # (what the test is about: both tools/list and ping requests know their answers' latencies)
    rows = (tmp_path / "two" / "rows.bin").read_bytes()
    assert [ROW.unpack_from(rows, r * ROW.size)[F_LAT_NS] for r in (3, 4)] == [1_000_000, 2_000_000]


def _batch_answered_apart(path: Path) -> Path:
    """A legacy session's batch of two requests (tools/list id 5, prompts/list id 6), each answered
    by a response of its own, 1 and 2 ms later: the batch's requests share its seq."""

    def msg(seq: int, direction: str, body: Any) -> dict:
        return {"type": "message", "seq": seq, "t_ns": seq * 1_000_000, "dir": direction,
                "transport": "stdio", "conn": "c1", "text": json.dumps(body)}  # fmt: skip

    init = {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    caps = {"tools": {}, "prompts": {}}
    served = {
        "protocolVersion": "2025-03-26",
        "capabilities": caps,
        "serverInfo": {"name": "s", "version": "1"},
    }
    records = [
        header_record("stdio", command=["server"]),
        msg(1, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}),
        msg(2, "s2c", {"jsonrpc": "2.0", "id": 1, "result": served}),
        msg(3, "c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        msg(
            4,
            "c2s",
            [
                {"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
                {"jsonrpc": "2.0", "id": 6, "method": "prompts/list"},
            ],
        ),
        msg(5, "s2c", {"jsonrpc": "2.0", "id": 5, "result": {"tools": []}}),
        msg(6, "s2c", {"jsonrpc": "2.0", "id": 6, "result": {"prompts": []}}),
    ]
    path.write_bytes(
        b"".join(orjson.dumps(r if type(r) is dict else record_to_dict(r)) + b"\n" for r in records)
    )
    return path


@pytest.mark.parametrize("flushes", ["every row", "the end only"])
@pytest.mark.parametrize("how", [(), ("--one-process",)], ids=["two processes", "one process"])
def test_each_request_of_a_batch_shows_its_own_answer_as_lint_pairs_it(tmp_path, how, flushes):
    # before, the batch's requests took one place in the writer's stash (its seq): only the first
    # learned its answer, the second's details said it was unanswered, under any flush schedule
    capture = _batch_answered_apart(tmp_path / "batch.jsonl")
    with open(capture, "rb") as fh:
        recs = [r for r in read_capture(fh, str(capture)) if getattr(r, "type", None) is not None]
    an = Analyser()
    batch = [an.feed(r) for r in recs][4]
    an.finish()
    lint = [(m.method, m.partner_seq, m.latency_ns) for m in batch.members]
    assert lint == [("tools/list", 5, 1_000_000), ("prompts/list", 6, 2_000_000)]
    work = tmp_path / "work"
    got = _what_a_reader_gets(capture, work, _analyse(capture, work, *how, flushes=flushes))
    _, fields, details, _ = got["rows"][4]
    assert [(m["method"], m.get("partner"), m.get("lat")) for m in details["members"]] == lint
    assert [m.get("pr") for m in details["members"]] == ["answered by seq 5", "answered by seq 6"]
    assert (fields[8], fields[9]) == (5, 1000)  # (the row itself: its first request's answer)


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as fh:
        return [int(x) for x in fh.read().split()]


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"  # (exited; its new parent reaps it)
    except FileNotFoundError:
        return True


def _wait(cond, what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not cond():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {BOUND_S} s: {what}")
        time.sleep(0.02)


class _Followed:
    """`python -m tracer.view.annotate --follow` as the viewer starts it (its stdin a pipe)."""

    def __init__(self, capture: Path, workdir: Path, *extra: str):
        workdir.mkdir()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tracer.view.annotate", str(capture), str(workdir), "--follow", *extra],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.progress: list[dict] = []

    def until_rows(self, n: int) -> None:
        """Reports read until one says N rows are written and the end of the file reached."""
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                pytest.fail(f"the analysis ended: {self.proc.stderr.read()[-2000:]!r}")
            m = json.loads(line)
            self.progress.append(m)
            if m.get("rows") == n and m.get("eof"):
                return
        pytest.fail(f"no report of {n} rows within {BOUND_S} s")

    def end(self) -> None:
        self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            stream.close()

    def analysis_pid(self) -> int:
        _wait(lambda: _children(self.proc.pid), "the analysis process started")
        return _children(self.proc.pid)[0]


def _capture(path: Path, n: int) -> list[bytes]:
    generate(path, n, 20)
    return path.read_bytes().splitlines(keepends=True)


def test_a_followed_capture_is_analysed_as_it_grows_and_both_processes_stop_when_the_viewer_closes_stdin(
    tmp_path,
):
    lines = _capture(tmp_path / "all.jsonl", 400)
    capture = tmp_path / "live.jsonl"
    capture.write_bytes(b"".join(lines[:150]))
    f = _Followed(capture, tmp_path / "work")
    try:
        f.until_rows(150)
        analysis = f.analysis_pid()
        with open(capture, "ab") as fh:
            fh.write(b"".join(lines[150:]))
        f.until_rows(len(lines))
        f.proc.stdin.close()
        assert f.proc.wait(timeout=BOUND_S) == 0
        _wait(lambda: _gone(analysis), "the analysis process stopped with the writer")
    finally:
        f.end()
    # the rows the one-process analysis follows the whole file to (where a row's details are
    # stored depends on when the flushes came: the rest of each row does not)
    whole = tmp_path / "whole.jsonl"
    whole.write_bytes(b"".join(lines))
    one = _Followed(whole, tmp_path / "one", "--one-process")
    try:
        one.until_rows(len(lines))
    finally:
        one.end()
    assert _fields(tmp_path / "work") == _fields(tmp_path / "one")


def _fields(workdir: Path) -> list[tuple]:
    data = (workdir / "rows.bin").read_bytes()
    rows = [ROW.unpack_from(data, i) for i in range(0, len(data), ROW.size)]
    return [r[:F_NOTE] + r[F_SEQ:] for r in rows]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_writer_leaves_no_analysis_process_behind(tmp_path, sig):
    lines = _capture(tmp_path / "c.jsonl", 100)
    f = _Followed(tmp_path / "c.jsonl", tmp_path / "work")
    try:
        f.until_rows(len(lines))
        analysis = f.analysis_pid()
        f.proc.send_signal(sig)
        f.proc.wait(timeout=BOUND_S)
        _wait(lambda: _gone(analysis), "the analysis process stopped after its writer was killed")
    finally:
        f.end()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_writer_stopped_by_a_signal_has_stopped_its_analysis_when_it_exits(tmp_path, sig):
    # the viewer stops its analysis with SIGTERM and waits for that one process: the forked
    # analysis must be gone by then, and the exit status still names the signal
    # (a capture long enough that the analysis is still at work when the signal comes)
    lines = _capture(tmp_path / "c.jsonl", 100_000)
    f = _Followed(tmp_path / "c.jsonl", tmp_path / "work")
    try:
        first = json.loads(f.proc.stdout.readline())
        assert first["rows"] < len(lines)
        analysis = f.analysis_pid()
        f.proc.send_signal(sig)
        assert f.proc.wait(timeout=BOUND_S) == -sig
        assert _gone(analysis)
    finally:
        f.end()


def test_the_analysis_process_reads_nothing_from_the_viewers_pipes(tmp_path):
    # its stdin is the writer's stop pipe, its stdout not the viewer's progress channel: the
    # viewer sees the end of the reports when the writer ends, whatever the analysis does
    lines = _capture(tmp_path / "c.jsonl", 50)
    f = _Followed(tmp_path / "c.jsonl", tmp_path / "work")
    try:
        f.until_rows(len(lines))
        analysis = f.analysis_pid()
        mine = {os.readlink(f"/proc/{f.proc.pid}/fd/{fd}") for fd in (0, 1)}
        theirs = {os.readlink(f"/proc/{analysis}/fd/{fd}") for fd in (0, 1)}
        assert not mine & theirs
    finally:
        f.end()
