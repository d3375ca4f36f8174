"""(g) of bench_tee.py: what a tee holds in memory at rest, at the peak of a flood and after it.

One `mcptrace stdio -- cat` per tree, its stdin held open: at rest after start-up, then a flood of
MB each way written into it (sampled every 10 ms while it passes), then at rest again. Memory is
the tee's and its capture process's resident set (VmRSS) plus the pages the ring (a memfd, no RSS:
nothing maps it) holds, read from its st_blocks; `cat` (the server) is not the tee's cost. After the
flood the figures are taken once the capture had been written out, the ring held no page and the
capture process's RSS had stopped falling for 0.5 s, or after SETTLE_S (the ring gives its pages back after 0.1 s idle, the capture process
trims its heap once its notes have been quiet as long)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

from tests.bench.bench_tee import ROOT, count_capture, ndjson, tee

SETTLE_S = 5.0
MB = 1024 * 1024


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(x) for x in fh.read().split()]
    except OSError:
        return []


def _ring_bytes(pid: int) -> int:
    """The pages the tee's ring holds (0 when it has none, or no ring)."""
    total = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            path = f"/proc/{pid}/fd/{fd}"
            try:
                if "mcptrace-capture-ring" in os.readlink(path):
                    total += os.stat(path).st_blocks * 512
            except OSError:
                pass
    except OSError:
        pass
    return total


def _memory(tee_pid: int) -> tuple[int, int, int]:
    """(the tee's RSS, its capture process's, its ring's pages)"""
    kids = [k for k in _children(tee_pid) if _is_capture(k)]
    return _rss(tee_pid), sum(map(_rss, kids)), _ring_bytes(tee_pid)


def _is_capture(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"tracer" in fh.read()  # (the forked capture process keeps the tee's command line)
    except OSError:
        return False


def memory_once(data: bytes, cap: Path, cwd: Path) -> dict:
    proc = subprocess.Popen(tee(cap, "cat"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cwd)
    got = [0]

    def drain() -> None:
        while b := os.read(proc.stdout.fileno(), 1 << 20):
            got[0] += len(b)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    while not [k for k in _children(proc.pid) if _is_capture(k)] or not cap.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the tee did not start")
        time.sleep(0.01)
    time.sleep(0.5)  # (start-up's imports done)
    rest = _memory(proc.pid)
    peak = [0, 0, 0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            m = _memory(proc.pid)
            for i, x in enumerate(m):
                peak[i] = max(peak[i], x)
            peak[3] = max(peak[3], sum(m))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    proc.stdin.write(data)
    proc.stdin.flush()
    while got[0] < len(data):
        time.sleep(0.01)
    t_end = time.monotonic()
    last, size, still = _memory(proc.pid), -1, 0
    while time.monotonic() - t_end < SETTLE_S:
        time.sleep(0.1)
        now, grown = _memory(proc.pid), cap.stat().st_size
        still = still + 1 if grown == size and now[2] == 0 and now[1] >= last[1] else 0
        last, size = now, grown
        if still >= 5:  # (written out, nothing in the ring, the RSS no longer falling for 0.5 s)
            break
    done.set()
    sampler.join()
    settled = time.monotonic() - t_end
    proc.stdin.close()
    proc.wait(60)
    reader.join(10)
    c = count_capture(cap)
    lines = data.count(b"\n")
    return {
        "rest": rest,
        "peak": peak,
        "after": last,
        "settled_s": settled,
        "complete": c["c2s"] == c["s2c"] == lines and not c["dropped_bytes"],
    }


def _mb(x: int) -> str:
    return f"{x / MB:.1f}"


def bench_memory(total: int, rounds: int, tmp: Path, against: Path | None) -> None:
    data = ndjson(total)
    trees = [("this tree", ROOT)] + ([(f"against {against}", against)] if against is not None else [])
    print(
        f"(g) memory of one `mcptrace stdio -- cat` (MiB: the tee's RSS + its capture process's RSS + "
        f"the ring's pages), {len(data) / 1e6:.0f} MB each way, {rounds} rounds"
    )
    for r in range(rounds):
        for name, tree in trees:
            cap = tmp / f"mem-{r}.jsonl"
            cap.unlink(missing_ok=True)
            m = memory_once(data, cap, tree)
            rest, peak, after = m["rest"], m["peak"], m["after"]
            print(
                f"    {name}, round {r + 1}: at rest {_mb(rest[0])} + {_mb(rest[1])} + {_mb(rest[2])}; "
                f"flood peak {_mb(peak[0])} + {_mb(peak[1])} + {_mb(peak[2])} (sum at once {_mb(peak[3])}); "
                f"{m['settled_s']:.1f} s after it {_mb(after[0])} + {_mb(after[1])} + {_mb(after[2])}; "
                f"capture {'complete' if m['complete'] else 'INCOMPLETE'}"
            )
