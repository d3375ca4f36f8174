"""No reader holds a line past the line cap (tracer.lines), and the capture writer never writes one.

A line longer than the cap is a broken line: reported with its number and its first bytes, the
rest of it read past without being kept, and the lines after it read as usual; a followed file
whose last line never ends does not grow the reader's memory with it. The cap is set low here
(MCPTRACE_MAX_LINE_MB, its smallest value, for the real processes; tracer.lines.LINE_MAX for the
in-process follower) so the files stay small.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path

import orjson
import pytest

from tracer.capture import ReadProblem
from tracer.inputs.follow import follow_input
from tracer.lines import LINE_MAX_MIN_MB

ROOT = Path(__file__).resolve().parents[2]
CAP_MB = LINE_MAX_MIN_MB
CAP = CAP_MB << 20
BOUND_S = 120  # a bound for a condition or a process, not a wait: the machine is shared and loaded
T0 = 1_780_000_000_000_000_000


def _env() -> dict[str, str]:
    return {**os.environ, "MCPTRACE_MAX_LINE_MB": str(CAP_MB), "MCPTRACE_LINT_POOL_MIN": "0"}


def _mcptrace(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracer", *args],
        input=stdin,
        capture_output=True,
        env=_env(),
        cwd=ROOT,
        timeout=BOUND_S,
        check=False,
    )


def _message(seq: int, direction: str, msg: dict) -> bytes:
    rec = {
        "type": "message",
        "seq": seq,
        "t_ns": T0 + seq,
        "dir": direction,
        "transport": "stdio",
        "conn": "0",
    }
    return orjson.dumps({**rec, "text": orjson.dumps(msg).decode()}) + b"\n"


def _capture_with_a_long_line(path: Path, *, torn: bool = False) -> bytes:
    head = orjson.dumps(
        {"type": "header", "format": "mcptrace", "version": 1, "tool": "t", "t_ns": T0, "transport": "stdio"}
    )
    long = b'{"type":"message","seq":2,"t_ns":1,"text":"' + b"x" * (CAP + 4096) + b'"}'
    body = head + b"\n" + _message(1, "c2s", {"jsonrpc": "2.0", "id": 1, "method": "ping"})
    if torn:
        path.write_bytes(body + long)
    else:
        path.write_bytes(body + long + b"\n" + _message(3, "s2c", {"jsonrpc": "2.0", "id": 1, "result": {}}))
    return long


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_lint_reports_a_line_past_the_cap_by_its_number_and_start_and_reads_the_lines_after_it(
    tmp_path, jobs
):
    cap = tmp_path / "long.jsonl"
    long = _capture_with_a_long_line(cap)
    done = _mcptrace("lint", "--no-config", "--no-progress", "--jobs", jobs, "--format", "json", str(cap))
    report = orjson.loads(done.stdout)
    assert done.returncode == 3, done.stderr  # (an unreadable line, no finding)
    problems = report["problems"]
    assert len(problems) == 1 and problems[0]["line"] == 3
    assert f"longer than {CAP_MB} MiB" in problems[0]["message"]
    assert repr(long[:80].decode())[1:-1] in problems[0]["message"]  # its first bytes, as evidence
    assert report["summary"]["messages"] == 2  # the ping and its answer, after the long line
    assert report["summary"]["findings"] == 0  # (the answer was paired: nothing left pending)


def test_a_long_last_line_cut_short_is_reported_as_long_not_as_torn(tmp_path):
    cap = tmp_path / "torn.jsonl"
    _capture_with_a_long_line(cap, torn=True)
    done = _mcptrace("lint", "--no-config", "--no-progress", "--format", "json", str(cap))
    problems = orjson.loads(done.stdout)["problems"]
    assert [(p["line"], f"longer than {CAP_MB} MiB" in p["message"]) for p in problems] == [(3, True)]


@pytest.mark.parametrize("fmt", ["ndjson", "hostlog"])
def test_ndjson_and_host_logs_report_a_line_past_the_cap_and_read_on(tmp_path, fmt):
    ping = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    pong = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {}})
    if fmt == "ndjson":
        lines = [ping, b'{"jsonrpc":"2.0","method":"x","params":"' + b"y" * (CAP + 1) + b'"}', pong]
    else:
        at = b"2025-01-01T00:00:00.000Z [srv] [info] "
        lines = [
            at + b"Message from client: " + ping,
            at + b"y" * (CAP + 1),
            at + b"Message from server: " + pong,
        ]
    path = tmp_path / ("in.jsonl" if fmt == "ndjson" else "mcp-server-srv.log")
    path.write_bytes(b"\n".join(lines) + b"\n")
    done = _mcptrace("lint", "--no-config", "--no-progress", "--format", "json", str(path))
    report = orjson.loads(done.stdout)
    problems = report["problems"]
    assert [(p["line"], f"longer than {CAP_MB} MiB" in p["message"]) for p in problems] == [(2, True)]
    assert report["summary"]["messages"] == 2


def test_the_tee_never_writes_a_line_lint_cannot_read_back(tmp_path):
    # a 6 MiB line of quotes: 12 MiB as a JSON string, past the 8 MiB cap. The server's bytes are
    # relayed whole; the capture keeps as much of them as fits and counts the rest
    size = 6 << 20
    script = f"import sys; sys.stdout.buffer.write(b'\"' * {size} + b'\\n')"
    cap = tmp_path / "tee.jsonl"
    done = _mcptrace("stdio", "-o", str(cap), "--", sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b'"' * size + b"\n"
    assert max(len(line) for line in cap.read_bytes().split(b"\n")) <= CAP
    records = [orjson.loads(line) for line in cap.read_bytes().splitlines()]
    (msg,) = [r for r in records if r["type"] == "message"]
    assert set(msg["text"]) == {'"'} and len(msg["text"]) + msg["data"]["cut"] == size
    lint = _mcptrace("lint", "--no-config", "--no-progress", "--format", "json", str(cap))
    assert orjson.loads(lint.stdout)["problems"] == []


def _until(cond, what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not cond():
        assert time.monotonic() < deadline, f"not within {BOUND_S} s: {what}"
        time.sleep(0.05)


def test_a_followed_log_whose_last_line_never_ends_is_reported_and_not_held(tmp_path, monkeypatch):
    monkeypatch.setattr("tracer.lines.LINE_MAX", CAP)
    path = tmp_path / "mcp-server-srv.log"
    at = b"2025-01-01T00:00:00.000Z [srv] [info] "
    path.write_bytes(at + b'Message from client: {"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    stop = threading.Event()
    inp, _raw = follow_input(str(path), "hostlog", stop=stop)
    got: list = []
    reader = threading.Thread(target=lambda: got.extend(inp.records), daemon=True)
    tracemalloc.start()
    try:
        reader.start()
        _until(lambda: len(got) >= 1, "the first entry read")
        tracemalloc.reset_peak()
        piece = b"z" * (1 << 20)
        with open(path, "ab") as fh:
            fh.write(at)
            for _ in range(5 * CAP_MB):  # five times the cap, and no newline
                fh.write(piece)
                fh.flush()
            _until(lambda: any(isinstance(x, ReadProblem) for x in got), "the long line reported")
            _until(lambda: _raw.pos >= path.stat().st_size, "the whole line read")
            peak = tracemalloc.get_traced_memory()[1]
            fh.write(b"\n" + at + b'Message from server: {"jsonrpc":"2.0","id":1,"result":{}}\n')
        _until(
            lambda: sum(getattr(x, "type", None) == "message" for x in got) == 2, "the entry after it read"
        )
    finally:
        tracemalloc.stop()
        stop.set()
        inp.fh.close()
    problem = next(x for x in got if isinstance(x, ReadProblem))
    assert problem.line == 2 and f"longer than {CAP_MB} MiB" in problem.message
    assert peak < 3 * CAP  # (a long line's start is held once, for a moment; not the line)


def test_the_live_exporter_reports_a_line_past_the_cap_and_follows_the_lines_after_it(tmp_path, monkeypatch):
    from tracer.export import follow

    monkeypatch.setattr(follow, "LINE_MAX", 3 * follow.CHUNK)  # (a line of many chunks, past the cap)
    monkeypatch.setattr(follow, "CATCH_UP_S", BOUND_S)
    path = tmp_path / "cap.jsonl"
    long = b"{" + b"x" * (5 * follow.CHUNK)
    fitting = b"{" + b"y" * (2 * follow.CHUNK)  # (long, but within the cap: whole)
    path.write_bytes(b"a\n" + long + b"\n" + fitting + b"\nb\ntorn")
    r, w = os.pipe()
    os.close(w)  # (the capture has ended: the file is read to its end)
    try:
        lines = list(iter(follow.Follow(str(path), 0, r)))
    finally:
        os.close(r)
    assert [x if type(x) is bytes else x.head for x in lines] == [b"a\n", long[:80], fitting + b"\n", b"b\n"]
    assert (
        sum(len(x) if type(x) is bytes else len(long) + 1 for x in lines)
        == len(b"a\n" + long) + 1 + len(fitting) + 3
    )


@pytest.mark.parametrize("over", [-1, 0, 1, 2, (1 << 19), (1 << 20) - 1, 1 << 20, (1 << 20) + 1])
def test_a_line_at_any_length_around_the_cap_leaves_the_next_line_whole(monkeypatch, over):
    import io

    from tracer.lines import LongLine, iter_lines

    monkeypatch.setattr("tracer.lines.LINE_MAX", CAP)
    data = b"x" * (CAP + over) + b"\nnext\n"
    got = list(iter_lines(io.BufferedReader(io.BytesIO(data))))
    first = got[0][1]
    assert (type(first) is LongLine) == (over > 0)
    if over <= 0:
        assert len(first) == CAP + over
    assert got[1:] == [(2, b"next", True)]


def test_a_converted_capture_line_is_never_past_the_cap_its_reader_reads(monkeypatch):
    # (the viewer converts a HAR, a .mitm file, a host log to a capture its analysis reads back: a
    # body of hundreds of MB, or a line escaped to six times its size, keeps what fits)
    import io

    from tracer.capture import read_capture
    from tracer.inputs.lazy import record_line
    from tracer.model import Direction, Record, RecordType

    monkeypatch.setattr("tracer.lines.LINE_MAX", CAP)
    raw = "é".encode() + b"\x01" * (CAP // 2)  # (six bytes a byte in JSON: three times the cap)
    rec = Record(RecordType.MESSAGE, 7, 0, Direction.S2C, raw, "ndjson", "0", line=3)
    line = record_line(rec)
    assert len(line) <= CAP
    (back,) = read_capture(io.BufferedReader(io.BytesIO(line + b"\n")))
    assert back.type is RecordType.MESSAGE and back.seq == 7
    assert raw.startswith(back.raw) and len(back.raw) + back.data["cut"] == len(raw)
