"""Benchmark the viewer's background analysis against `lint` on the same capture, in the same run.

Prints, per tree (this checkout, and any other given with --tree, e.g. an older commit in a
`git worktree`), rounds interleaved so that both feel the same load:
- lint's rate (`mcptrace lint --jobs 1`, every rule, its JSON report thrown away), in messages
  per second of CPU time and of wall time, process start included;
- the viewer's analysis process (tracer.view.annotations.Annotations, as the viewer starts it): its
  rate the same two ways (process start included too), and the wall time from its start until the last row's findings are known
  (the analysis reports `done`), which is what a filter on analysed fields waits for at worst;
- the ratio analysis / lint (1.00: the viewer's findings come at lint's speed);
- with --tree, each other tree's analysis against the first tree's (CPU time), and lint's rounds of
  every tree pooled as one lint figure when the trees' lint is the same code: under load a tree's
  own lint median moves by a fifth between trees, while the analyses measured side by side stay
  comparable.

    python tests/bench/bench_view_analysis.py [--messages 300000] [--pad 200] [--file PATH]
        [--tree /tmp/other-checkout] [--rounds 3] [--own] [--instructions] [--floor]

With --own it prints instead, per tree, what the viewer adds per row beside the analyser (the
analyser's results computed once and handed back to both loops: see OWN), a figure that moves
less under load than the whole process's. With --instructions (valgrind installed; use a capture
of 20,000 messages or so: valgrind runs some 50 times slower) it prints the machine instructions
per row of each PIECE of the work, which are the same on a loaded machine as on a quiet one:
lint's loop, the viewer's loop with the analyser alone, that loop handing each row's results to
another process as a pipeline would, and the viewer's whole analysis; and of the analysis process,
the hand-over (what it does beyond the analyser on the same blocks: marshalling and writing the
frames, and its loop's bookkeeping), with flushes by rows rather than by the clock, which valgrind
slows some fifty times, so that two runs count the same.

With --floor it prints the floor of two processes on this machine: lint alone; lint while the other
core spins (a loop that touches no memory: what any second busy process costs); and lint while the
other core runs the viewer's row writer over the frames the analysis wrote (COLOAD, in a loop, as
the writer runs beside the analysis), side by side with the viewer's analysis. What the analysis
loses to lint beside that writer is its own; what lint itself loses when the writer shares the
machine (its caches, its memory bus, the host's scheduling of the two virtual cores) is the floor.

CPU time is the steadier figure on a shared machine (wall time counts the other processes' turns
too). Nothing here asserts a time; it reports.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

# `mcptrace lint --jobs 1` as a user runs it (interpreter start and imports included, as they are in
# the analysis process's figures), its report thrown away; CPU time is the child's own
LINT = """
import json, os, subprocess, sys, time
w = time.perf_counter()
t0 = os.times()
cmd = [sys.executable, "-c", "from tracer.cli import main; main()", "lint", "--jobs", "1", "--no-config",
       "--no-progress", "--fail-on", "never", "-f", "json", sys.argv[1]]
subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
t1 = os.times()
wall = time.perf_counter() - w
from tracer.capture import read_capture
with open(sys.argv[1], "rb") as fh:
    n = sum(1 for r in read_capture(fh) if getattr(r, "type", None) is not None and r.type.value == "message")
cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
print(json.dumps({"messages": n, "cpu": cpu, "wall": wall}))
"""

VIEW = """
import json, os, shutil, subprocess, sys, tempfile, time
tick = os.sysconf("SC_CLK_TCK")
def cpu(pid):  # (its own CPU time, its reaped children's)
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / tick, (int(f[13]) + int(f[14])) / tick
wd = tempfile.mkdtemp()
# the analysis process as the viewer starts it (tracer.view.annotations), its stdin a pipe; with
# --one-process the analysis and the rows in that one process
cmd = [sys.executable, "-m", "tracer.view.annotate", sys.argv[1], wd, *sys.argv[2:]]
w = time.perf_counter()
p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
rows, ok, children = 0, False, None
for line in p.stdout:
    if children is None:  # (the analysis is forked before the writer reports anything)
        with open(f"/proc/{p.pid}/task/{p.pid}/children") as fh:
            children = [int(x) for x in fh.read().split()]
    m = json.loads(line)
    if m.get("error"):
        break
    rows = m.get("rows", rows)
    if m.get("done"):
        ok = True
        break
wall = time.perf_counter() - w
# both processes have finished their work: their CPU time so far is the analysis'
own, reaped = cpu(p.pid)
child = 0.0
for c in children or ():
    try:
        child += cpu(c)[0]
    except FileNotFoundError:  # (already reaped by the writer: in its children's time)
        child = reaped
p.stdin.close()
p.wait()
shutil.rmtree(wd)
print(json.dumps({"rows": rows, "cpu": max(own, child), "writer": own, "analysis": child, "wall": wall, "ok": ok}))
"""


# --own: the viewer's own part alone. The capture is analysed once in the child; then lint's read
# loop and the viewer's analysis (tracer.view.annotate.Annotator, in process) each run over it with
# a stand-in analyser that hands back those results, so what differs is only what the viewer adds
# per row (rows, notes, summary, stash); the best of ROUNDS runs of each, in CPU time
OWN = """
import json, sys, tempfile, shutil, time
from tracer.analyser import Analyser
from tracer.capture import read_capture
from tracer.view.annotate import Annotator
path, rounds = sys.argv[1], int(sys.argv[2])
an = Analyser(None)
with open(path, "rb") as fh:
    results = [an.feed(r) for r in read_capture(fh, path) if getattr(r, "type", None) is not None]
results.append(an.finish())
class Replay:
    def __init__(self):
        self.it, self.sessions = iter(results), {}
    def feed(self, rec):
        return next(self.it)
    def finish(self):
        return next(self.it)
def lint():
    feed = Replay().feed
    with open(path, "rb") as fh:
        for r in read_capture(fh, path):
            if getattr(r, "type", None) is not None:
                feed(r)
def view():
    wd = tempfile.mkdtemp()
    ann = Annotator(path, wd, emit=lambda m: None)
    ann.analyser = Replay()
    ann.run()
    shutil.rmtree(wd)
best = {"lint": 1e9, "view": 1e9}
for _ in range(rounds):
    for name, fn in (("lint", lint), ("view", view)):
        t = time.process_time(); fn(); best[name] = min(best[name], time.process_time() - t)
print(json.dumps({"rows": len(results) - 1, **best}))
"""


# --instructions: one piece of the work in a process of its own, under valgrind. The pieces share the
# interpreter's start and the imports of the viewer's analysis, so their differences are per row
PIECE = """
import marshal, os, sys, tempfile, shutil
import orjson
from tracer.analyser import Analyser
from tracer.capture import _fast_record, read_capture
from tracer.model import Direction, Era, Kind
import tracer.view.annotate as A
path, piece = sys.argv[1], sys.argv[2]
if piece == "lint":  # lint's loop: read_capture and the analyser, every rule
    an = Analyser(None)
    with open(path, "rb") as fh:
        for r in read_capture(fh, path):
            if getattr(r, "type", None) is not None:
                an.feed(r)
    an.finish()
    raise SystemExit
if piece == "cli":  # `mcptrace lint` as the timed rounds run it (its report included), in this process
    from tracer.cli import main
    try:
        main(["lint", "--jobs", "1", "--no-config", "--no-progress", "--fail-on", "never", "-f", "json", path])
    except SystemExit:
        pass
    raise SystemExit
if piece.startswith("analysis"):  # the pipeline's analysis process (tracer.view.pipeline): to the writer
    from tracer.view.pipeline import Analysis
    frames = sys.argv[3] if len(sys.argv) > 3 else os.devnull
    fd = os.open(frames, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    if len(sys.argv) <= 3:  # (under valgrind: flushes by rows, not by the clock, so counts repeat)
        A.flush_due = lambda unwritten, last: unwritten >= 16 * A.FLUSH_ROWS
    an = Analysis(path, fd)
    an._summary_every = 1e12 if len(sys.argv) <= 3 else an._summary_every
    if piece != "analysis":  # -nosend: no frame marshalled or written; -alone: the analyser alone
        an.send = lambda op: None
    if piece == "analysis-alone":
        def alone(first, lines):
            feed, loads, cap = an.analyser.feed, orjson.loads, an.capture
            for row, line in enumerate(lines, first):
                obj = loads(line)
                rec = _fast_record(obj, row + 1, cap) if obj.__class__ is dict else None
                if rec is not None:
                    feed(rec)
            return []
        an.analyse = alone
    an.run()
    raise SystemExit
if piece == "writer":  # the pipeline's row writer (tracer.view.replay), from recorded frames
    from tracer.view.replay import Writer
    wd = tempfile.mkdtemp()
    Writer(path, wd, open(sys.argv[3], "rb")).run()
    shutil.rmtree(wd)
    raise SystemExit
CODE = {**{k: i for i, k in enumerate(Kind)}, **{e: i for i, e in enumerate(Era)}, **{d: i for i, d in enumerate(Direction)}}
out = os.open(os.devnull, os.O_WRONLY)
def loop(f, first, lines, handoff):
    # the viewer's loop with the analyser alone (other rows as the viewer writes them); with HANDOFF,
    # each plain message's results as a compact tuple, sent in marshalled batches, which is what
    # the analysis would pay if another process wrote the rows (a pipeline on the two cores)
    feed, loads, cap, batch = f.analyser.feed, orjson.loads, f.capture, []
    for row, line in enumerate(lines, first):
        obj = loads(line)
        rec = _fast_record(obj, row + 1, cap) if obj.__class__ is dict else None
        if rec is None:
            f.analyse_row(row, line, obj)
            continue
        a = feed(rec)
        if handoff and not (a.findings or a.reason is not None or a.pair_note is not None):
            req = a.request
            why = a._era_why
            batch.append((
                row, rec.seq, rec.conn, rec.t_ns, CODE[rec.dir], CODE[a.kind], CODE[a.era], a.pair_status,
                a.method, a.answers_method, a.partner_seq, a.latency_ns, a.op_seq, a.idkey, a.version,
                why if type(why) is str else (why[0], why[1]), a.meta is not None,
                None if req is None else (req.seq, req.idkey, req.method, CODE[req.dir], req.op_seq),
            ))
        f.store.buf += bytes(52)
    if batch:
        os.write(out, marshal.dumps(batch))
    f.row = first + len(lines)
if piece != "view":
    A.fill = lambda f, first, lines: loop(f, first, lines, piece == "handoff")
wd = tempfile.mkdtemp()
A.Annotator(path, wd).run()
shutil.rmtree(wd)
"""
# --floor: the viewer's row writer over recorded frames, again and again until stdin closes, so
# that the other core does what it does beside the analysis while lint runs
COLOAD = """
import shutil, sys, tempfile, threading
from tracer.view.replay import Writer
path, frames = sys.argv[1], sys.argv[2]
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
print("ready", flush=True)
while not stop.is_set():
    wd = tempfile.mkdtemp()
    with open(frames, "rb") as fh:
        Writer(path, wd, fh).run()
    shutil.rmtree(wd)
"""
PIECES = ("cli", "lint", "loop", "handoff", "view", "analysis", "analysis-nosend", "analysis-alone", "writer")


def instructions(tree: str, piece: str, path: str) -> int:
    """Machine instructions of one piece (valgrind's cachegrind without its cache simulation)."""
    with tempfile.NamedTemporaryFile("r", suffix=".log") as log, tempfile.NamedTemporaryFile() as frames:
        extra = []
        if piece == "writer":  # (the frames it reads, recorded by the analysis outside valgrind)
            subprocess.run([sys.executable, "-c", PIECE, path, "analysis", frames.name], cwd=tree, check=True)
            extra = [frames.name]
        cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        cmd += [f"--log-file={log.name}", sys.executable, "-c", PIECE, path, piece, *extra]
        # (one hash seed for every piece: dict and set layouts, and so their probes, alike)
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        subprocess.run(cmd, cwd=tree, check=True, stdout=subprocess.DEVNULL, env=env)
        for line in log.read().splitlines():
            if "I" in line and "refs:" in line:
                return int(line.rsplit(":", 1)[1].replace(",", ""))
    raise SystemExit("valgrind printed no instruction count")


def floor(trees: list[str], path: str, rounds: int) -> None:
    """Lint alone, lint beside the row writer (COLOAD), and the viewer's analysis, interleaved."""
    print(f"capture: {path}; medians of {rounds} rounds, CPU time (see --floor)")
    for tree in trees:
        with tempfile.NamedTemporaryFile() as frames:
            subprocess.run([sys.executable, "-c", PIECE, path, "analysis", frames.name], cwd=tree, check=True)
            got: dict[str, list] = {"alone": [], "spin": [], "beside": [], "view": []}
            for _ in range(rounds):
                got["alone"].append(run(tree, LINT, path))
                spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
                try:
                    got["spin"].append(run(tree, LINT, path))
                finally:
                    spin.kill()
                    spin.wait()
                co = subprocess.Popen(
                    [sys.executable, "-c", COLOAD, path, frames.name],
                    cwd=tree,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                co.stdout.readline()  # (its imports are done: from here on it only writes rows)
                try:
                    got["beside"].append(run(tree, LINT, path))
                finally:
                    co.stdin.close()
                    co.wait()
                got["view"].append(run(tree, VIEW, path))
        n = got["alone"][0]["messages"]
        alone, spun, beside, view = (
            statistics.median(n / x["cpu"] for x in got[k]) for k in ("alone", "spin", "beside", "view")
        )
        print(f"{tree}")
        print(f"  lint alone:                      {alone:9,.0f} msg/s CPU")
        print(f"  lint beside a spinning core:     {spun:9,.0f} msg/s CPU   {spun / alone:5.2f} of alone")
        print(
            f"  lint beside the row writer:      {beside:9,.0f} msg/s CPU   {beside / alone:5.2f} of alone (the floor)"
        )
        print(f"  the viewer's analysis:           {view:9,.0f} msg/s CPU   {view / alone:5.2f} of alone")
        print(
            f"  analysis / lint beside the writer: {view / beside:5.2f} (1.00: all of the gap is the floor)"
        )
        duty = statistics.median(x["writer"] / x["wall"] for x in got["view"])
        print(
            f"  (the real writer was busy {duty:4.0%} of the analysis' wall time; the loop beside lint ~100%)"
        )


def run(tree: str, code: str, path: str, *extra: str) -> dict:
    p = subprocess.run([sys.executable, "-c", code, path, *extra], cwd=tree, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{tree}: child failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=300_000)
    ap.add_argument("--pad", type=int, default=200)
    ap.add_argument("--file", help="use this capture instead of generating one")
    ap.add_argument("--tree", action="append", default=[], help="another checkout to measure alongside")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--own", action="store_true", help="the viewer's own part per row alone (see OWN)")
    ap.add_argument("--no-one-process", action="store_true", help="skip the one-process analysis' rounds")
    ap.add_argument("--floor", action="store_true", help="lint beside the row writer (see COLOAD)")
    ap.add_argument(
        "--instructions", action="store_true", help="instructions per row of each piece (see PIECE)"
    )
    args = ap.parse_args()
    path = args.file
    if path is None:
        from tests.gencapture import generate

        path = str(
            Path(tempfile.gettempdir()) / f"mcptrace-bench-view-analysis-{args.messages}-{args.pad}.jsonl"
        )
        if not os.path.exists(path):
            print(f"generating {path} ({args.messages:,} messages)...", file=sys.stderr)
            generate(path, args.messages, args.pad)
    trees = [str(REPO), *args.tree]
    if args.floor:
        floor(trees, path, args.rounds)
        return
    if args.instructions:
        with open(path, "rb") as fh:
            rows = sum(1 for _ in fh)
        print(f"capture: {path} ({rows:,} rows); machine instructions per row (valgrind)")
        for tree in trees:
            got = {piece: instructions(tree, piece, path) / rows for piece in PIECES}
            cli, lint, loop = got["cli"], got["lint"], got["loop"]
            print(
                f"{tree}:  (ratios: mcptrace lint's instructions / the piece's, as the timed rounds compare)"
            )
            print(f"  mcptrace lint (its report too)    {cli:9,.0f}")
            print(f"  lint's loop                       {lint:9,.0f}")
            print(f"  the viewer's loop, analyser alone {loop:9,.0f}   {cli / loop:5.3f}")
            for piece, what in (
                ("handoff", "handing off each row's results"),
                ("view", "the viewer's analysis, one process"),
                ("analysis", "two processes: the analysis"),
            ):
                n = got[piece]
                print(f"  {what:33s} {n:9,.0f}   {cli / n:5.3f}   its part {n - loop:7,.0f} a row")
            a, quiet, alone = got["analysis"], got["analysis-nosend"], got["analysis-alone"]
            print(
                f"  {'  of which the hand-over':33s} {a - alone:9,.0f}   ({(a - alone) / a:4.1%}: marshalling "
                f"and writing {a - quiet:,.0f}, the loop's bookkeeping {quiet - alone:,.0f})"
            )
            n = got["writer"]
            print(f"  {'two processes: the row writer':33s} {n:9,.0f}   {cli / n:5.3f}")
            best = max(got["analysis"], n)
            print(f"  {'two processes: the longer of both':33s} {best:9,.0f}   {cli / best:5.3f}")
        return
    if args.own:
        print(f"capture: {path}; the viewer's own part per row, best of {args.rounds} runs (CPU time)")
        for tree in trees:
            r = run(tree, OWN, path, str(args.rounds))
            n = r["rows"]
            print(
                f"{tree}: lint's read loop {r['lint'] / n * 1e6:5.2f} us/row, the viewer's analysis "
                f"{r['view'] / n * 1e6:5.2f} us/row: its own part {(r['view'] - r['lint']) / n * 1e6:5.2f} us/row"
            )
        return
    got: dict[str, dict[str, list]] = {t: {"lint": [], "view": [], "one": []} for t in trees}
    for _ in range(args.rounds):
        for tree in trees:
            got[tree]["lint"].append(run(tree, LINT, path))
            got[tree]["view"].append(run(tree, VIEW, path))
            if not args.no_one_process:
                got[tree]["one"].append(run(tree, VIEW, path, "--one-process"))
    print(f"capture: {path}: {os.path.getsize(path) / 1e6:.0f} MB; medians of {args.rounds} rounds")
    for tree in trees:
        lint, view = got[tree]["lint"], got[tree]["view"]
        n = lint[0]["messages"]
        l_cpu = statistics.median(n / x["cpu"] for x in lint)
        l_wall = statistics.median(n / x["wall"] for x in lint)
        v_cpu = statistics.median(n / x["cpu"] for x in view)
        v_wall = statistics.median(n / x["wall"] for x in view)
        last = statistics.median(x["wall"] for x in view)
        lint_s = statistics.median(x["wall"] for x in lint)
        print(f"{tree}{'' if all(x['ok'] for x in view) else '  (an analysis did not finish cleanly)'}")
        print(f"  lint:               {l_cpu:9,.0f} msg/s CPU   {l_wall:9,.0f} msg/s wall   {lint_s:6.1f} s")
        print(
            f"  viewer's analysis:  {v_cpu:9,.0f} msg/s CPU   {v_wall:9,.0f} msg/s wall   "
            f"last row's findings known after {last:6.1f} s"
        )
        print(f"  analysis / lint:    {v_cpu / l_cpu:9.2f} (CPU)         {v_wall / l_wall:9.2f} (wall)")
        if any(x["analysis"] for x in view):  # (two processes: the CPU above is the longer one's)
            a_cpu = statistics.median(x["analysis"] for x in view)
            w_cpu = statistics.median(x["writer"] for x in view)
            print(f"  its two processes:  analysis {a_cpu:6.2f} s CPU, row writer {w_cpu:6.2f} s CPU")
        one = got[tree]["one"]
        if one:
            o_cpu = statistics.median(n / x["cpu"] for x in one)
            o_wall = statistics.median(n / x["wall"] for x in one)
            o_last = statistics.median(x["wall"] for x in one)
            print(
                f"  one process (--one-process): {o_cpu / l_cpu:5.2f} of lint (CPU), {o_wall / l_wall:5.2f} "
                f"(wall), last row's findings known after {o_last:6.1f} s"
            )
    if len(trees) > 1:
        n = got[trees[0]]["lint"][0]["messages"]
        pooled = statistics.median(n / x["cpu"] for t in trees for x in got[t]["lint"])
        first = statistics.median(n / x["cpu"] for x in got[trees[0]]["view"])
        print(f"lint, every tree's rounds pooled: {pooled:,.0f} msg/s CPU")
        for tree in trees:
            v_cpu = statistics.median(n / x["cpu"] for x in got[tree]["view"])
            print(
                f"  {tree}: analysis / pooled lint {v_cpu / pooled:5.2f} (CPU); "
                f"analysis / {trees[0]}'s {v_cpu / first:5.2f}"
            )


if __name__ == "__main__":
    main()
