"""The stdio tee's relay is byte-exact and its capture is complete, in any chunking, and the capture
never holds the relay up (over budget it drops from the capture only, and says so)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tracer.capture import CaptureWriter, ReadProblem, header_record, read_capture, record_to_dict
from tracer.model import Direction, Record, RecordType
from tracer.stdio.capture import STDIN, STDOUT, CaptureSink, encode_line
from tracer.stdio.tee import pump

TEE = [sys.executable, "-m", "tracer", "stdio"]
BOUND_S = 60


def read_records(path) -> list[Record]:
    with open(path, "rb") as fh:
        items = list(read_capture(fh, str(path)))
    assert not [p for p in items if isinstance(p, ReadProblem)]
    return items


def stream_of(records: list[Record], direction: Direction) -> bytes:
    """The byte stream one direction carried, rebuilt from the capture's message records."""
    return b"".join(
        r.raw + (b"\n" if r.eol else b"")
        for r in records
        if r.type is RecordType.MESSAGE and r.dir is direction
    )


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points) if b > a]


def run_pump(
    chunks: list[bytes],
    path: Path,
    *,
    budget: int | None = None,
    start_writer_first: bool = True,
    analyser=None,
):
    """Relay `chunks` (as successive reads) through `pump` into a list, capturing into `path`."""
    writer = CaptureWriter(path, header_record("stdio"))
    sink = CaptureSink(writer, "t", analyser=analyser, **({"budget": budget} if budget is not None else {}))
    if start_writer_first:
        sink.start()
    pending = iter(chunks)
    relayed: list[bytes] = []
    pump(0, 1, STDIN, sink, relay=relayed.append, read=lambda fd, n: next(pending, b""))
    if not start_writer_first:
        sink.start()
    assert sink.close(BOUND_S)
    writer.close()
    return b"".join(relayed), read_records(path), sink


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000), st.lists(st.integers(min_value=0, max_value=3000), max_size=25))
def test_tee_relays_every_byte_unchanged_and_captures_every_line_in_any_chunking(data, cuts):
    with tempfile.TemporaryDirectory() as tmp:
        relayed, records, _ = run_pump(split(data, cuts), Path(tmp) / "cap.jsonl")
    assert relayed == data
    assert stream_of(records, Direction.C2S) == data
    pos = 0
    for r in (r for r in records if r.type is RecordType.MESSAGE):
        assert r.offset == pos and data[pos : pos + len(r.raw)] == r.raw
        pos += len(r.raw) + (1 if r.eol else 0)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=40),
    st.integers(min_value=0, max_value=2000),
)
def test_tee_drops_only_from_the_capture_and_every_drop_is_recorded_with_its_offset(chunks, budget):
    data = b"".join(chunks)
    with tempfile.TemporaryDirectory() as tmp:
        # The writer starts after the relay finished: what exceeds the budget is dropped, deterministically.
        relayed, records, sink = run_pump(
            chunks, Path(tmp) / "cap.jsonl", budget=budget, start_writer_first=False
        )
    assert relayed == data  # the relay is never affected
    drops = [
        (r.data["offset"], r.data["bytes"])
        for r in records
        if r.type is RecordType.EVENT and r.data["event"] == "dropped"
    ]
    assert sum(n for _, n in drops) == sink.dropped_bytes[STDIN]
    accepted = sum(len(c) for c in chunks) - sink.dropped_bytes[STDIN]
    assert accepted <= budget

    def hit_by_drop(start: int, end: int) -> bool:
        return any(start <= d + n and d <= end for d, n in drops)

    captured = {(r.offset, r.raw, r.eol) for r in records if r.type is RecordType.MESSAGE}
    # every captured record is a genuine line of the stream, at its true offset
    lines, pos = [], 0
    for piece in data.split(b"\n"):
        lines.append((pos, piece))
        pos += len(piece) + 1
    genuine = {(off, piece, off + len(piece) < len(data)) for off, piece in lines if piece or off < len(data)}
    assert captured <= genuine
    # and every line that no drop touched is captured
    for off, piece, eol in genuine:
        if not hit_by_drop(off, off + len(piece)):
            assert (off, piece, eol) in captured


def test_tee_relay_does_not_wait_for_a_stalled_capture_writer(tmp_path):
    release = threading.Event()

    class StalledWriter(CaptureWriter):
        def write_many(self, recs, encode=None):
            release.wait(BOUND_S)
            super().write_many(recs, encode)

    writer = StalledWriter(tmp_path / "cap.jsonl", header_record("stdio"))
    sink = CaptureSink(writer, "t", budget=64 * 1024)
    sink.start()
    chunks = [
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":%d}}\n' % i * 50
        for i in range(400)
    ]
    pending = iter(chunks)
    relayed: list[bytes] = []
    done = threading.Thread(
        target=pump,
        args=(0, 1, STDOUT, sink),
        kwargs={"relay": relayed.append, "read": lambda fd, n: next(pending, b"")},
    )
    done.start()
    done.join(BOUND_S)  # the writer is still stalled: the relay must finish on its own
    assert not done.is_alive() and b"".join(relayed) == b"".join(chunks)
    release.set()
    assert sink.close(BOUND_S)
    writer.close()
    records = read_records(tmp_path / "cap.jsonl")
    dropped = sum(
        r.data["bytes"] for r in records if r.type is RecordType.EVENT and r.data["event"] == "dropped"
    )
    assert dropped == sink.dropped_bytes[STDOUT] > 0
    captured = sum(len(r.raw) + 1 for r in records if r.type is RecordType.MESSAGE)
    assert captured + dropped <= len(b"".join(chunks))


def test_a_failing_live_check_never_costs_the_capture(tmp_path):
    class BrokenRules:
        sessions: dict = {}

        def feed(self, rec):
            raise RuntimeError("a rule with a bug")

    data = b'Starting server\n{"jsonrpc":"2.0","id":1,"result":{}}\n'
    relayed, records, sink = run_pump([data], tmp_path / "cap.jsonl", analyser=BrokenRules())
    assert relayed == data and stream_of(records, Direction.C2S) == data
    assert sink.analysis_error == "RuntimeError: a rule with a bug"


@settings(max_examples=500, deadline=None)
@given(
    st.binary(max_size=200),
    st.sampled_from([RecordType.MESSAGE, RecordType.STDERR]),
    st.booleans(),
    st.one_of(st.none(), st.integers(min_value=0, max_value=2**40)),
)
def test_capture_fast_encoder_writes_exactly_what_the_general_encoder_writes(raw, rtype, eol, offset):
    rec = Record(
        rtype,
        seq=12,
        t_ns=1_790_000_000_123_456_789,
        dir=Direction.S2C if rtype is RecordType.MESSAGE else None,
        raw=raw,
        conn="stdio-4242",
        offset=offset,
        eol=eol,
    )
    line = encode_line(rec)
    if line is not None:
        assert line == orjson.dumps(record_to_dict(rec)) + b"\n"


def _tee_cat(tmp: Path, chunks: list[bytes]) -> tuple[bytes, list[Record], int]:
    cap = tmp / "cap.jsonl"
    with subprocess.Popen(
        [*TEE, "-q", "-o", str(cap), "--", "cat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as p:

        def feed() -> None:
            for c in chunks:
                os.write(p.stdin.fileno(), c)
            p.stdin.close()

        t = threading.Thread(target=feed)
        t.start()
        out = p.stdout.read()
        t.join(BOUND_S)
        p.wait(BOUND_S)
        err = p.stderr.read()
    assert err == b""
    return out, read_records(cap), p.returncode


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.binary(min_size=1, max_size=70_000), min_size=1, max_size=6))
def test_tee_cli_relays_arbitrary_bytes_through_a_real_process_both_ways_unchanged(chunks):
    data = b"".join(chunks)
    with tempfile.TemporaryDirectory() as tmp:
        out, records, rc = _tee_cat(Path(tmp), chunks)
    assert rc == 0
    assert out == data
    assert stream_of(records, Direction.C2S) == data
    assert stream_of(records, Direction.S2C) == data
    events = [r.data["event"] for r in records if r.type is RecordType.EVENT]
    assert events[0] == "started" and events[-1] == "exit" and "stdin-eof" in events


class HeldWriter(CaptureWriter):
    """A capture file whose writes wait until released: the writer thread is held up, as on a
    machine that gives it no CPU."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.go = threading.Event()

    def write_many(self, recs, encode=None):
        assert self.go.wait(BOUND_S)
        return super().write_many(recs, encode)


class ReleasedWhenWaitedFor(CaptureSink):
    def hurry(self, at_once: bool = False) -> None:
        if at_once:
            self.writer.go.set()


def test_the_in_process_capture_a_budget_behind_is_waited_for_rather_than_dropping(tmp_path):
    # The capture thread of the tee where there is no capture process (no tee(2), or
    # MCPTRACE_TEE_IN_PROCESS=1): a copy over the budget used to be dropped at once.
    path = tmp_path / "cap.jsonl"
    budget = 1024 * 1024
    sink = ReleasedWhenWaitedFor(
        HeldWriter(path, header_record("stdio")), "t", budget=budget, room_wait_ns=BOUND_S * 10**9
    )
    sink.start()
    line = b'{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"%s"}}\n' % (b"z" * 1000)
    chunk = line * (256 * 1024 // len(line))
    kept = [sink.offer(STDOUT, i, chunk) for i in range(16)]  # four budgets' worth
    waited = sink.writer.go.is_set()
    sink.writer.go.set()  # (a sink that never waited gets its writer back here)
    sink.eof(STDOUT)
    assert sink.close(BOUND_S)
    sink.writer.close()
    records = read_records(path)
    assert kept == [True] * 16 and waited
    assert not [r for r in records if r.type is RecordType.EVENT and r.data["event"] == "dropped"]
    assert stream_of(records, Direction.S2C) == chunk * 16
