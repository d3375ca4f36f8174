"""`bench_view.py --first-screen` and `--mitm-ahead` (see bench_view's docstring): the first screen of
generated ~1 GB inputs of each format, and G's read-ahead of a flow file, measured side by side.
Split from bench_view.py to keep each file under the house's 500 lines; run through bench_view.py."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.bench.bench_view import REPO, _timed, read_once, run_child

# bytes of each format per generated message at pad 300 (tests/geninputs.py; measured): how many
# messages make an input of the size asked for
BYTES_PER_MESSAGE = {"capture": 442, "hostlog": 364, "ndjson": 305, "har": 425, "mitm": 867}


def _generated(fmt: str, size: float) -> str:
    """A generated input of FMT of about SIZE bytes (kept in the temporary directory for reruns)."""
    from tests.gencapture import generate
    from tests.geninputs import generate as generate_input

    tmp = Path(tempfile.gettempdir())
    messages = int(size / BYTES_PER_MESSAGE[fmt])
    capture = str(tmp / f"mcptrace-bench-fs-{messages}-300.jsonl")
    out = capture if fmt == "capture" else str(tmp / f"mcptrace-bench-fs-{messages}-300.{fmt}")
    if not os.path.exists(out):
        if not os.path.exists(capture):
            print(f"generating {capture} ({messages:,} messages)...", file=sys.stderr)
            generate(capture, messages, 300)
        if out != capture:
            print(f"generating {out}...", file=sys.stderr)
            generate_input(capture, out, fmt, swap_every=0 if fmt == "mitm" else 997)
            os.unlink(capture)
    return out


def first_screen_bench(gb: float, mitm_mb: int, rounds: int, only: list[str], against: str | None) -> None:
    """The first screen of each format (about GB each; the flow file MITM_MB), ROUNDS alternated
    rounds, beside the time to read each file once and the floors of any first screen: an
    interpreter's start and the viewer's own imports (what `mcptrace view` imports before it can
    draw). Medians, with the load average before and after. AGAINST: an earlier tree's viewer too,
    alternated with this one's in each round."""

    sizes = {
        "capture": gb * 1e9,
        "hostlog": gb * 1e9,
        "ndjson": gb * 1e9,
        "har": gb * 1e9,
        "mitm": mitm_mb * 1e6,
    }
    paths = {fmt: _generated(fmt, size) for fmt, size in sizes.items() if not only or fmt in only}
    py = sys.executable
    floors = {
        "interpreter start (python -c pass)": [py, "-c", "pass"],
        "the viewer's imports (tracer.cli.view, ui.app)": [py, "-c", "import tracer.cli.view, ui.app"],
    }
    load0 = os.getloadavg()
    trees = {"": REPO} if against is None else {"": REPO, " (before)": Path(against).resolve()}
    times: dict[str, list[float]] = {name: [] for name in [*floors, *(p + t for p in paths for t in trees)]}
    reads: dict[str, list[float]] = {fmt: [] for fmt in paths}
    rows: dict[str, int] = {}
    cpu: dict[str, list[tuple]] = {}  # (the viewer's CPU by its first screen, the converter's)
    for _ in range(rounds):
        for name, cmd in floors.items():
            before = _children_cpu()
            times[name].append(_timed(cmd))
            cpu.setdefault(name, []).append((_children_cpu() - before, None))
        for fmt, path in paths.items():
            reads[fmt].append(read_once(path))  # (the page cache holds it: a warm open, as a reopen)
            for label, tree in trees.items():
                got = run_child(path, 0.0, tree, first_only=True)
                times[fmt + label].append(got["first_screen_s"])
                cpu.setdefault(fmt + label, []).append((got.get("cpu_s"), got.get("converter_cpu_s")))
                if not label:  # (this tree's)
                    rows[fmt] = got["rows_at_first_screen"]
    load1 = os.getloadavg()
    med = {name: statistics.median(t) for name, t in times.items()}
    floor = med["the viewer's imports (tracer.cli.view, ui.app)"]
    print(
        f"first screen, wall, median of {rounds} alternated rounds (min-max); load average "
        f"{load0[0]:.2f} before, {load1[0]:.2f} after"
    )
    for name in floors:
        t = times[name]
        own = statistics.median(c for c, _ in cpu[name])
        print(f"  {name:48} {med[name]:6.3f} s  ({min(t):.3f}-{max(t):.3f}); CPU {own:.3f} s")
    for fmt, path in paths.items():
        t = times[fmt]
        print(
            f"  {fmt:8} {os.path.getsize(path) / 1e6:6.0f} MB  first screen {med[fmt]:6.3f} s "
            f"({min(t):.3f}-{max(t):.3f}), {med[fmt] / floor:4.2f}x the viewer's imports; read once "
            f"{statistics.median(reads[fmt]):6.3f} s; {rows[fmt]:,} rows known then"
        )
        for label in trees:
            print(f"  {'':8} {'':9} CPU by then{label}: {_cpu_text(cpu[fmt + label])}")
        if against is not None:
            t = times[fmt + " (before)"]
            b = statistics.median(t)
            print(
                f"  {'':8} {'':9} before ({against}): {b:6.3f} s ({min(t):.3f}-{max(t):.3f}), x{b / med[fmt]:.2f}"
            )


def _children_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _cpu_text(got: list[tuple]) -> str:

    own = [a for a, _ in got if a is not None]
    conv = [b for _, b in got if b is not None]
    text = f"viewer {statistics.median(own):.3f} s" if own else "viewer ?"
    return text + (f", converter {statistics.median(conv):.3f} s (medians)" if conv else " (median)")


_AHEAD_CHILD = """
import sys, time, resource
sys.path.insert(0, sys.argv[3])
from tracer.cli.inputs import register_optional_inputs
register_optional_inputs()
from tracer.inputs import spooled
from tracer.view import viewdata
from tracer.view.viewdata import open_view
view = open_view(sys.argv[1])
index = view.index
index.update(max_bytes=index.FIRST_STEP)
deadline = time.monotonic() + 600
while spooled.prepared_tail(index.path) is None and time.monotonic() < deadline:
    time.sleep(0.01)
if sys.argv[2] == "viewer":  # (as before: the viewer reads the last flows itself, with mitmproxy)
    viewdata.prepared_tail = lambda path: None
ru = resource.getrusage(resource.RUSAGE_SELF)
c, t = ru.ru_utime + ru.ru_stime, time.perf_counter()
ok = view.read_ahead()
ru = resource.getrusage(resource.RUSAGE_SELF)
print(time.perf_counter() - t, ru.ru_utime + ru.ru_stime - c, ok, len(view.tail.lines) if ok else 0)
view.close()
"""


def mitm_ahead_bench(path: str, rounds: int) -> None:
    """G on a flow file still converting: the end read ahead by the viewer itself (mitmproxy imported
    into it, the file walked, the last flows decoded) against the converter's prepared tail, each in
    a fresh viewer process, alternated rounds (wall and CPU of read_ahead alone)."""

    got: dict[str, list[tuple[float, float]]] = {"viewer": [], "converter": []}
    for _ in range(rounds):
        for how in got:
            out = subprocess.run(
                [sys.executable, "-c", _AHEAD_CHILD, path, how, str(REPO)],
                capture_output=True,
                text=True,
                cwd=REPO,
            )
            wall, cpu, ok, _rows = out.stdout.split()
            assert ok == "True", out.stderr[-2000:]
            got[how].append((float(wall), float(cpu)))
    load = os.getloadavg()[0]
    print(
        f"G's read-ahead on {path} ({os.path.getsize(path) / 1e6:.0f} MB), medians of {rounds} rounds, load {load:.1f}:"
    )
    for how, v in got.items():
        w, c = statistics.median(x for x, _ in v), statistics.median(y for _, y in v)
        print(
            f"  read by the {how:9}  wall {w:6.3f} s  CPU {c:6.3f} s  ({min(x for x, _ in v):.3f}-{max(x for x, _ in v):.3f})"
        )
