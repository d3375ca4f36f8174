"""Peak memory of one long session: `mcptrace lint` and the live analyser at growing session lengths.

Run: python tests/bench/bench_memory.py [--sizes 50000,200000,1000000] [--modes stdio-legacy,...]
                                        [--no-live] [--dir DIR] [--select IDS]

For each mode of tests/longsession.py (one session: legacy or modern, stdio or Streamable HTTP;
tools/call with progress, cancellations, resources, pagination, MRTR rounds...) and each size, it
writes the capture (kept in --dir between runs) and measures the peak RSS of a child process:
  - lint: `mcptrace lint --jobs 1 --format json FILE` (all rules by default; one process, as one
    session is analysed by one process whatever --jobs says);
  - live: a child that generates the same session in memory and feeds each record to the Analyser
    as it is made, as the proxy's annotator and the tee do (no file, no reader).
It prints the peak RSS (MB, from wait4's ru_maxrss of that child alone) and the ratio of each size
to the smallest. Flat memory means ratios near 1.0 (the analyser's state is bounded, and what the
process itself costs is the same at any length). It also prints the sizes of the session's tables
at the end of the live run, so what grows shows by name.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import longsession  # noqa: E402

LIVE = """
import sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {tests!r})
import longsession
from tracer.analyser import Analyser
from tracer.rules import select_rules
a = Analyser({rules})
n = 0
sizes = {{}}
for i, rec in enumerate(longsession.records({mode!r}, {size})):
    rec.seq = i + 1  # (as the capture writer numbers them)
    for ev in a.feed(rec):
        n += len(ev.findings)
    if i % 10000 == 0:  # (sampled: a stdio session is gone once its process exited)
        for s in a.sessions.values():
            for k, v in longsession.state_sizes(s).items():
                sizes[k] = max(sizes.get(k, 0), v)
print(n, " ".join(f"{{k}}={{v}}" for k, v in sorted(sizes.items()) if v > 1))
"""


def peak_rss_mb(argv: list[str]) -> tuple[float, str]:
    """Run ARGV; its own peak RSS in MB (not its siblings': wait4 reports one child) and stdout."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    out = proc.stdout.read().decode(errors="replace")
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 1024, out


def capture(directory: Path, mode: str, size: int) -> Path:
    path = directory / f"{mode}-{size}.{'log' if mode.startswith('hostlog') else 'jsonl'}"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")  # (two runs at once write their own)
        # written by a child: a forked child's peak RSS starts at its parent's, so this process stays small
        code = (
            f"import sys; sys.path[:0] = [{str(ROOT)!r}, {str(ROOT / 'tests')!r}]; import longsession; "
            f"longsession.{'write_hostlog' if mode.startswith('hostlog') else 'write'}({str(tmp)!r}, {mode!r}, {size})"
        )
        subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
        tmp.rename(path)
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="50000,200000,1000000")
    p.add_argument(
        "--modes",
        default=",".join(longsession.MODES),
        help="of tests/longsession.py, and hostlog-legacy / hostlog-modern: the stdio session "
        "as a host's log file (lint only)",
    )
    p.add_argument("--dir", default="/tmp/mcptrace-bench-memory")
    p.add_argument("--select", default="", help="rule ids or prefixes for lint (default: all)")
    p.add_argument("--no-live", action="store_true")
    a = p.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    directory = Path(a.dir)
    directory.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    select = ["--select", a.select] if a.select else []
    rules = f"select_rules({a.select.split(',')!r})" if a.select else "None"
    print(
        f"{'mode':<14}{'messages':>10}{'lint MB':>10}{'ratio':>7}{'live MB':>10}{'ratio':>7}  largest tables (live)"
    )
    for mode in a.modes.split(","):
        base_lint = base_live = None
        for size in sizes:
            path = capture(directory, mode, size)
            lint = [py, "-m", "tracer", "lint", "--jobs", "1", "--format", "json", *select, str(path)]
            lint_mb, _ = peak_rss_mb(lint)
            base_lint = base_lint or lint_mb
            live = ""
            if not a.no_live and not mode.startswith("hostlog"):
                code = LIVE.format(
                    root=str(ROOT), tests=str(ROOT / "tests"), rules=rules, mode=mode, size=size
                )
                live_mb, out = peak_rss_mb([py, "-c", code])
                base_live = base_live or live_mb
                tables = " ".join(sorted(out.split()[1:], key=lambda kv: -int(kv.rsplit("=", 1)[1]))[:4])
                live = f"{live_mb:>10.1f}{live_mb / base_live:>7.2f}  {tables}"
            print(f"{mode:<14}{size:>10,}{lint_mb:>10.1f}{lint_mb / base_lint:>7.2f}{live}", flush=True)


if __name__ == "__main__":
    main()
