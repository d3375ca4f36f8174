"""`mcptrace lint` of a small capture, start-up included, on this tree against others, side by side.

Run: python tests/bench/bench_lint_startup.py [--root TREE]... [--rounds 30] [--messages 20]

Each round runs `python -m tracer lint --no-config --no-progress SMALL` once per tree, in turn (the
trees alternate, so a change of load hits them alike), with the tree's bytecode cached as an
installed package has it (one warm-up run each writes it). Prints, per tree, the median and best
wall time and CPU time (user + system of the child) over the rounds, and each tree's median wall
over the first tree's. --root (repeatable) gives the trees; default: this one. A tree from before a
change: `git worktree add /tmp/before HEAD~1`.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _env(root: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(root))
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (an installed package has its bytecode)
    return env


def run_once(root: Path, capture: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one lint process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "tracer", "lint", "--no-config", "--no-progress", str(capture)]
    # (cwd: `python -m` puts the working directory first on sys.path, before PYTHONPATH)
    subprocess.run(
        cmd, env=_env(root), cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", action="append", type=Path, help="a tree to measure (repeatable)")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--messages", type=int, default=20)
    args = ap.parse_args()
    roots = [r.resolve() for r in (args.root or [ROOT])]
    with tempfile.TemporaryDirectory(prefix="mcptrace-bench-startup-") as tmp:
        capture = Path(tmp) / "small.jsonl"
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "tests" / "gencapture.py"),
                str(capture),
                "--messages",
                str(args.messages),
            ],
            env=_env(ROOT),
            stdout=subprocess.DEVNULL,
            check=True,
        )
        for root in roots:  # warm-up: writes each tree's bytecode
            where = subprocess.run(
                [sys.executable, "-c", "import tracer; print(tracer.__file__)"],
                env=_env(root),
                cwd=root,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            if not where.startswith(str(root)):
                raise SystemExit(f"{root}: python imports tracer from {where}, not from this tree")
            run_once(root, capture)
        walls: dict[Path, list[float]] = {r: [] for r in roots}
        cpus: dict[Path, list[float]] = {r: [] for r in roots}
        load0 = os.getloadavg()[0]
        for _ in range(args.rounds):
            for root in roots:
                wall, cpu = run_once(root, capture)
                walls[root].append(wall)
                cpus[root].append(cpu)
        load1 = os.getloadavg()[0]
    print(
        f"lint of a {args.messages}-message capture, {args.rounds} rounds; load average {load0:.1f} -> {load1:.1f}"
    )
    first = statistics.median(walls[roots[0]])
    for root in roots:
        w, c = walls[root], cpus[root]
        print(
            f"{root}: wall median {statistics.median(w) * 1000:.1f} ms (best {min(w) * 1000:.1f}), "
            f"CPU median {statistics.median(c) * 1000:.1f} ms (best {min(c) * 1000:.1f}); "
            f"wall x{statistics.median(w) / first:.3f} of the first tree"
        )


if __name__ == "__main__":
    main()
