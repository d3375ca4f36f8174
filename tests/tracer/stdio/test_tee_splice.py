"""The zero-copy relay (tee(2) + splice(2) on Linux) is as byte-exact as the read/write one, its
capture as complete, and over budget it drops from the capture only, each loss recorded."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.tracer.stdio.test_tee_relay import BOUND_S, TEE, read_records, split, stream_of
from tracer.capture import CaptureWriter, header_record
from tracer.model import Direction, RecordType
from tracer.stdio import splice as tee_splice
from tracer.stdio.capture import STDIN, CaptureSink
from tracer.stdio.tee import relay_stream

pytestmark = pytest.mark.skipif(not tee_splice.available(), reason="tee(2)/splice(2) are Linux system calls")


def run_spliced(chunks: list[bytes], path: Path, *, budget: int | None = None, writer_cls=CaptureWriter):
    """Write `chunks` into a real pipe, relay it with the zero-copy pump into another, read it back."""
    writer = writer_cls(path, header_record("stdio"))
    sink = CaptureSink(writer, "t", **({"budget": budget} if budget is not None else {}))
    sink.start()
    src_r, src_w = os.pipe()
    dst_r, dst_w = os.pipe()
    assert tee_splice.applies(src_r, dst_w)
    out: list[bytes] = []

    def feed() -> None:
        for c in chunks:
            view = memoryview(c)
            while view:
                view = view[os.write(src_w, view) :]
        os.close(src_w)

    def drain() -> None:
        while b := os.read(dst_r, 1 << 20):
            out.append(b)

    threads = [threading.Thread(target=feed), threading.Thread(target=drain)]
    for t in threads:
        t.start()
    relay_stream(src_r, dst_w, STDIN, sink)
    os.close(dst_w)
    for t in threads:
        t.join(BOUND_S)
    os.close(src_r)
    os.close(dst_r)
    return b"".join(out), sink, writer


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200_000), st.lists(st.integers(min_value=0, max_value=200_000), max_size=25))
def test_zero_copy_relay_passes_every_byte_unchanged_and_captures_every_line_at_its_offset(data, cuts):
    with tempfile.TemporaryDirectory() as tmp:
        relayed, sink, writer = run_spliced(split(data, cuts), Path(tmp) / "cap.jsonl")
        assert sink.close(BOUND_S)
        writer.close()
        records = read_records(Path(tmp) / "cap.jsonl")
    assert relayed == data
    assert stream_of(records, Direction.C2S) == data  # (the default budget: nothing dropped)
    pos = 0
    for r in (r for r in records if r.type is RecordType.MESSAGE):
        assert r.offset == pos and data[pos : pos + len(r.raw)] == r.raw
        pos += len(r.raw) + (1 if r.eol else 0)


def test_zero_copy_relay_never_waits_for_a_stalled_capture_and_records_what_it_drops(tmp_path):
    release = threading.Event()

    class StalledWriter(CaptureWriter):
        def write_many(self, recs, encode=None):
            release.wait(BOUND_S)
            super().write_many(recs, encode)

    lines = [
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":%d}}\n' % i
        for i in range(40_000)
    ]
    data = b"".join(lines)
    relayed, sink, writer = run_spliced(
        [data[i : i + 50_000] for i in range(0, len(data), 50_000)],
        tmp_path / "cap.jsonl",
        budget=64 * 1024,
        writer_cls=StalledWriter,
    )
    assert relayed == data  # all of it, while the capture writer was stalled
    release.set()
    assert sink.close(BOUND_S)
    writer.close()
    records = read_records(tmp_path / "cap.jsonl")
    drops = [r.data for r in records if r.type is RecordType.EVENT and r.data["event"] == "dropped"]
    assert sum(d["bytes"] for d in drops) == sink.dropped_bytes[STDIN] > 0
    genuine, pos = set(), 0
    for line in lines:
        genuine.add((pos, line[:-1]))
        pos += len(line)
    captured = [(r.offset, r.raw) for r in records if r.type is RecordType.MESSAGE]
    assert captured and set(captured) <= genuine  # whole lines at their true offsets, never a torn one


def test_tee_cli_with_a_tiny_budget_relays_a_flood_exactly_and_accounts_for_every_captured_byte(tmp_path):
    lines = [
        b'{"jsonrpc":"2.0","id":%d,"result":{"text":"%s"}}\n' % (i, b"x" * (i % 500)) for i in range(60_000)
    ]
    data = b"".join(lines)
    cap = tmp_path / "cap.jsonl"
    p = subprocess.run(
        [*TEE, "-q", "--queue-mb", "0.25", "-o", str(cap), "--", "cat"],
        input=data,
        capture_output=True,
        timeout=BOUND_S,
    )
    assert p.returncode == 0 and p.stdout == data
    records = read_records(cap)
    offsets = {}
    pos = 0
    for line in lines:
        offsets[pos] = line[:-1]
        pos += len(line)
    for direction, stream in ((Direction.C2S, "stdin"), (Direction.S2C, "stdout")):
        captured = [r for r in records if r.type is RecordType.MESSAGE and r.dir is direction]
        assert all(offsets.get(r.offset) == r.raw for r in captured)
        dropped = sum(
            r.data["bytes"]
            for r in records
            if r.type is RecordType.EVENT and r.data["event"] == "dropped" and r.data["stream"] == stream
        )
        # every byte is either in a captured line, or in a dropped chunk, or in a line a drop broke
        assert sum(len(r.raw) + 1 for r in captured) + dropped <= len(data)
        assert dropped or stream_of(records, direction) == data
    if any(r.type is RecordType.EVENT and r.data["event"] == "dropped" for r in records):
        assert b"dropped" in p.stderr  # said on stderr too, even with -q
    assert [r.data["event"] for r in records if r.type is RecordType.EVENT][-1] == "exit"


def test_tee_cli_in_process_capture_relays_exactly_like_the_capture_process(tmp_path):
    data = b"".join(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}\n' % i for i in range(5000)) + b"tail"
    env = {**os.environ, "MCPTRACE_TEE_IN_PROCESS": "1"}
    runs = []
    for i, e in enumerate((None, env)):
        cap = tmp_path / f"cap{i}.jsonl"
        p = subprocess.run(
            [
                *TEE,
                "-q",
                "-o",
                str(cap),
                "--",
                sys.executable,
                "-c",
                "import sys; sys.stdout.buffer.write(sys.stdin.buffer.read())",
            ],
            input=data,
            capture_output=True,
            timeout=BOUND_S,
            env=e,
        )
        runs.append((p.returncode, p.stdout, p.stderr, read_records(cap)))
    for rc, out, err, records in runs:
        assert (rc, out, err) == (0, data, b"")
        assert stream_of(records, Direction.C2S) == data == stream_of(records, Direction.S2C)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=3000), max_size=200),
    st.integers(min_value=0, max_value=10**6),
)
def test_the_relay_counts_the_lines_of_a_dropped_chunk_as_bytes_count_does(lengths, start):
    # (lines long and short, and the switch from finding each to counting the rest)
    data = b"".join(b"x" * n + b"\n" for n in lengths) + b"tail"
    start %= len(data) + 2
    assert tee_splice.count_newlines(data, start) == data.count(b"\n", start)
