"""The stdio tee's cost, measured side by side in one run (machines here are noisy: compare ratios).

    /work/venv/bin/python tests/bench/bench_tee.py            # the issue's sizes
    /work/venv/bin/python tests/bench/bench_tee.py --quick    # smaller, for a smoke run

(a) throughput: 100 MB of NDJSON through a plain pipe (`cat`) vs through `mcptrace stdio -- cat`,
    measured at the consumer from the first byte to the last (the tee's Python start-up is not a
    throughput cost); target ratio >= 0.5 (issue 17: the relay's own throughput stays >= 0.5x
    `cat`). The capture's completeness is reported too, and the CPU time of the relay loop's
    thread and of the capture process (`tee_floors.TEE_CPU`): the steady figures on a busy machine.
(b) latency: 10,000 request/response round trips to a small echo server, direct vs through the
    tee; median and p99 ratios, targets <= 1.3x and <= 2x.
(c) burst: 10,000 messages/s for 10 s through the tee to `cat`; messages lost (relay and capture),
    target 0.
(d) flood: 39 MB and 50 MB of NDJSON from `cat FILE |` through `mcptrace stdio -- cat |` into a
    reader, timed until the tee has exited with its capture complete, beside `cat` alone in the
    same place; the capture's completeness and drops are reported. Target: no drop, >= 100 MB/s end
    to end (from the first byte out to the tee's exit: the tee's Python start-up, printed apart,
    is no throughput cost). `--against TREE` runs another tree's tee (a worktree of an earlier
    commit) in the same rounds, alternated with this one's.
(e) the capture's own CPU for 50 MB each way (its writer's loop in a process of its own, the live
    check on), this tree beside `--against TREE`: CPU time, the steadiest figure on a busy machine.
(f) `--only f --against TREE`: the captures of this tree and of TREE for the same inputs (floods
    through `cat`, and a corpus with CRLF, invalid UTF-8, blank, pretty-printed and 200 KB lines),
    compared record for record in each direction (seq, times and the pid in `conn` aside).
(g) memory: one tee's RSS, its capture process's and its ring's pages, at rest, at the peak of a
    flood of `--mb` each way, and after it (tests/bench/tee_memory.py).

Runs alternate direct/tee several times and report medians. Not a test: no assertion, figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.tee_floors import TEE_CPU, c_spin_floor, floor, spin_floor, splice_floor  # noqa: E402

PY = sys.executable
MCPTRACE = [PY, "-m", "tracer"]
ECHO = [PY, str(ROOT / "tests" / "servers" / "echo.py")]


def tee(cap: Path, *cmd: str, opts: tuple[str, ...] = ()) -> list[str]:
    return [*MCPTRACE, "stdio", "-q", *opts, "-o", str(cap), "--", *cmd]


def ndjson(total: int) -> bytes:
    """Realistic traffic: requests, notifications and results of mixed sizes (~200 B to 8 KB)."""
    lines = []
    size = 0
    i = 0
    while size < total:
        i += 1
        k = i % 10
        if k < 4:
            msg = {
                "jsonrpc": "2.0",
                "id": i,
                "method": "tools/call",
                "params": {"name": "search", "arguments": {"q": f"query {i}"}},
            }
        elif k < 6:
            msg = {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": i, "progress": k, "total": 10},
            }
        else:
            msg = {
                "jsonrpc": "2.0",
                "id": i,
                "result": {
                    "content": [{"type": "text", "text": "lorem ipsum dolor sit amet " * (10 + (i % 300))}]
                },
            }
        line = json.dumps(msg, separators=(",", ":")).encode() + b"\n"
        lines.append(line)
        size += len(line)
    return b"".join(lines)


# -- (a) throughput -----------------------------------------------------------------------------

CONSUMER = r"""
import os, sys, time
n = 0; first = None
while True:
    b = os.read(0, 1 << 20)
    if not b: break
    if first is None: first = time.perf_counter()
    n += len(b)
print(n, time.perf_counter() - first)
"""


def throughput_once(data_path: Path, middle: list[str], cwd: Path | None = None) -> tuple[int, float]:
    with open(data_path, "rb") as src:
        prod = subprocess.Popen(["cat"], stdin=src, stdout=subprocess.PIPE)
        mid = subprocess.Popen(middle, stdin=prod.stdout, stdout=subprocess.PIPE, cwd=cwd)
        prod.stdout.close()
        cons = subprocess.run(
            [PY, "-c", CONSUMER], stdin=mid.stdout, capture_output=True, text=True, check=True
        )
        mid.stdout.close()
        mid.wait()
        prod.wait()
    n, secs = cons.stdout.split()
    return int(n), float(secs)


def count_capture(cap: Path) -> dict:
    from tracer.capture import read_capture

    out = {"c2s": 0, "s2c": 0, "dropped_bytes": 0, "problems": 0}
    with open(cap, "rb") as fh:
        for rec in read_capture(fh, str(cap)):
            if not hasattr(rec, "type"):
                out["problems"] += 1
            elif rec.type.value == "message":
                out[rec.dir.value] += 1
            elif rec.type.value == "event" and rec.data.get("event") == "dropped":
                out["dropped_bytes"] += rec.data["bytes"]
    return out


def tee_cpu(cpu: Path, cap: Path, *cmd: str, opts: tuple[str, ...] = ()) -> list[str]:
    """The tee run in-process (tee_floors.TEE_CPU) so that it can say its CPU time into `cpu`."""
    return [PY, "-c", TEE_CPU, str(cpu), "stdio", "-q", *opts, "-o", str(cap), "--", *cmd]


def cpu_of(cpu: Path) -> tuple[float, float]:
    """(the relay loop's thread, the capture process) CPU seconds of the last run written to `cpu`."""
    relay, capture = cpu.read_text().split()
    return float(relay), float(capture)


def bench_throughput(total: int, rounds: int, tmp: Path, against: Path | None = None) -> None:
    data = ndjson(total)
    path = tmp / "traffic.ndjson"
    path.write_bytes(data)
    lines = data.count(b"\n")
    direct, bare, spliced, teed, caps, other, dropping, dropping_caps = [], [], [], [], [], [], [], []
    cpu = tmp / "round.cpu"
    cpus: dict[str, list[tuple[float, float]]] = {"this": [], "against": []}
    for r in range(rounds):
        n, s = throughput_once(path, ["cat"])
        assert n == len(data)
        direct.append(len(data) / s)
        n, s = throughput_once(path, floor("cat"))
        assert n == len(data)
        bare.append(len(data) / s)
        if hasattr(os, "splice"):
            n, s = throughput_once(path, splice_floor("cat"))
            assert n == len(data)
            spliced.append(len(data) / s)
        cap = tmp / f"thr{r}.jsonl"
        n, s = throughput_once(path, tee_cpu(cpu, cap, "cat"))
        if n != len(data):
            print(f"   RELAY LOST BYTES: {n} of {len(data)}")
        teed.append(len(data) / s)
        caps.append(count_capture(cap))
        cpus["this"].append(cpu_of(cpu))
        # the relay's own speed: --drop-when-behind never waits for the capture (drops, recorded)
        cap.unlink()
        n, s = throughput_once(path, tee(cap, "cat", opts=("--drop-when-behind",)))
        dropping.append(len(data) / s)
        dropping_caps.append(count_capture(cap)["dropped_bytes"])
        if against is not None:
            cap.unlink()
            n, s = throughput_once(path, tee_cpu(cpu, cap, "cat"), against)
            other.append(len(data) / s)
            cpus["against"].append(cpu_of(cpu))
            c = count_capture(cap)
            if c["dropped_bytes"] or c["c2s"] != lines or c["s2c"] != lines:
                print(f"    ({against}: capture incomplete in round {r + 1}: {c})")
    d, b, t = statistics.median(direct), statistics.median(bare), statistics.median(teed)
    print(f"(a) throughput, {len(data) / 1e6:.0f} MB / {lines:,} messages, median of {rounds} runs")
    print(f"    plain pipe (cat):         {d / 1e6:8.0f} MB/s")
    print(f"    floor (bare relay -- cat):{b / 1e6:8.0f} MB/s   ratio {b / d:.2f}")
    if spliced:
        sp = statistics.median(spliced)
        print(f"    floor (splice relay):     {sp / 1e6:8.0f} MB/s   ratio {sp / d:.2f}")
    print(f"    mcptrace stdio -- cat:    {t / 1e6:8.0f} MB/s   ratio {t / d:.2f}  (target >= 0.5)")
    dw = statistics.median(dropping)
    print(
        f"    ... --drop-when-behind:   {dw / 1e6:8.0f} MB/s   ratio {dw / d:.2f}  (the relay never waits; "
        f"dropped from its capture per round: {', '.join(f'{x / 1e6:.0f}' for x in dropping_caps)} MB)"
    )
    if other:
        o = statistics.median(other)
        print(f"    the same, {against}: {o / 1e6:8.0f} MB/s   ratio {o / d:.2f}")
    mb = len(data) / 1e6
    for key, name in (("this", "this tree"), ("against", str(against))):
        if cpus[key]:
            relay = statistics.median(x[0] for x in cpus[key])
            capture = statistics.median(x[1] for x in cpus[key])
            print(
                f"    CPU, {name}: the relay loop {relay:.3f} s ({relay * 1e3 / mb:.2f} ms per MB each "
                f"way; rounds {', '.join(f'{x[0]:.3f}' for x in cpus[key])}), the capture process "
                f"{capture:.3f} s ({2 * mb / capture:.0f} MB of copies per CPU second)"
            )
    for c in caps:
        print(
            f"    capture: {c['c2s']:,} c2s + {c['s2c']:,} s2c messages of {lines:,} each way; "
            f"dropped {c['dropped_bytes']:,} bytes; unreadable lines {c['problems']}"
        )


# -- (b) latency --------------------------------------------------------------------------------


def round_trips(cmd: list[str], n: int, warmup: int) -> list[int]:
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    rd = p.stdout
    out = []
    buf = b""
    try:
        for i in range(n + warmup):
            req = (
                b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}\n'
                % i
            )
            t0 = time.perf_counter_ns()
            os.write(p.stdin.fileno(), req)
            while b"\n" not in buf:
                buf += os.read(rd.fileno(), 65536)
            t1 = time.perf_counter_ns()
            _, buf = buf.split(b"\n", 1)
            if i >= warmup:
                out.append(t1 - t0)
    finally:
        p.stdin.close()
        p.wait()
    return out


def pct(xs: list[int], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def bench_latency(n: int, rounds: int, tmp: Path) -> None:
    variants = {"direct": ("direct:", ECHO), "floor": ("floor (bare relay):", floor(*ECHO))}
    if hasattr(os, "splice"):
        variants["splice"] = ("floor (splice relay):", splice_floor(*ECHO))
        variants["spin"] = ("floor (spinning splice relay):", spin_floor(*ECHO))
        c_relay = c_spin_floor(tmp)
        if c_relay is not None:
            variants["c-spin"] = ("floor (the same in C):", [*c_relay, *ECHO])
    variants["tee"] = ("via tee:", None)
    runs: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in variants}
    for r in range(rounds):
        for name, (_, cmd) in variants.items():
            xs = round_trips(cmd or tee(tmp / f"lat{r}.jsonl", *ECHO), n, 500)
            runs[name][0].append(statistics.median(xs))
            runs[name][1].append(pct(xs, 0.99))
    med = {k: statistics.median(v[0]) / 1000 for k, v in runs.items()}
    p99 = {k: statistics.median(v[1]) / 1000 for k, v in runs.items()}
    print(f"(b) latency, {n:,} round trips to tests/servers/echo.py, median of {rounds} runs")
    for k, (label, _) in variants.items():
        print(
            f"    {label:31} median {med[k]:7.1f} us   p99 {p99[k]:8.1f} us   "
            f"ratios {med[k] / med['direct']:5.2f} x / {p99[k] / p99['direct']:5.2f} x"
        )
    print("    targets: median <= 1.3 x, p99 <= 2 x (tee vs direct); the floors relay without capturing")


# -- (c) burst ----------------------------------------------------------------------------------


def bench_burst(rate: int, seconds: float, tmp: Path) -> None:
    cap = tmp / "burst.jsonl"
    p = subprocess.Popen(tee(cap, "cat"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    total = int(rate * seconds)
    received = {"lines": 0}

    def reader() -> None:
        n = 0
        while True:
            b = os.read(p.stdout.fileno(), 1 << 20)
            if not b:
                break
            n += b.count(b"\n")
        received["lines"] = n

    th = threading.Thread(target=reader)
    th.start()
    tick = 0.001  # send in 1 ms slices: rate/1000 messages each
    per_tick = max(1, rate // 1000)
    start = time.perf_counter()
    sent = 0
    while sent < total:
        due = start + (sent // per_tick) * tick
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        batch = b"".join(
            b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%d,"progress":%d}}\n'
            % (sent + k, sent + k)
            for k in range(per_tick)
        )
        os.write(p.stdin.fileno(), batch)
        sent += per_tick
    elapsed = time.perf_counter() - start
    p.stdin.close()
    th.join()
    p.wait()
    c = count_capture(cap)
    print(
        f"(c) burst, {sent:,} messages at {sent / elapsed:,.0f}/s over {elapsed:.1f} s through `mcptrace stdio -- cat`"
    )
    print(f"    relayed back: {received['lines']:,}   lost in relay: {sent - received['lines']}")
    print(
        f"    captured: {c['c2s']:,} c2s + {c['s2c']:,} s2c   lost in capture: "
        f"{(sent - c['c2s']) + (sent - c['s2c'])}   (target 0); dropped bytes {c['dropped_bytes']}"
    )


# -- (d) flood ----------------------------------------------------------------------------------


def flood_once(
    path: Path, middle: list[str], cwd: Path | None = None
) -> tuple[int, float, float, float, float]:
    """(bytes out, start-up: spawn to first byte, first byte to exit, spawn to exit, CPU seconds) of
    `middle` between `cat FILE |` and a reader (this process); exit is the middle's. The CPU time is
    that of every process waited for meanwhile: `cat FILE`, the middle and what it waited for (the
    tee's server and capture process): on a loaded machine the wall time says how much CPU the
    machine gave, the CPU time what the work costs."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    prod = subprocess.Popen(["cat", str(path)], stdout=subprocess.PIPE)
    mid = subprocess.Popen(middle, stdin=prod.stdout, stdout=subprocess.PIPE, cwd=cwd)
    prod.stdout.close()
    first, n = None, 0
    while True:
        b = os.read(mid.stdout.fileno(), 1 << 20)
        if not b:
            break
        if first is None:
            first = time.perf_counter()
        n += len(b)
    mid.stdout.close()
    mid.wait()
    prod.wait()
    end = time.perf_counter()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    first = first if first is not None else end
    return n, first - t0, end - first, end - t0, cpu


def bench_flood(sizes: list[int], rounds: int, tmp: Path, against: Path | None = None) -> None:
    """`against`: another tree of mcptrace (a worktree of an earlier commit), whose tee runs in the
    same rounds, alternated with this one's: the before and after of a change, side by side."""
    trees = [("this tree", ROOT)] + ([(f"against {against}", against)] if against is not None else [])
    empty = tmp / "empty.ndjson"
    empty.write_bytes(b"")
    idle = {name: [] for name, _ in trees}
    for _ in range(rounds):
        for name, tree in trees:
            idle[name].append(flood_once(empty, tee(tmp / "empty.jsonl", "cat"), tree))
    startup = {k: statistics.median(r[3] for r in v) for k, v in idle.items()}
    startup_cpu = {k: statistics.median(r[4] for r in v) for k, v in idle.items()}
    print(
        f"(d) flood, `cat FILE | X | reader`, median of {rounds} runs; the tee with no input: "
        + ", ".join(f"{k} {startup[k]:.2f} s, {startup_cpu[k]:.2f} CPU s" for k in startup)
    )
    for total in sizes:
        data = ndjson(total)
        path = tmp / f"flood{total}.ndjson"
        path.write_bytes(data)
        lines = data.count(b"\n")
        mb = len(data) / 1e6
        plain = []
        runs = {name: ([], [], [], []) for name, _ in trees}  # first to exit, spawn to exit, CPU, captures
        for r in range(rounds):
            n, _, _, whole, _ = flood_once(path, ["cat"])
            assert n == len(data)
            plain.append(whole)
            for name, tree in trees:
                cap = tmp / f"flood{total}-{r}.jsonl"
                cap.unlink(missing_ok=True)
                n, _, after_first, whole, cpu = flood_once(path, tee(cap, "cat"), tree)
                if n != len(data):
                    print(f"   RELAY LOST BYTES ({name}): {n} of {len(data)}")
                first_to_exit, spawn_to_exit, cpus, caps = runs[name]
                first_to_exit.append(after_first)
                spawn_to_exit.append(whole)
                cpus.append(cpu - startup_cpu[name])
                caps.append(count_capture(cap))
        c = statistics.median(plain)
        print(f"    {mb:.0f} MB / {lines:,} messages each way; cat alone: {c:6.3f} s  {mb / c:7.0f} MB/s")
        base = None
        for name, (first_to_exit, spawn_to_exit, cpus, caps) in runs.items():
            f, w, cpu = (statistics.median(x) for x in (first_to_exit, spawn_to_exit, cpus))
            ratio = "" if base is None else f"   (x{base / f:.2f} the end-to-end rate of this tree's)"
            base = f if base is None else base
            print(f"      {name}:")
            print(
                f"        mcptrace stdio -- cat, first byte to exit: {f:6.3f} s  {mb / f:7.0f} MB/s end to end "
                f"(target >= 100){ratio}"
            )
            print(f"        rounds: {', '.join(f'{mb / x:.0f}' for x in first_to_exit)} MB/s")
            print(f"        spawn to exit:                             {w:6.3f} s  {mb / w:7.0f} MB/s")
            print(
                f"        CPU beyond the idle tee's: {cpu:.2f} s ({mb / cpu:.0f} MB of flood per CPU second: relay, "
                "capture of both directions, cat)"
            )
            dropped = [cc["dropped_bytes"] for cc in caps]
            complete = sum(1 for cc in caps if cc["c2s"] == cc["s2c"] == lines and not cc["problems"])
            print(
                f"        capture: complete in {complete} of {rounds} rounds; dropped bytes per round: "
                + ", ".join(f"{d:,}" for d in dropped)
            )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", choices=["a", "b", "c", "d", "e", "f", "g"])
    ap.add_argument(
        "--against",
        type=Path,
        help="(a), (d), (e) also run the tee of this other tree (an earlier commit's worktree); (f) needs it",
    )
    ap.add_argument("--rounds", type=int, help="rounds per figure (default 3)")
    ap.add_argument(
        "--mb",
        type=int,
        help="(a)'s size each way (default 100; 50 fits the relay's and the capture process's budgets: "
        "the relay's own speed with the capture complete)",
    )
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    mb, n, secs, rounds = (20, 2000, 2.0, 3) if args.quick else (100, 10_000, 10.0, 3)
    rounds = args.rounds or rounds
    mb = args.mb or mb
    print(
        f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at start "
        "(other work on the machine moves p99 most)"
    )
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        if args.only in (None, "a"):
            bench_throughput(mb * 1_000_000, rounds, tmp, args.against.resolve() if args.against else None)
        if args.only in (None, "b"):
            bench_latency(n, rounds, tmp)
        if args.only in (None, "c"):
            bench_burst(10_000, secs, tmp)
        if args.only in (None, "d"):
            sizes = [39_000_000, 50_000_000] if not args.quick else [20_000_000]
            bench_flood(sizes, rounds, tmp, args.against.resolve() if args.against else None)
        if args.only in (None, "e"):
            from tests.bench.tee_captures import bench_capture_cpu, bench_same_captures

            bench_capture_cpu(
                50_000_000, max(rounds, 5), tmp, args.against.resolve() if args.against else None
            )
        if args.only in (None, "g"):
            from tests.bench.tee_memory import bench_memory

            bench_memory(mb * 1_000_000, rounds, tmp, args.against.resolve() if args.against else None)
        if args.only == "f" or (args.only is None and args.against):
            if not args.against:
                ap.error("(f) compares with another tree: --against TREE")
            from tests.bench.tee_captures import bench_same_captures

            bench_same_captures(tmp, args.against.resolve(), rounds)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
