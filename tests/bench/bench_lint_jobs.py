"""`mcptrace lint --jobs N` against `--jobs 1` on one generated multi-session capture, side by side.

Run: python tests/bench/bench_lint_jobs.py [--messages N] [--jobs 2] [--rounds 3] [--profile]

Prints, measured in one run (these machines are noisy, so compare ratios):
  - wall time of `mcptrace lint --format json` (a real process, start-up included) with --jobs 1 and
    --jobs N, alternated round by round, and the throughput ratio of each round and of the medians;
  - the split of the work itself: the CPU time of one process linting the whole file against the CPU
    time of each of the N shards (what each worker does), measured in this process one after the
    other: the ratio N cores would reach with nothing else running. On a machine shared with other
    users' sessions, Linux's autogroup scheduler gives a session its share of the cores however many
    processes it runs, so the wall ratio can stay far below it there;
  - with --profile, where the time of single-process lint goes (cProfile, top functions by own time),
    in microseconds per message.
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


def lint_wall(path: Path, jobs: int) -> float:
    t = time.perf_counter()
    rc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracer",
            "lint",
            "--no-config",
            "--no-progress",
            "--jobs",
            str(jobs),
            "--format",
            "json",
            "-o",
            os.devnull,
            str(path),
        ],
        cwd=ROOT,
    ).returncode
    if rc not in (0, 1):
        raise SystemExit(f"lint --jobs {jobs} failed: exit {rc}")
    return time.perf_counter() - t


def shard_cpu(path: Path, jobs: int) -> tuple[float, list[float]]:
    """CPU seconds of the whole file in one analyser, and of each shard of `jobs`."""
    from tracer.analyser import RuleSet
    from tracer.lint import Reporter, lint_paths
    from tracer.parallel import Task, _Out, _shard
    from tracer.rules import select_rules

    class Drop:
        redo = None

        def send(self, batch) -> None:
            for _key, item in batch[1]:
                if item[0] == "redo":
                    Drop.redo = item[1]

    rules = RuleSet(select_rules(None, None))
    c = time.process_time()
    lint_paths([str(path)], rules, Reporter(), progress=False)
    whole = time.process_time() - c
    task = Task(0, str(path), None, path.stat().st_size, True)
    shards = []
    for k in range(jobs):
        c = time.process_time()
        out = _Out(Drop(), 0)
        _shard(task, k, jobs, rules, False, out)
        out.flush()
        shards.append(time.process_time() - c)
    if Drop.redo is not None:
        print(
            f"the shards stopped at line {Drop.redo:,}: sessions share facts there, so lint re-runs the file "
            "in one process (tracer.parallel)"
        )
    return whole, shards


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=400_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcptrace-bench-jobs-") as tmp:
        path = Path(tmp) / "sessions.jsonl"
        n = generate(path, args.messages)
        print(
            f"{n:,} messages, {path.stat().st_size / 1e6:.0f} MB, sessions of both eras; {os.cpu_count()} cores; "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        one, many = [], []
        for r in range(args.rounds):
            one.append(lint_wall(path, 1))
            many.append(lint_wall(path, args.jobs))
            print(
                f"round {r + 1}: --jobs 1 {one[-1]:.1f}s ({n / one[-1]:,.0f} msg/s), --jobs {args.jobs} "
                f"{many[-1]:.1f}s ({n / many[-1]:,.0f} msg/s): x{one[-1] / many[-1]:.2f}"
            )
        print(
            f"median: --jobs {args.jobs} / --jobs 1 throughput x{statistics.median(one) / statistics.median(many):.2f}"
            f" (load average now {os.getloadavg()[0]:.1f})"
        )
        whole, shards = shard_cpu(path, args.jobs)
        print(
            f"work split: one process {whole:.1f} CPU s; shards {', '.join(f'{s:.1f}' for s in shards)} CPU s: "
            f"x{whole / max(shards):.2f} on {args.jobs} free cores (each shard reads the whole file)"
        )
        if args.profile:
            profile(path, n)


if __name__ == "__main__":
    main()
