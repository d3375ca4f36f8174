"""`mcptrace lint --jobs N` against `--jobs 1` on one generated multi-session capture, side by side.

Run: python tests/bench/bench_lint_jobs.py [--messages N] [--jobs 2] [--rounds 3] [--shards] [--profile]

Prints, measured in one run (these machines are noisy, so compare ratios), for each round (--jobs 1
and --jobs N alternated, each a real `mcptrace lint --format json` process, start-up included):
  - the wall time of each, and their ratio;
  - the CPU time of every process of each run (the lint process, whose router thread reads the
    file for the workers, and each worker; read from /proc while it runs), and the CPU-based ratio:
    the CPU time of all of --jobs 1 over the longer of --jobs N's busiest process and all its
    processes' CPU time over N, i.e. the speedup N free cores give. On a machine shared with other
    users' sessions, Linux's autogroup scheduler gives a session its share of the cores however many
    processes it runs, so the wall ratio there can stay far below the CPU one;
  - the load average before and after.
Then the medians of both ratios. With --shards, the split of the work measured in this process: the
CPU time of one analyser on the whole file against the router (tracer.parallel_route) and each of
the N workers' shares (tracer.parallel_worker._shard), and of the same shares with no analysis: what
receiving and reading their lines cost each. With --profile, where the time of single-process lint
goes (cProfile, top functions by own time), in microseconds per message. With --instructions
(valgrind installed), no timed rounds: the machine instructions per message of one analyser, of the
router and of each share, the same on a loaded machine as on a quiet one; --root (repeatable)
measures other trees side by side, e.g. `git worktree add /tmp/before HEAD~1` (a tree from before
the router, 2071ef9 and older, has no tracer.parallel_route: measure it with that tree's own bench).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "bench"))

from bench_lint import generate  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.05  # how often the process tree is read (a worker's last interval is lost: < 1%)


def _stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds so far) of a process, from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    fields = raw[raw.rindex(b")") + 2 :].split()  # (the name before it may hold spaces)
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


def _role(pid: int, parent: int, root: int) -> str:
    if pid == root:
        return "lint"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read()
    except OSError:
        return "?"
    return "worker" if b"parallel_worker" in cmdline else "other"


def _tree_cpu(root: int, seen: dict[int, tuple[str, float]]) -> None:
    """The CPU time so far of `root` and of every process below it, into `seen`."""
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None:
                stats[int(entry.name)] = st
    for pid, (parent, cpu) in stats.items():
        p = pid
        while p != root and p > 1 and p in stats:
            p = stats[p][0]
        if p == root:
            name = seen[pid][0] if pid in seen else _role(pid, parent, root)
            seen[pid] = name, cpu


def lint_run(path: Path, jobs: int) -> tuple[float, list[tuple[str, float]]]:
    """Wall seconds of one lint process, and (role, CPU seconds) of each process it ran, itself
    first, read from /proc while it ran (and once more when it has exited, before it is reaped)."""
    cmd = [sys.executable, "-m", "tracer", "lint", "--no-config", "--no-progress", "--jobs", str(jobs)]
    cmd += ["--format", "json", "-o", os.devnull, str(path)]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT)
    seen: dict[int, tuple[str, float]] = {}
    while True:
        _tree_cpu(proc.pid, seen)
        # (WNOWAIT: an exited process stays a zombie, whose /proc entry still tells its CPU time)
        if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            break
        time.sleep(SAMPLE_S)
    wall = time.perf_counter() - t
    st = _stat(proc.pid)
    if st is not None:
        seen[proc.pid] = "lint", st[1]
    if proc.wait() not in (0, 1):
        raise SystemExit(f"lint --jobs {jobs} failed: exit {proc.returncode}")
    own = seen.pop(proc.pid)
    return wall, [own, *sorted(seen.values())]


class _Drop:
    """A worker's outgoing channel that keeps nothing but a redo's line."""

    redo = None

    def send(self, batch) -> None:
        for _key, item in batch[1]:
            if item[0] == "redo":
                _Drop.redo = item[1]


def routed(path: Path, jobs: int, sink) -> None:
    """The router's streams of the file for `jobs` workers (tracer.parallel_route), one file-like
    `sink(k)` each."""
    from tracer.parallel import Channel, Task
    from tracer.parallel_route import route

    route(Task(0, str(path), None, path.stat().st_size, True), [Channel(sink(k)) for k in range(jobs)])


def shard_cpu(path: Path, jobs: int) -> tuple[float, float, list[float], list[float]]:
    """CPU seconds of the whole file in one analyser, of the router, of each worker's share of
    `jobs`, and of each share with no analysis (what receiving and reading its lines cost)."""
    import io

    from tracer.analyser import RuleSet
    from tracer.lint import Reporter, lint_paths
    from tracer.parallel import Channel, Task, _FileWork, _Out
    from tracer.parallel_worker import _shard
    from tracer.rules import select_rules

    rules = RuleSet(select_rules(None, None))
    c = time.process_time()
    lint_paths([str(path)], rules, Reporter(), progress=False)
    whole = time.process_time() - c
    streams = [io.BytesIO() for _ in range(jobs)]
    c = time.process_time()
    routed(path, jobs, streams.__getitem__)
    router = time.process_time() - c
    task = Task(0, str(path), None, path.stat().st_size, True)

    def share(k: int) -> float:
        streams[k].seek(0)
        c = time.process_time()
        out = _Out(_Drop(), 0)
        _shard(task, k, rules, False, out, Channel(streams[k]).recv)
        out.flush()
        return time.process_time() - c

    shards = [share(k) for k in range(jobs)]
    analyse = _FileWork.record
    _FileWork.record = lambda self, rec, line: None
    try:
        bare = [share(k) for k in range(jobs)]
    finally:
        _FileWork.record = analyse
    if _Drop.redo is not None:
        print(
            f"the shards stopped at line {_Drop.redo:,}: sessions share facts there, so lint re-runs the file "
            "in one process (tracer.parallel)"
        )
    return whole, router, shards, bare


# One piece of the work in a fresh interpreter of the tree at argv[1]: "none" (start-up and imports
# only), "whole" (one analyser over the file, as --jobs 1), "routeN" (the parent's router of N
# workers, writing worker K's stream to argv[4].K) or "shardKofN" (worker K's share of N, read from
# that stream), or a part of reading the file (lines, read).
_PIECE = r"""
import sys
sys.path.insert(0, sys.argv[1])
from tracer.analyser import RuleSet
from tracer.lint import Reporter, lint_paths
from tracer.parallel import Channel, Task, _Out
from tracer.rules import select_rules
class Drop:
    def send(self, batch): pass
rules = RuleSet(select_rules(None, None))
piece, path = sys.argv[2], sys.argv[3]
if piece == "whole":
    lint_paths([path], rules, Reporter(), progress=False)
elif piece.startswith("route"):
    import os
    from tracer.parallel_route import route
    n = int(piece[5:])
    outs = [open(f"{sys.argv[4]}.{k}", "wb") for k in range(n)]
    route(Task(0, path, None, os.path.getsize(path), True), [Channel(fh) for fh in outs])
    for fh in outs:
        fh.close()
elif piece.startswith("shard"):
    import os
    from tracer.parallel_worker import _shard
    k, n = map(int, piece[5:].split("of"))
    out = _Out(Drop(), 0)
    with open(f"{sys.argv[4]}.{k}", "rb") as fh:
        _shard(Task(0, path, None, os.path.getsize(path), True), k, rules, False, out, Channel(fh).recv)
    out.flush()
elif piece in ("lines", "read"):
    from tracer.capture import read_capture
    with open(path, "rb") as fh:
        if piece == "read":
            for _ in read_capture(fh):
                pass
        else:
            for _ in fh:
                pass
"""


def instructions(root: Path, piece: str, path: Path, streams: str = "") -> int:
    """Machine instructions one piece of the work executes (valgrind's cachegrind, no cache
    simulation): the same count on a loaded machine as on a quiet one."""
    with tempfile.NamedTemporaryFile("r", suffix=".log") as log:
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        cmd += [f"--log-file={log.name}", sys.executable, "-c", _PIECE, str(root), piece, str(path), streams]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        for line in log.read().splitlines():
            if "I" in line and "refs:" in line:
                return int(line.rsplit(":", 1)[1].replace(",", ""))
    raise SystemExit("valgrind printed no instruction count")


def instruction_split(path: Path, n: int, jobs: int, roots: list[Path]) -> None:
    """Per message, for each tree: instructions of one analyser over the file, of the router and of
    each of the `jobs` workers' shares (start-up and imports, measured alone, taken off each)."""
    lines = sum(1 for _ in path.open("rb"))
    for root in roots:
        base = instructions(root, "none", path)
        bare = instructions(root, "lines", path)
        read = instructions(root, "read", path) - bare
        print(
            f"instructions per line ({root}): reading it in full (typed record) {read / lines:,.0f}; "
            f"iterating the file {(bare - base) / lines:,.0f}",
            flush=True,
        )
        whole = instructions(root, "whole", path) - base
        with tempfile.TemporaryDirectory(prefix="mcptrace-bench-route-") as tmp:
            streams = str(Path(tmp) / "stream")
            router = instructions(root, f"route{jobs}", path, streams) - base
            shards = [instructions(root, f"shard{k}of{jobs}", path, streams) - base for k in range(jobs)]
        every = router + sum(shards)
        # (on `jobs` free cores the router's thread and the workers share them: the run takes the
        # longest process, or all of them spread over the cores, whichever is longer)
        span = max(max(shards), every / jobs)
        print(
            f"instructions per message ({root}): one analyser {whole / n:,.0f}; the router {router / n:,.0f}; "
            f"shares {', '.join(f'{s / n:,.0f}' for s in shards)}: all of them x{every / whole:.3f} one "
            f"analyser, x{whole / span:.2f} faster on {jobs} free cores (the busiest share "
            f"x{whole / max(shards):.2f})",
            flush=True,
        )


def profile(path: Path, messages: int, top: int = 25) -> None:
    from tracer.analyser import RuleSet
    from tracer.lint import Reporter, lint_paths
    from tracer.rules import select_rules

    rules = RuleSet(select_rules(None, None))
    prof = cProfile.Profile()
    prof.enable()
    lint_paths([str(path)], rules, Reporter(), progress=False)
    prof.disable()
    st = pstats.Stats(prof)
    total = sum(v[2] for v in st.stats.values())  # own time of everything (profiler overhead included)
    rows = sorted(st.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    print(
        f"profile (cProfile inflates small calls): {total / messages * 1e6:.1f} us/message in all; by own time:"
    )
    for (file, line, fn), (_cc, calls, own, cum, _) in rows:
        where = f"{Path(file).parent.name}/{Path(file).name}:{line}" if line else file
        print(
            f"  {own / messages * 1e6:6.2f} us/msg own  {cum / messages * 1e6:6.2f} cum  "
            f"{calls / messages:5.2f} calls/msg  {fn}  ({where})"
        )


def _cpu_line(procs: list[tuple[str, float]]) -> str:
    return ", ".join(f"{name} {cpu:.1f}" for name, cpu in procs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=400_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shards", action="store_true")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--capture", type=Path, help="lint this capture instead of a generated one")
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="instead of timed rounds: machine instructions (valgrind) of one analyser and of each shard",
    )
    ap.add_argument(
        "--root",
        type=Path,
        action="append",
        help="with --instructions, the tree(s) to measure, side by side (default: this one), e.g. a "
        "git worktree of an earlier commit",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcptrace-bench-jobs-") as tmp:
        if args.capture is not None:
            path, n = args.capture, sum(1 for _ in args.capture.open("rb"))
            what = f"{n:,} lines of {path.name}"
        else:
            path = Path(tmp) / "sessions.jsonl"
            n = generate(path, args.messages)
            what = f"{n:,} messages, sessions of both eras"
        print(
            f"{what}, {path.stat().st_size / 1e6:.0f} MB; {os.cpu_count()} cores; "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        if args.instructions:
            instruction_split(path, n, args.jobs, args.root or [ROOT])
            return
        walls, cpus = [], []
        for r in range(args.rounds):
            wall_1, procs_1 = lint_run(path, 1)
            wall_n, procs_n = lint_run(path, args.jobs)
            cpu_1 = sum(c for _, c in procs_1)
            # (the parent's router thread and the workers share the N cores: the longest process,
            # or all of them spread over the cores, whichever is longer)
            busiest = max(max(c for _, c in procs_n), sum(c for _, c in procs_n) / args.jobs)
            walls.append(wall_1 / wall_n)
            cpus.append(cpu_1 / busiest)
            print(
                f"round {r + 1}: --jobs 1 {wall_1:.1f}s wall, {cpu_1:.1f} CPU s; --jobs {args.jobs} "
                f"{wall_n:.1f}s wall, CPU s by process: {_cpu_line(procs_n)} (all {sum(c for _, c in procs_n):.1f}); "
                f"wall x{walls[-1]:.2f}, CPU x{cpus[-1]:.2f} (load average {os.getloadavg()[0]:.1f})"
            )
        print(
            f"median of {args.rounds} rounds, --jobs {args.jobs} against --jobs 1: wall x{statistics.median(walls):.2f}; "
            f"CPU x{statistics.median(cpus):.2f} (all the CPU time of --jobs 1 over the longer of its busiest "
            f"process's and all of its processes' over {args.jobs}: the speedup on {args.jobs} free cores); "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        if args.shards:
            whole, router, shards, bare = shard_cpu(path, args.jobs)
            span = max(max(shards), (router + sum(shards)) / args.jobs)
            print(
                f"work split in this process: one analyser {whole:.1f} CPU s; the router {router:.2f} CPU s "
                f"({router / n * 1e6:.2f} us a line); shares {', '.join(f'{s:.1f}' for s in shards)} CPU s: "
                f"x{whole / span:.2f}; the shares without their analysis (receiving and reading their "
                f"lines): {', '.join(f'{s:.2f}' for s in bare)} CPU s"
            )
        if args.profile:
            profile(path, n)


if __name__ == "__main__":
    main()
