"""The analyser's consumers (lint, export) on this tree against an older commit, side by side.

Run: python tests/bench/bench_contract.py [--against REV] [--tree REV] [--shapes] [--messages N] [--rounds 5]

Written for the analyser's event contract (tracer.events, issue #14 item 2): every consumer loops
over the events `Analyser.feed` returns (a message's Analysed itself, else a tuple) instead of
`feed` + `take_end_findings`, and this checks that no speed was lost. With `--against REV`, that commit is unpacked into a temporary directory
(`git archive`: no worktree, nothing in the repository changes) and each measurement runs in a child
process with one tree or the other on sys.path, the two alternated round by round (first one, then
the other, then the other way round) on the same generated capture, since these machines are
noisy. Each child reports its own CPU time, not wall time: on a machine shared by many processes
the wall clock measures the neighbours too (wall-time rounds here ranged x0.3-x3.4; CPU-time
rounds stay within about 10%). `--tree REV` measures a commit instead of the working tree
(whatever else is uncommitted there is left out). It prints each round's rates and, per
measurement, the median of each tree and their ratio (this tree / REV: above 1 is faster).

Measurements:
  - `lint` with every rule (what `mcptrace lint` costs);
  - `lint` with MCP101 only: reading, classifying, pairing, era labelling and the consumer's loop,
    with almost no rule work, so a cost per record in the loop shows most here;
  - `export`: the OTLP/JSON span export (tracer.export.build_spans, every rule), another consumer;
  - with `--shapes`, in one child process on this tree: what `feed` handing a message back costs
    by shape (MCP101 only, records read beforehand): the Analysed itself (what feed does), a
    1-tuple of it, a generator yielding it, each with its consumer's loop, rounds alternated.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "bench"))

from bench_lint import generate  # noqa: E402

CHILD = r"""
import sys, time
sys.path.insert(0, {tree!r})
try:
    from tracer.rules import select_rules
except ImportError:  # (older trees: the registry module)
    from tracer.rules.registry import select_rules
from tracer.analyser import RuleSet
what = {what!r}
path = {path!r}
if what == "export":
    from tracer.analyser import Analyser
    from tracer.capture import read_capture
    from tracer.export import build_spans
    t = time.process_time()
    with open(path, "rb") as fh:
        b = build_spans(read_capture(fh, path), lambda span: None, source=path, identity="bench",
                        analyser=Analyser(select_rules(None, None)))
    dt = time.process_time() - t
    print(b.spans, dt)
else:
    from tracer.lint import Reporter, lint_paths
    class Null(Reporter):
        pass
    rules = RuleSet(select_rules({select!r}, None))
    t = time.process_time()
    stats = lint_paths([path], rules, Null(), progress=False)
    dt = time.process_time() - t
    print(stats.messages, dt)
"""

SHAPES_CHILD = r"""
import statistics, sys, time
sys.path.insert(0, {tree!r})
from tracer.analyser import Analyser
from tracer.capture import read_capture
from tracer.model import Analysed, RecordType
from tracer.rules import select_rules
MESSAGE = RecordType.MESSAGE
with open({path!r}, "rb") as fh:
    records = [r for r in read_capture(fh, {path!r}) if hasattr(r, "raw")]
rules = select_rules(["MCP101"])

# (the message path as Analyser.feed has it, one shape changed: no extra call on the way)
class AsTuple(Analyser):
    def feed(self, rec):
        if rec.type is MESSAGE:
            self.records += 1
            if rec.t_ns > self.last_t_ns:
                self.last_t_ns = rec.t_ns
            return (self._message(rec),)
        return Analyser.feed(self, rec)

class AsGenerator(Analyser):
    def feed(self, rec):
        if rec.type is MESSAGE:
            self.records += 1
            if rec.t_ns > self.last_t_ns:
                self.last_t_ns = rec.t_ns
            yield self._message(rec)
            return
        yield from Analyser.feed(self, rec)

def itself():
    feed = Analyser(rules).feed
    n = 0
    for rec in records:
        a = feed(rec)
        if a.__class__ is Analysed:
            n += len(a.findings)
            continue
        for ev in a:
            n += len(ev.findings)
    return n

def looped(cls):
    def run():
        feed = cls(rules).feed
        n = 0
        for rec in records:
            for ev in feed(rec):
                n += len(ev.findings)
        return n
    return run

shapes = {{"Analysed itself": itself, "1-tuple": looped(AsTuple), "generator": looped(AsGenerator)}}
us = {{name: [] for name in shapes}}
for r in range({rounds}):
    names = list(shapes) if r % 2 == 0 else list(shapes)[::-1]
    for name in names:
        t = time.process_time()
        shapes[name]()
        us[name].append((time.process_time() - t) / len(records) * 1e6)
base = statistics.median(us["Analysed itself"])
for name, v in us.items():
    m = statistics.median(v)
    print(f"feed shape {{name}}: {{m:.2f}} us/record (median of {rounds}), x{{m / base:.3f}} of the Analysed itself")
"""

MEASUREMENTS = {"lint": None, "lint-MCP101": ["MCP101"], "export": None}


def measure(tree: Path, what: str, path: Path, messages: int) -> float:
    """Messages per second of one measurement in a child process running TREE's code."""
    select = MEASUREMENTS[what]
    code = CHILD.format(
        tree=str(tree), what="export" if what == "export" else "lint", path=str(path), select=select
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tempfile.gettempdir()
    )
    if out.returncode != 0:
        raise SystemExit(f"{what} on {tree} failed:\n{out.stderr[-2000:]}")
    _, dt = out.stdout.split()
    return messages / float(dt)


def unpack(rev: str, into: Path) -> str:
    """REV's tree (tracked files only) into INTO; returns its short commit id."""
    commit = subprocess.run(
        ["git", "rev-parse", "--short", rev], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    archive = subprocess.Popen(["git", "archive", "--format=tar", commit], cwd=ROOT, stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"git archive {rev} failed")
    return commit


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", metavar="REV", help="an older commit to measure beside this tree")
    ap.add_argument("--tree", metavar="REV", help="measure this commit instead of the working tree")
    ap.add_argument("--messages", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--shapes", action="store_true", help="also measure feed's return shapes (see above)")
    ap.add_argument(
        "--only", choices=sorted(MEASUREMENTS), action="append", help="run only these measurements"
    )
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcptrace-bench-contract-"))
    try:
        cap = tmp / "bench.jsonl"
        t = time.perf_counter()
        n = generate(cap, args.messages)
        print(
            f"generated {n:,} messages ({cap.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.1f}s"
        )
        trees = {"this tree": ROOT}
        if args.tree:  # a commit instead of the working tree (others' uncommitted edits left out)
            mine = tmp / "tree"
            mine.mkdir()
            trees = {unpack(args.tree, mine): mine}
        if args.against:
            old = tmp / "against"
            old.mkdir()
            trees[unpack(args.against, old)] = old
        names = list(trees)
        whats = args.only or list(MEASUREMENTS)
        rates: dict[tuple[str, str], list[float]] = {(w, t): [] for w in whats for t in names}
        for r in range(args.rounds):
            order = names if r % 2 == 0 else names[::-1]
            for what in whats:
                shown = []
                for name in order:
                    rate = measure(trees[name], what, cap, n)
                    rates[what, name].append(rate)
                    shown.append(f"{name} {rate:,.0f}/s")
                print(f"round {r + 1} {what}: " + ", ".join(shown), flush=True)
        print()
        for what in whats:
            med = {name: statistics.median(rates[what, name]) for name in names}
            line = f"{what}: " + ", ".join(f"{name} {m:,.0f} messages/s (median)" for name, m in med.items())
            if len(names) == 2:
                line += f"; ratio {names[0]} / {names[1]} x{med[names[0]] / med[names[1]]:.3f}"
                per_round = [a / b for a, b in zip(rates[what, names[0]], rates[what, names[1]], strict=True)]
                line += f" (rounds: {', '.join(f'x{x:.3f}' for x in per_round)})"
            print(line)
        if args.shapes:
            code = SHAPES_CHILD.format(tree=str(trees[names[0]]), path=str(cap), rounds=max(3, args.rounds))
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp)
            print(out.stdout.rstrip() if out.returncode == 0 else f"--shapes failed:\n{out.stderr[-2000:]}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
