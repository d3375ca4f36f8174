"""A flood through the stdio tee is captured completely: the capture's bulk path writes exactly what
the per-line path writes, and the capture process gets the CPU a flood needs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tracer.stdio.capture as capture_module
from tests.scheduling import per_thread_scheduling, raising_priority
from tests.tracer.stdio.test_tee_relay import BOUND_S, TEE, read_records, split, stream_of
from tracer.analyser import Analyser
from tracer.capture import CaptureWriter, header_record, record_to_dict
from tracer.model import Direction, Record, RecordType
from tracer.rules import select_rules
from tracer.stdio import splice as tee_splice
from tracer.stdio.capture import STDIN, STDOUT, CaptureSink
from tracer.stdio.runs import make_run

ROOT = Path(__file__).resolve().parents[3]

# Lines a flood may carry: plain JSON objects (any text, escaped), objects with raw bytes inside
# (control characters, quotes, backslashes, invalid UTF-8), and what the live check must see line by
# line: blank lines, junk, CRLF, a pretty-printed message spread over lines.
_no_newline = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b""))
_line = st.one_of(
    st.text(max_size=40).map(
        lambda t: b'{"jsonrpc":"2.0","method":"m","params":{"t":' + orjson.dumps(t) + b"}}"
    ),
    _no_newline.map(lambda b: b"{" + b + b"}"),
    _no_newline,
    st.sampled_from([b"", b"{", b'  "jsonrpc": "2.0",', b"}", b'{"id":1}\r', b"banner", b"{\xff}", b"%d%s"]),
)


def capture_bytes(chunks: list[tuple[int, bytes]], path: Path, *, bulk: bool, live_lint: bool):
    """The capture file's records (the header left out) and the live findings for these chunks."""
    writer = CaptureWriter(path, header_record("stdio"))
    analyser = Analyser(select_rules(["MCP8"])) if live_lint else None
    sink = CaptureSink(writer, "stdio-1", analyser=analyser)
    sink._runs = bulk
    sink.start()
    for i, (stream, chunk) in enumerate(chunks):
        sink.offer(stream, 1_000_000 + i, chunk)
    sink.eof(STDIN, 5_000_000)
    sink.eof(STDOUT, 5_000_000)
    assert sink.close(BOUND_S)
    sink.finish_analysis()
    writer.close()
    return path.read_bytes().split(b"\n", 1)[1], dict(sink.findings), sink.messages


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from([STDIN, STDOUT]), st.lists(_line, min_size=1, max_size=30), st.booleans()),
        min_size=1,
        max_size=6,
    ),
    st.lists(st.integers(min_value=0, max_value=4000), max_size=8),
    st.booleans(),
)
def test_bulk_capture_of_big_chunks_is_byte_for_byte_what_the_per_line_path_writes(pieces, cuts, live_lint):
    chunks = []
    for stream, lines, final_newline in pieces:
        data = b"\n".join(lines) + (b"\n" if final_newline else b"")
        chunks += [(stream, c) for c in split(data, cuts)]
    with tempfile.TemporaryDirectory() as tmp, mock.patch.object(capture_module, "RUN_MIN", 1):
        bulk = capture_bytes(chunks, Path(tmp) / "bulk.jsonl", bulk=True, live_lint=live_lint)
        per_line = capture_bytes(chunks, Path(tmp) / "lines.jsonl", bulk=False, live_lint=live_lint)
    assert bulk == per_line


def test_a_chunk_of_plain_lines_takes_the_bulk_path(tmp_path):
    # (the comparison above would pass as well if the bulk path were never taken)
    lines = [
        b'{"jsonrpc":"2.0","id":%d,"result":{"text":"a \\"quoted\\" \xc3\xa9 %%s"}}' % i for i in range(2000)
    ]
    data = b"\n".join(lines) + b"\n"
    writer = CaptureWriter(tmp_path / "cap.jsonl", header_record("stdio"))
    sink = CaptureSink(writer, "stdio-1", analyser=Analyser(select_rules(["MCP8"])))
    with mock.patch.object(capture_module, "make_run", wraps=make_run) as spy:
        sink.start()
        sink.offer(STDOUT, 7, data)
        sink.eof(STDOUT, 8)
        assert sink.close(BOUND_S)
    writer.close()
    assert any(make_run(*call.args) is not None for call in spy.call_args_list)
    records = read_records(tmp_path / "cap.jsonl")
    assert stream_of(records, Direction.S2C) == data
    step = len(lines[0]) + 1
    assert [r.offset for r in records if r.type is RecordType.MESSAGE][:3] == [0, step, 2 * step]


# Whole lines a run may hold: one JSON object each, any text inside (quotes, backslashes, control
# characters, DEL, percent signs), all ASCII or not, so both bulk encoders get their share.
def _object_lines(max_codepoint: int):
    text = st.text(
        alphabet=st.characters(
            max_codepoint=max_codepoint, exclude_categories=("Cs",), exclude_characters="\n\r"
        ),
        max_size=300,
    )
    line = text.map(lambda t: b'{"t":' + orjson.dumps(t) + b', "raw":"' + t.encode() + b'"}')
    return st.lists(line, min_size=1, max_size=60)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(_object_lines(127), _object_lines(0x10FFFF)),
    st.integers(min_value=0, max_value=10**12),
    st.integers(min_value=1, max_value=10**9),
    st.sampled_from([(0, 0), (0, 1), (1, 2)]),  # (kind, side): c2s and s2c messages, stderr
    st.sampled_from(["stdio", "stdio-1", "conn %d %s"]),
    st.binary(max_size=3).filter(lambda b: b"\n" not in b),
)
# (and chunk-sized blocks, as a flood brings them: long ASCII lines, then long non-ASCII ones)
@example(
    [b'{"q":"\\"%d\\\\ %s' + b"x" * (i * 37 % 3000) + b'"}' for i in range(400)],
    7,
    1,
    (0, 1),
    "stdio-1",
    b"{",
)
@example(
    [b'{"t":"\xc3\xa9 \\" ' + b"y" * (i * 53 % 2000) + b'"}' for i in range(300)],
    0,
    9,
    (0, 0),
    "stdio-1",
    b"",
)
def test_a_run_encodes_its_lines_exactly_as_the_general_encoder_writes_each_record(
    lines, offset, seq, kind_side, conn, edge
):
    kind, side = kind_side
    block = b"\n".join(lines) + b"\n"
    payload = edge + b"\n" + block + edge  # (a run is the whole lines inside a chunk)
    run = make_run(payload, len(edge) + 1, len(edge) + 1 + len(block), offset, 77, kind, side, "stdio", conn)
    assert run is not None
    expected = []
    for i, line in enumerate(lines):
        rec = Record(
            (RecordType.MESSAGE, RecordType.STDERR)[kind],
            seq + i,
            77,
            (Direction.C2S, Direction.S2C, None)[side],
            line,
            "stdio",
            conn,
            offset,
        )
        offset += len(line) + 1
        expected.append(orjson.dumps(record_to_dict(rec)) + b"\n")
    assert run.count == len(lines)
    assert run.encode(seq) == b"".join(expected)


@pytest.mark.skipif(not tee_splice.available(), reason="the relay loop and capture process need Linux pipes")
def test_a_50_mb_flood_through_the_real_tee_is_captured_completely_and_byte_exactly(tmp_path):
    sys.path.insert(0, str(ROOT))
    from tests.bench.bench_tee import ndjson

    data = ndjson(50_000_000)
    source = tmp_path / "flood.ndjson"
    source.write_bytes(data)
    cap = tmp_path / "cap.jsonl"
    # Both ends pipes, as a host gives them: the relay loop and the capture process, as in real use.
    # A budget that holds every copy (100 MB: both directions): whether the capture keeps up with a
    # flood at the default budget depends on the CPU the machine gives it (tests/bench/bench_tee.py
    # (d) shows it); what must hold whatever the load is that nothing within the budget is lost or
    # changed on the way through the bulk path.
    feeder = subprocess.Popen(["cat", str(source)], stdout=subprocess.PIPE)
    tee = subprocess.Popen(
        [*TEE, "-q", "--queue-mb", "128", "-o", str(cap), "--", "cat"],
        stdin=feeder.stdout,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    feeder.stdout.close()
    out, err = tee.communicate(timeout=BOUND_S)
    feeder.wait(BOUND_S)
    assert tee.returncode == 0 and out == data
    assert b"dropped" not in err
    records = read_records(cap)
    assert not [r for r in records if r.type is RecordType.EVENT and r.data["event"] == "dropped"]
    assert stream_of(records, Direction.C2S) == data
    assert stream_of(records, Direction.S2C) == data
    lines = data.count(b"\n")
    assert sum(1 for r in records if r.type is RecordType.MESSAGE) == 2 * lines


@per_thread_scheduling
@raising_priority
def test_the_capture_process_moves_every_thread_between_background_and_normal_scheduling():
    # In a process of its own: the test runner's priority stays as it is. The writer thread exists
    # before the switch, as in the capture process (where it does the heavy work).
    script = textwrap.dedent("""
        import os, threading
        from tracer.stdio.priority import background as _background
        stop = threading.Event()
        threading.Thread(target=stop.wait).start()
        def policies():
            return sorted({os.sched_getscheduler(int(t)) for t in os.listdir("/proc/self/task")})
        _background(True)
        idle = policies()
        _background(False, os.getpid())
        normal = policies()
        stop.set()
        print(idle == [os.SCHED_IDLE], normal == [os.SCHED_OTHER])
    """)
    p = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=BOUND_S, cwd=ROOT
    )
    assert p.stdout.split() == ["True", "True"], p.stderr


def _policies(pid: int) -> set[int]:
    return {os.sched_getscheduler(int(t)) for t in os.listdir(f"/proc/{pid}/task")}


def _all_stopped(pid: int) -> bool:
    states = []
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/stat", "rb") as f:
            states.append(f.read().rsplit(b")", 1)[1].split()[0])
    return all(s in (b"T", b"t") for s in states)


@pytest.mark.skipif(not tee_splice.available() or not hasattr(os, "SCHED_IDLE"), reason="Linux only")
@raising_priority
def test_a_hurried_capture_process_runs_normally_and_goes_back_to_the_background_once_caught_up(tmp_path):
    import time

    from tracer.stdio.process import CaptureProcess

    writer = CaptureWriter(tmp_path / "cap.jsonl", header_record("stdio"))
    feed = CaptureProcess(writer, live_lint=False)
    feed.start()
    try:
        deadline = time.monotonic() + BOUND_S
        while _policies(feed.pid) != {os.SCHED_IDLE} and time.monotonic() < deadline:
            time.sleep(0.01)  # (its writer thread is starting)
        assert _policies(feed.pid) == {os.SCHED_IDLE}
        # Stopped while we look: with nothing to do, the capture process may step back to the
        # background at any moment after the hurry (that is the second half of this test).
        os.kill(feed.pid, signal.SIGSTOP)
        while not _all_stopped(feed.pid) and time.monotonic() < deadline:
            time.sleep(0.001)
        try:
            feed.hurry()
            assert _policies(feed.pid) == {os.SCHED_OTHER}  # every thread, the writer's too
        finally:
            os.kill(feed.pid, signal.SIGCONT)
        feed.event("note")  # work for it; once done and quiet, it steps back by itself
        while _policies(feed.pid) != {os.SCHED_IDLE} and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _policies(feed.pid) == {os.SCHED_IDLE}
    finally:
        assert feed.close(BOUND_S)
        writer.close()
    assert [r.data["event"] for r in read_records(tmp_path / "cap.jsonl") if r.type is RecordType.EVENT] == [
        "note"
    ]


@pytest.mark.skipif(not tee_splice.available(), reason="the capture process needs Linux pipes")
def test_the_read_write_relay_waits_for_a_capture_process_a_budget_behind_rather_than_drop(tmp_path):
    # The relay of a host that gives sockets (read/write, `offer`): the capture process is stopped,
    # as on a busy machine, until the relay says it will wait for it. Before, the copy over the
    # budget was dropped at once.
    from tracer.stdio.process import CaptureProcess

    writer = CaptureWriter(tmp_path / "cap.jsonl", header_record("stdio"))
    chunk = 1024 * 1024
    feed = CaptureProcess(writer, budget=chunk, live_lint=False)
    feed.start()
    asked = []
    hurry = feed.hurry

    def resume_when_waited_for(at_once: bool = False) -> None:
        if at_once and not asked:
            asked.append(True)
            os.kill(feed.pid, signal.SIGCONT)
        hurry(*([True] if at_once else []))

    feed.hurry = resume_when_waited_for
    line = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}\n' % (b"x" * 950)
    data = line * (4 * chunk // len(line))  # four budgets' worth
    os.kill(feed.pid, signal.SIGSTOP)
    try:
        for i in range(0, len(data), chunk):
            feed.offer(STDOUT, i, data[i : i + chunk])
        feed.eof(STDOUT)
    finally:
        os.kill(feed.pid, signal.SIGCONT)
    assert feed.close(BOUND_S)
    writer.close()
    records = read_records(tmp_path / "cap.jsonl")
    assert asked
    assert not [r for r in records if r.type is RecordType.EVENT and r.data["event"] == "dropped"]
    assert stream_of(records, Direction.S2C) == data


@pytest.mark.skipif(not tee_splice.available(), reason="the capture process needs Linux pipes")
def test_small_chunks_a_budget_behind_wait_for_a_stopped_capture_process_rather_than_drop(tmp_path):
    # Small chunks travel with their notes through the control pipe; when it is full they wait in
    # memory, and a budget of them waiting used to drop the next one at once.
    from tracer.stdio.capture import INLINE_MAX
    from tracer.stdio.process import CaptureProcess

    writer = CaptureWriter(tmp_path / "cap.jsonl", header_record("stdio"))
    feed = CaptureProcess(writer, budget=16 * INLINE_MAX, live_lint=False)
    feed.start()
    asked = []
    hurry = feed.hurry

    def resume_when_waited_for(at_once: bool = False) -> None:
        if at_once and not asked:
            asked.append(True)
            os.kill(feed.pid, signal.SIGCONT)
        hurry(*([True] if at_once else []))

    feed.hurry = resume_when_waited_for
    line = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}\n' % (b"y" * 3900)
    chunks = [line] * 1000  # ~4 MB of small chunks: far more than the control pipe holds
    os.kill(feed.pid, signal.SIGSTOP)
    try:
        for i, chunk in enumerate(chunks):
            feed.inline(STDIN, i, chunk)
        feed.eof(STDIN)
    finally:
        os.kill(feed.pid, signal.SIGCONT)
    assert feed.close(BOUND_S)
    writer.close()
    records = read_records(tmp_path / "cap.jsonl")
    assert asked
    assert not [r for r in records if r.type is RecordType.EVENT and r.data["event"] == "dropped"]
    assert stream_of(records, Direction.C2S) == b"".join(chunks)


@pytest.mark.skipif(not tee_splice.available(), reason="the capture process needs Linux pipes")
def test_drop_when_behind_never_waits_for_a_stopped_capture_process_and_records_the_drop(tmp_path):
    from tracer.stdio.process import CaptureProcess

    writer = CaptureWriter(tmp_path / "cap.jsonl", header_record("stdio"))
    chunk = 1024 * 1024
    feed = CaptureProcess(writer, budget=chunk, live_lint=False, room_wait_ns=0)  # --drop-when-behind
    feed.start()
    asked = []
    hurry = feed.hurry
    feed.hurry = lambda at_once=False: (asked.append(at_once), hurry(*([True] if at_once else [])))
    data = b'{"jsonrpc":"2.0","method":"m"}\n' * (4 * chunk // 31)
    os.kill(feed.pid, signal.SIGSTOP)
    try:
        kept = [feed.offer(STDOUT, i, data[i : i + chunk]) for i in range(0, len(data), chunk)]
        feed.eof(STDOUT)
        relayed = list(asked)
    finally:
        os.kill(feed.pid, signal.SIGCONT)
    assert feed.close(BOUND_S)
    writer.close()
    assert True not in relayed and False in kept  # never waited: over the budget, dropped at once
    dropped = [r.data for r in read_records(tmp_path / "cap.jsonl") if r.type is RecordType.EVENT]
    assert [d["event"] for d in dropped] == ["dropped"] and dropped[0]["bytes"] == feed.dropped_bytes[
        STDOUT
    ] > 0


def test_the_tee_cli_takes_drop_when_behind_and_relays_exactly(tmp_path):
    data = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(5000))
    cap = tmp_path / "cap.jsonl"
    p = subprocess.run(
        [*TEE, "-q", "--drop-when-behind", "-o", str(cap), "--", "cat"],
        input=data,
        capture_output=True,
        timeout=BOUND_S,
    )
    assert p.returncode == 0 and p.stdout == data, p.stderr
    records = read_records(cap)
    assert stream_of(records, Direction.C2S) == data and stream_of(records, Direction.S2C) == data


@pytest.mark.skipif(not tee_splice.available(), reason="the capture process needs Linux pipes")
def test_a_capture_process_killed_before_it_finished_is_reported_not_silent(tmp_path):
    from tracer.stdio.process import CaptureProcess

    writer = CaptureWriter(tmp_path / "cap.jsonl", header_record("stdio"))
    feed = CaptureProcess(writer, live_lint=False)
    feed.start()
    feed.event("note")
    os.kill(feed.pid, signal.SIGKILL)  # (an OOM killer, a kill -9 of the wrong pid)
    feed.inline(STDIN, 1, b'{"jsonrpc":"2.0","method":"m"}\n')  # the relay goes on regardless
    feed.close(BOUND_S)
    writer.close()
    assert feed.write_error is not None and "SIGKILL" in str(feed.write_error)
