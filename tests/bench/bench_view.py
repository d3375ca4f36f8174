"""Benchmark the viewer on a generated ~1 GB / ~2,000,000-message capture.

Prints, measured side by side in one run (this machine is noisy, so compare within a run):
- the time to merely read the file once (8 MB reads) and to count its newlines (the floor for
  any line index);
- the viewer's time to the first screen (process start to a drawn screen of rows) and, pressing
  G right then, to the last row;
- peak RSS of the viewer process, next to the same on a 10x smaller capture (bounded by the
  screen, not the file, except for the 8-byte-per-row index), and of the analysis process;
- rows parsed versus rows shown, and the background analysis' rate.

    python tests/bench/bench_view.py [--messages 2000000] [--pad 520] [--file PATH]

With --inputs BASE_TREE: the first screen and G for a generated ~400 MB host log, NDJSON, HAR and
capture and a smaller mitmproxy flow file (tests/geninputs.py), opened by BASE_TREE's viewer (a `git
worktree` of an earlier commit) and by this tree's, in the same run, with the ratios, beside the time
to read each file once:

    python tests/bench/bench_view.py --inputs /tmp/F1_base [--input-messages 1100000] [--mitm-messages 60000]

With --floors HAR MITM: what the first screen of a HAR or a flow file cannot go below on this
machine, medians of alternated rounds: an interpreter's start, the viewer's imports (Textual, the
app), the converter's imports (mitmproxy for a flow file) and its first batch of rows written:

    python tests/bench/bench_view.py --floors X.har X.mitm [--rounds 5]

With --first-screen: the first screen of generated ~1 GB inputs of each format (a flow file of
--mitm-mb), alternated rounds, beside the time to read each file once and the viewer's own imports
(medians, and the load average):

    python tests/bench/bench_view.py --first-screen [--gb 1.0] [--mitm-mb 250] [--rounds 5] [--against TREE]

With --mitm-ahead MITM: `G`'s read-ahead of a flow file's last flows, by the viewer itself (mitmproxy
imported into it) against the converter's prepared tail, fresh processes, alternated rounds.

The viewer runs headless (Textual's run_test) in a child process per measurement, so RSS and
start-up are its own. Nothing here asserts a time; it reports.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def read_once(path: str) -> float:
    t = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        while fh.read(8 << 20):
            pass
    return time.perf_counter() - t


def count_newlines(path: str) -> tuple[float, int]:
    t = time.perf_counter()
    n = 0
    with open(path, "rb", buffering=0) as fh:
        while chunk := fh.read(8 << 20):
            n += chunk.count(b"\n")
    return time.perf_counter() - t, n


def vm_hwm_kb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _as_the_cli_does(path: str) -> None:
    """What `mcptrace view FILE` does before it imports the viewer: register the .mitm reader,
    check the input, and start a background conversion early (where the tree has that)."""
    from tracer.cli.inputs import register_optional_inputs

    register_optional_inputs()
    try:
        from tracer.cli.view import _check_input, start_early
    except ImportError:  # (an earlier tree: the conversion starts when the viewer opens the file)
        return
    start_early(path, _check_input(path, argparse.Namespace(follow=False, input_format=None)))


async def child(path: str, t_start: float, analyse_for: float, first_only: bool = False) -> dict:
    """Runs in the child process: open the viewer headless, time the first screen and G."""
    _as_the_cli_does(path)
    from tests.ui_support import until, viewer
    from ui.app import McpTraceApp

    t_import = time.monotonic() - t_start
    app = McpTraceApp(path)
    out: dict = {"import_s": t_import}
    async with app.run_test(size=(160, 45)) as pilot:
        # the screen stamps the moment its first frame with rows has been drawn, and the moment
        # the last row is drawn after G (polling from here would measure the polling)
        await until(pilot, lambda: getattr(app.screen, "first_drawn_at", None) is not None, "rows", bound=900)
        scr = viewer(app)
        out["first_screen_s"] = scr.first_drawn_at - t_start
        out["rows_at_first_screen"] = scr.list.count
        if first_only:
            # CPU by then (the steady figures on a busy machine): this process's, and the converting
            # process's for a HAR or a flow file (its start-up and first batch, a little more)
            import resource

            ru = resource.getrusage(resource.RUSAGE_SELF)
            out["cpu_s"] = ru.ru_utime + ru.ru_stime
            proc = getattr(scr.view.index, "proc", None)
            out["converter_cpu_s"] = _cpu_of(proc.pid) if proc is not None else None
            # quit at once, the converter and the analysis killed: an earlier tree's viewer may raise
            # as it closes while it still indexes (RecordIndex.close: "generator already executing")
            try:
                scr.close_view()  # (its temporary capture and the analysis' files removed)
            except Exception:
                pass
            _kill_children()
            os._exit(_said(out))
        t_g = time.monotonic()
        await pilot.press("G")
        # the end read ahead (provisional rows: host logs, NDJSON), then the exact last row
        drawn = lambda: scr.last_row_drawn_at is not None or getattr(scr, "tail_drawn_at", None) is not None  # noqa: E731
        await until(pilot, drawn, "the end", bound=900)
        ahead = getattr(scr, "tail_drawn_at", None)
        out["tail_s"] = ahead - t_g if ahead is not None and scr.last_row_drawn_at is None else None
        await until(pilot, lambda: scr.last_row_drawn_at is not None, "the last row", bound=900)
        assert scr.list.selected_row == len(scr.view) - 1
        out["last_row_s"] = scr.last_row_drawn_at - t_g
        out["rows"] = len(scr.view)
        out["visible_rows"] = scr.list.scrollable_content_region.height
        out["rows_parsed"] = scr.view.parsed
        ann = scr.view.ann
        t_a = time.perf_counter()
        done0 = ann.rows_done
        await until(
            pilot,
            lambda: time.perf_counter() - t_a >= analyse_for or ann.done,
            "analysis time",
            bound=analyse_for + 60,
        )
        out["analysis_rows_per_s"] = (ann.rows_done - done0) / max(1e-9, time.perf_counter() - t_a)
        out["analysed_rows"] = ann.rows_done
        out["analysis_hwm_kb"] = vm_hwm_kb(ann.proc.pid) if ann.proc else None
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the parent that spawned us
    out["viewer_maxrss_kb"] = vm_hwm_kb(os.getpid())
    return out


def _cpu_of(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _kill_children() -> None:
    """SIGKILL this process's children (the viewer's converter and analysis processes)."""
    import signal

    me = os.getpid()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                os.kill(int(pid), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue


def _said(out: dict) -> int:
    """Print the child's measure (its last line) and flush, for os._exit."""
    print(json.dumps(out), flush=True)
    return 0


def run_child(path: str, analyse_for: float, tree: Path = REPO, first_only: bool = False) -> dict:
    """Measure in a fresh process; TREE: whose viewer (this script's measurement, that tree's code)."""
    # CLOCK_MONOTONIC is system-wide: the child measures from this moment, interpreter start included
    t0 = time.monotonic()
    cmd = [sys.executable, __file__, "--child", path, "--analyse-for", str(analyse_for), "--t0", repr(t0)]
    if first_only:
        cmd.append("--first-only")
    p = subprocess.run([*cmd, "--tree", str(tree)], capture_output=True, text=True, cwd=tree)
    if p.returncode != 0:
        raise SystemExit(f"child failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _timed(cmd: list[str], until_line: bytes | None = None) -> float:
    """Wall seconds of CMD (from this tree), or until it writes a line starting with UNTIL_LINE."""
    t = time.perf_counter()
    with subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as p:
        assert p.stdout is not None
        for line in p.stdout:
            if until_line is not None and line.startswith(until_line):
                took = time.perf_counter() - t
                p.kill()
                return took
        p.wait()
    return time.perf_counter() - t


def floors_bench(har: str, mitm: str, rounds: int) -> None:
    """The first screen's floors for a HAR and a flow file (see the module's docstring)."""
    import statistics

    py = sys.executable
    out = str(Path(tempfile.gettempdir()) / "mcptrace-bench-floors.jsonl")
    spool = [py, "-m", "tracer.cli.spool"]
    cases = {
        "interpreter start (python -c pass)": [py, "-c", "pass"],
        "viewer imports (ui.app, Textual)": [py, "-c", "import ui.app"],
        "converter imports, HAR": [py, "-c", "import tracer.cli.spool, tracer.inputs.harstream"],
        "converter imports, flow file (mitmproxy)": [py, "-c", "import mitmproxy.io, addons.mitm_stream"],
        "converter to its first batch of rows, HAR": [*spool, har, out, "--input-format", "har"],
        "converter to its first batch, flow file": [*spool, mitm, out, "--input-format", "mitm"],
    }
    got: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, cmd in cases.items():
            if os.path.exists(out):
                os.unlink(out)
            got[name].append(_timed(cmd, b"pos " if "first batch" in name else None))
    print(f"first-screen floors, wall, median of {rounds} alternated rounds (min-max):")
    for name, times in got.items():
        print(f"  {name:46} {statistics.median(times):6.3f} s  ({min(times):.3f}-{max(times):.3f})")
    if os.path.exists(out):
        os.unlink(out)


def inputs_bench(base: Path, messages: int, pad: int, mitm_messages: int, only: list[str]) -> None:
    """First screen and G of each input format, BASE's viewer then this tree's, with ratios."""
    from tests.gencapture import generate
    from tests.geninputs import generate as generate_input

    tmp = Path(tempfile.gettempdir())
    capture = str(tmp / f"mcptrace-bench-inputs-{messages}-{pad}.jsonl")
    if not os.path.exists(capture):
        print(f"generating {capture} ({messages:,} messages)...", file=sys.stderr)
        generate(capture, messages, pad)
    paths = {"capture": capture}
    for fmt in ("hostlog", "ndjson", "har"):
        paths[fmt] = str(tmp / f"mcptrace-bench-inputs-{messages}-{pad}.{fmt}")
        if not os.path.exists(paths[fmt]):
            print(f"generating {paths[fmt]}...", file=sys.stderr)
            generate_input(capture, paths[fmt], fmt, swap_every=997)
    # a flow file is smaller: mitmproxy reads and writes ~2,000 flows/s here, so whole files take minutes
    small = str(tmp / f"mcptrace-bench-inputs-{mitm_messages}-{pad}.jsonl")
    paths["mitm"] = small[: -len("jsonl")] + "mitm"
    if not os.path.exists(paths["mitm"]):
        print(f"generating {paths['mitm']}...", file=sys.stderr)
        if not os.path.exists(small):
            generate(small, mitm_messages, pad)
        generate_input(small, paths["mitm"], "mitm")
    print(f"viewer, {base} (before) vs {REPO} (after), same run; ratio = before / after")
    print(
        f"  {'input':8} {'size':>8} {'read once':>9}   {'first screen':>26}   {'G to the last row':>26}   "
        f"{'start to the last row':>26}   {'G to the end shown (read ahead)':>31}"
    )
    for fmt, path in paths.items():
        if only and fmt not in only:
            continue
        read_once(path)  # the page cache holds it for both alike
        t_read = read_once(path)  # (the floor of any index of it)
        before = run_child(path, 0.0, base)
        after = run_child(path, 0.0)
        assert before["rows"] == after["rows"], (fmt, before["rows"], after["rows"])
        fs = (before["first_screen_s"], after["first_screen_s"])
        g = (before["last_row_s"], after["last_row_s"])
        total = (fs[0] + g[0], fs[1] + g[1])  # G pressed at the first screen: when the end is on screen
        print(
            f"  {fmt:8} {os.path.getsize(path) / 1e6:6.0f} MB {t_read:7.2f} s   {fs[0]:7.2f} s -> {fs[1]:6.2f} s "
            f"({fs[0] / fs[1]:5.1f}x)   {g[0]:7.2f} s -> {g[1]:6.2f} s ({g[0] / max(g[1], 1e-3):5.1f}x)"
            f"   {total[0]:7.2f} s -> {total[1]:6.2f} s ({total[0] / total[1]:5.1f}x)"
            f"   {_shown(before):7.2f} s -> {_shown(after):6.2f} s ({_shown(before) / max(_shown(after), 1e-3):6.1f}x)"
            f"   {after['rows']:,} rows"
        )


def _shown(m: dict) -> float:
    """G to the end on screen: the rows read ahead (provisional) when there were, else the last row."""
    return m["tail_s"] if m.get("tail_s") is not None else m["last_row_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", metavar="BASE_TREE", help="compare each input format with this tree's viewer")
    ap.add_argument("--input-messages", type=int, default=1_100_000)
    ap.add_argument("--mitm-messages", type=int, default=60_000, help="messages of the flow file")
    ap.add_argument(
        "--only", nargs="*", default=[], help="these inputs only (capture hostlog ndjson har mitm)"
    )
    ap.add_argument("--messages", type=int, default=2_000_000)
    ap.add_argument("--pad", type=int, default=520)
    ap.add_argument("--file", help="use this capture instead of generating one")
    ap.add_argument(
        "--analyse-for", type=float, default=10.0, help="seconds to watch the background analysis"
    )
    ap.add_argument("--floors", nargs=2, metavar=("HAR", "MITM"), help="the first screen's floors")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--first-screen", action="store_true", help="the first screen of ~1 GB of each format")
    ap.add_argument("--gb", type=float, default=1.0, help="--first-screen: GB of each input")
    ap.add_argument("--mitm-mb", type=int, default=250, help="--first-screen: MB of the flow file")
    ap.add_argument("--against", metavar="TREE", help="--first-screen: an earlier tree's viewer too")
    ap.add_argument("--mitm-ahead", metavar="MITM", help="G's read-ahead on a flow file: viewer vs converter")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--first-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--t0", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--tree", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.tree and Path(args.tree).resolve() != REPO:
            sys.path.remove(str(REPO))  # that tree's viewer, measured the same way
            sys.path.insert(0, str(Path(args.tree).resolve()))
        t_start = args.t0 if args.t0 is not None else time.monotonic()
        print(json.dumps(asyncio.run(child(args.child, t_start, args.analyse_for, args.first_only))))
        return
    if args.floors:
        floors_bench(*args.floors, args.rounds)
        return
    if args.mitm_ahead:
        from tests.bench.bench_view_first import mitm_ahead_bench

        mitm_ahead_bench(args.mitm_ahead, args.rounds)
        return
    if args.first_screen:
        from tests.bench.bench_view_first import first_screen_bench

        first_screen_bench(args.gb, args.mitm_mb, args.rounds, args.only, args.against)
        return
    if args.inputs:
        inputs_bench(Path(args.inputs).resolve(), args.input_messages, 300, args.mitm_messages, args.only)
        return

    from tests.gencapture import generate

    tmp = Path(tempfile.gettempdir())
    big = args.file or str(tmp / f"mcptrace-bench-view-{args.messages}-{args.pad}.jsonl")
    small = str(tmp / f"mcptrace-bench-view-{args.messages // 10}-{args.pad}.jsonl")
    for path, n in ((big, args.messages), (small, args.messages // 10)):
        if not os.path.exists(path):
            print(f"generating {path} ({n:,} messages)...", file=sys.stderr)
            generate(path, n, args.pad)
    size = os.path.getsize(big)
    read_once(big)  # warm the page cache for both measurements alike
    t_read = read_once(big)
    t_nl, lines = count_newlines(big)
    b = run_child(big, args.analyse_for)
    s = run_child(small, 2.0)
    print(f"capture: {big}: {size / 1e9:.2f} GB, {lines:,} lines")
    print(f"  read the file once (8 MB reads):      {t_read:6.3f} s")
    print(f"  count its newlines:                   {t_nl:6.3f} s")
    print(f"  viewer: process start + imports:      {b['import_s']:6.3f} s")
    print(
        f"  viewer: start to first screen:        {b['first_screen_s']:6.3f} s   "
        f"({b['rows_at_first_screen']:,} rows indexed by then; {b['first_screen_s'] / t_read:.1f}x a read)"
    )
    print(
        f"  viewer: G to the last row:            {b['last_row_s']:6.3f} s   "
        f"({b['last_row_s'] / t_nl:.1f}x counting newlines)"
    )
    print(
        f"  rows parsed / rows shown:             {b['rows_parsed']} / {b['visible_rows']} per screen, "
        f"2 screens shown, of {b['rows']:,} rows"
    )
    print(
        f"  viewer peak RSS:                      {b['viewer_maxrss_kb'] / 1024:6.1f} MB   "
        f"(a {os.path.getsize(small) / 1e9:.2f} GB capture: {s['viewer_maxrss_kb'] / 1024:.1f} MB; "
        f"index {8 * b['rows'] / 1e6:.0f} MB of it)"
    )
    hwm = b.get("analysis_hwm_kb")
    print(
        f"  analysis process peak RSS:            {hwm / 1024 if hwm else float('nan'):6.1f} MB   "
        f"(background, {b['analysis_rows_per_s']:,.0f} rows/s; {b['analysed_rows']:,} rows analysed "
        f"while measured)"
    )


if __name__ == "__main__":
    main()
