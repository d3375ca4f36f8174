"""The capture's side of bench_tee.py: (e) the capture writer's CPU against its floor, and (f) the
captures of this tree and another's for the same inputs, record for record (see bench_tee.py)."""

from __future__ import annotations

import statistics
import subprocess
from pathlib import Path

from tests.bench.bench_tee import PY, ROOT, ndjson, tee, throughput_once

# (e): the capture's own CPU for a flood, in a process of its own run from a tree (cwd): both
# directions of FILE in 1 MiB chunks through a CaptureSink with the live check, as the capture
# process frames and writes them; CPU seconds of the writer's loop only (process_time).
CAPTURE_CPU = r"""
import sys, time
from tracer.analyser import Analyser
from tracer.capture import CaptureWriter, header_record
from tracer.rules import select_rules
from tracer.stdio.capture import STDIN, STDOUT, CaptureSink
try:  # as the capture process of that tree tunes its heap (trees since the tuning)
    from tracer.stdio.heap import keep_freed_memory
    keep_freed_memory(64 << 20)
except ImportError:
    pass
data = open(sys.argv[1], "rb").read()
w = CaptureWriter(sys.argv[2], header_record("stdio"), overwrite=True)
s = CaptureSink(w, "stdio-1", analyser=Analyser(select_rules(["MCP8"])), budget=1 << 40)
for i in range(0, len(data), 1 << 20):
    s.offer(STDIN, i, data[i : i + (1 << 20)])
    s.offer(STDOUT, i, data[i : i + (1 << 20)])
s.eof(STDIN, 1); s.eof(STDOUT, 1)
s._q.put((4, 0, None, None))  # (the stop item: the writer's loop runs here, in this thread)
t = time.process_time()
s._loop()
print(time.process_time() - t)
"""


# The floor of (e): the same chunks escaped as one JSON string each by orjson and written, with no
# framing, no record around each line, no live check: the least a capture writer built on orjson
# does per byte (the ASCII decode, the escape, the write to the page cache).
CAPTURE_FLOOR = r"""
import os, sys, time
import orjson
data = open(sys.argv[1], "rb").read()
chunks = [data[i : i + (1 << 20)] for i in range(0, len(data), 1 << 20)] * 2
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
t = time.process_time()
for chunk in chunks:
    os.write(fd, orjson.dumps(str(chunk, "ascii")))
print(time.process_time() - t)
"""


def bench_capture_cpu(total: int, rounds: int, tmp: Path, against: Path | None) -> None:
    trees = [("this tree", ROOT)] + ([(f"against {against}", against)] if against is not None else [])
    path = tmp / "capture-cpu.ndjson"
    path.write_bytes(ndjson(total))
    mb = 2 * path.stat().st_size / 1e6
    cpu: dict[str, list[float]] = {name: [] for name, _ in trees}
    cpu["floor (escape and write only)"] = []
    for _ in range(rounds):
        for name, tree in [*trees, ("floor (escape and write only)", ROOT)]:
            script = CAPTURE_FLOOR if name.startswith("floor") else CAPTURE_CPU
            out = subprocess.run(
                [PY, "-c", script, str(path), str(tmp / "capture-cpu.jsonl")],
                cwd=tree,
                capture_output=True,
                text=True,
                check=True,
            )
            cpu[name].append(float(out.stdout))
    print(
        f"(e) the capture's CPU for {mb:.0f} MB of copies (both directions), min / median of {rounds} rounds"
    )
    base = None
    for name, xs in cpu.items():
        lo, med = min(xs), statistics.median(xs)
        ratio = "" if base is None else f"   (this tree takes x{base / med:.2f} of its CPU)"
        ratio = "" if base is not None and name.startswith("floor") else ratio
        base = med if base is None else base
        print(f"    {name}: {lo:.3f} / {med:.3f} CPU s, {mb / med:.0f} MB per CPU second{ratio}")


# -- (f) the same captures as another tree's ----------------------------------------------------


def mixed_corpus(total: int) -> bytes:
    """Lines the capture must take one by one among plain ones: CRLF, invalid UTF-8, blank lines,
    junk, a pretty-printed message over several lines, control characters, 200 KB lines."""
    plain = ndjson(total // 2).split(b"\n")
    odd = [
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r',
        b'{"jsonrpc":"2.0","method":"m","params":{"t":"\xff\xfe"}}',
        b"",
        b"banner: server starting",
        b"{",
        b'  "jsonrpc": "2.0",',
        b'  "method": "notifications/initialized"',
        b"}",
        b'{"jsonrpc":"2.0","method":"m","params":{"t":"tab\there \x01 \\ \\"quoted\\""}}',
        b'{"jsonrpc":"2.0","id":2,"result":{"text":"' + b"z" * 200_000 + b'"}}',
    ]
    out, size, i = [], 0, 0
    while size < total:
        line = plain[i % len(plain)] if i % 7 else odd[(i // 7) % len(odd)]
        out.append(line)
        size += len(line) + 1
        i += 1
    return b"\n".join(out) + b"\nlast line without newline"


def capture_records(cap: Path) -> tuple[dict[str, list[tuple]], list[tuple]]:
    """A capture's records per direction (and stderr), and its events, without what differs between
    two runs of the same input: seq, times, the pid in `conn` and in `started`."""
    from tracer.capture import read_capture

    streams: dict[str, list[tuple]] = {"c2s": [], "s2c": [], "stderr": []}
    events: list[tuple] = []
    with open(cap, "rb") as fh:
        for rec in read_capture(fh, str(cap)):
            if not hasattr(rec, "type"):
                events.append(("unreadable", str(rec)))
            elif rec.type.value == "message":
                streams[rec.dir.value].append((rec.raw, rec.offset, rec.eol, rec.data))
            elif rec.type.value == "stderr":
                streams["stderr"].append((rec.raw, rec.offset, rec.eol, rec.data))
            elif rec.type.value == "event":
                events.append(tuple(sorted((k, str(v)) for k, v in rec.data.items() if k != "pid")))
    return streams, events


def bench_same_captures(tmp: Path, against: Path, rounds: int) -> None:
    inputs = {"39 MB flood": ndjson(39_000_000), "20 MB mixed corpus": mixed_corpus(20_000_000)}
    print(f"(f) captures of this tree and {against} for the same input, record for record")
    for name, data in inputs.items():
        path = tmp / "same.ndjson"
        path.write_bytes(data)
        verdicts = []
        for r in range(rounds):
            got = {}
            for label, tree in (("this", None), ("against", against)):
                cap = tmp / f"same-{label}.jsonl"
                cap.unlink(missing_ok=True)
                n, _ = throughput_once(path, tee(cap, "cat"), tree)
                assert n == len(data), f"{label}: relayed {n} of {len(data)} bytes"
                got[label] = capture_records(cap)
            (mine, my_events), (theirs, their_events) = got["this"], got["against"]
            same = all(mine[k] == theirs[k] for k in mine) and sorted(my_events) == sorted(their_events)
            counts = ", ".join(f"{k} {len(v):,}" for k, v in mine.items())
            verdicts.append("identical" if same else "DIFFERENT")
            if not same:
                for k in mine:
                    if mine[k] != theirs[k]:
                        at = next(
                            (i for i, (a, b) in enumerate(zip(mine[k], theirs[k], strict=False)) if a != b),
                            min(len(mine[k]), len(theirs[k])),
                        )
                        print(f"    round {r + 1}, {k}: first difference at record {at}")
                if sorted(my_events) != sorted(their_events):
                    print(f"    round {r + 1}: events differ: {my_events} against {their_events}")
        print(f"    {name} ({counts}; events {len(my_events)}): {', '.join(verdicts)}")
