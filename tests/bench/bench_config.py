"""Does the project config slow lint's message path? Side by side, in one run, same capture:

  - no config file at all (what lint did before the project config existed);
  - a [tool.mcptrace] with select/fail-on/baseline-free settings (found, validated, no per-finding hook);
  - a config with per-file-ignores and severity overrides (a per-*finding* hook; never per message).

Run: python tests/bench/bench_config.py [--messages N] [--rounds R]
Prints messages/s for each and the ratio to the first (machines here are noisy: compare ratios).
The capture is tests/gencapture.py's legacy session (few findings per message), so the numbers are
the message path's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

# Every variant runs the same rules (MCP9 ignored, by flag or by config), so only the config differs.
CONFIGS = {
    "no config": None,
    "plain config": '[tool.mcptrace]\nignore = ["MCP9"]\nfail-on = "warning"\nformat = "text"\n',
    "per-file + severity": (
        '[tool.mcptrace]\nignore = ["MCP9"]\n[tool.mcptrace.per-file-ignores]\n'
        '"other/*.jsonl" = ["MCP2"]\n[tool.mcptrace.severity]\nMCP3 = "info"\n'
    ),
}


def lint_once(cwd: Path, capture: Path, flags: list[str], env: dict | None = None) -> float:
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "tracer", "lint", "--no-progress", "-o", os.devnull, *flags, str(capture)],
        cwd=cwd,
        check=False,
        stdout=subprocess.DEVNULL,
        env=env,
    )
    return time.perf_counter() - t


def tree_at(rev: str, into: Path) -> dict:
    """The environment that runs `python -m tracer` from REV's tracer/ (read with git archive)."""
    into.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "tracer"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return {**os.environ, "PYTHONPATH": str(into)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=200_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--before",
        metavar="REV",
        default="abd0151^",
        help="also time lint from this git revision (before the project config); '' to skip",
    )
    a = ap.parse_args()
    from tests.gencapture import generate

    with tempfile.TemporaryDirectory() as tmp:
        capture = Path(tmp) / "cap.jsonl"
        n = generate(capture, a.messages)
        dirs = {}
        for name, text in CONFIGS.items():
            d = Path(tmp) / name.replace(" ", "-").replace("+", "")
            d.mkdir()
            if text:
                (d / "pyproject.toml").write_text(text)
            dirs[name] = d
        old_env = tree_at(a.before, Path(tmp) / "before") if a.before else None
        variants = (
            {f"before ({a.before})": (dirs["no config"], ["--ignore", "MCP9"], old_env)} if old_env else {}
        )
        for name, d in dirs.items():
            variants[name] = (d, ["--ignore", "MCP9"] if name == "no config" else [], None)
        best = dict.fromkeys(variants, float("inf"))
        for _ in range(a.rounds):  # interleaved, so drift hits every variant alike
            for name, (d, flags, env) in variants.items():
                best[name] = min(best[name], lint_once(d, capture, flags, env))
    ref = next(iter(best))
    print(f"{n:,} messages, best of {a.rounds} (whole `mcptrace lint` process, same rules in each)")
    for name, secs in best.items():
        print(f"  {name:<24} {n / secs:>10,.0f} messages/s   x{best[ref] / secs:.3f} of {ref}")


if __name__ == "__main__":
    main()
