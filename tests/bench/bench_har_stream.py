"""Benchmark the viewer's two ways of converting a HAR: entry by entry (tracer.inputs.harstream, what
the viewer's background conversion does first) against the whole-document reader (har.read, what
lint does and what the viewer falls back to), each in a process of its own, alternated rounds.

Prints CPU time (this machine is shared: wall time swings with the load) to the first record and to
the last, and peak RSS, with the ratios whole / streamed:

    python tests/bench/bench_har_stream.py [--file X.har] [--messages 300000] [--rounds 3]

Without --file it generates a HAR (tests/geninputs.py) from a generated capture.

With --viewer, the viewer itself (headless, a child process per way, alternated): `mcptrace view`
of the HAR converted whole first (--whole, what it did before) against entry by entry, G pressed at
the first screen; prints the first screen, the start to the last (exact) row, and the CPU time of
the viewer process and of its converting process (read from /proc until it exits), whose sum is
what the two cores must give before the last row is there (#17 item 1: where `G`'s time goes):

    python tests/bench/bench_har_stream.py --viewer --file X.har [--rounds 2]

Nothing here asserts a time; it reports.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def vm_hwm_mb() -> float:
    """This process's peak RSS (VmHWM: ru_maxrss carries over exec the parent's, which generated
    the HAR)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def child(path: str, how: str) -> dict:
    import time

    from tracer.inputs.lazy import converted_records, record_line

    t = time.process_time()
    if how == "whole":
        from tracer.inputs import open_input

        recs = converted_records(open_input(path).records)
    else:
        from tracer.inputs.harstream import stream
        from tracer.inputs.settle import settle

        recs = converted_records(settle(stream(open(path, "rb"), path)))  # noqa: SIM115
    first = None
    n = 0
    for rec in recs:
        record_line(rec)
        n += 1
        if first is None:
            first = time.process_time() - t
    return {
        "records": n,
        "first_s": first or 0.0,
        "all_s": time.process_time() - t,
        "rss_mb": vm_hwm_mb(),
    }


def _cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def viewer_child(path: str, whole_first: bool, t0: float) -> dict:
    """In a child: the viewer on PATH (converted WHOLE first or entry by entry), G at the first
    screen, until the exact last row is drawn; with the CPU time of the viewer and the converter."""
    import threading
    import time

    import tracer.inputs.spooled as spooled
    from tests.ui_support import until, viewer
    from tracer.cli.inputs import register_optional_inputs
    from ui.app import McpTraceApp

    register_optional_inputs()
    conv: dict = {}
    real_init = spooled.SpoolIndex.__init__

    def init(self, inp, capture, *, whole=False):
        real_init(self, inp, capture, whole=whole or whole_first)
        pid = self.proc.pid

        def poll() -> None:  # (its CPU time until it exits: the last reading before it is gone)
            while (cpu := _cpu_s(pid)) is not None:
                conv["cpu"] = cpu
                time.sleep(0.1)

        threading.Thread(target=poll, daemon=True).start()

    spooled.SpoolIndex.__init__ = init  # type: ignore[method-assign]
    app = McpTraceApp(path)
    async with app.run_test(size=(160, 45)) as pilot:
        await until(
            pilot, lambda: getattr(app.screen, "first_drawn_at", None) is not None, "rows", bound=1800
        )
        scr = viewer(app)
        first = scr.first_drawn_at - t0
        await pilot.press("G")
        await until(pilot, lambda: scr.last_row_drawn_at is not None, "the last row", bound=1800)
        last = scr.last_row_drawn_at - t0
        rows = len(scr.view)
    return {
        "first_s": first,
        "last_s": last,
        "viewer_cpu": time.process_time(),
        "conv_cpu": conv.get("cpu"),
        "rows": rows,
    }


def viewer_run(path: str, how: str) -> dict:
    import time

    t0 = time.monotonic()  # (CLOCK_MONOTONIC is system-wide: the child measures from here)
    p = subprocess.run(
        [sys.executable, __file__, "--viewer-child", how, "--file", path, "--t0", repr(t0)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    if p.returncode != 0:
        raise SystemExit(f"viewer child failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def viewer_bench(path: str, rounds: int) -> None:
    print(
        f"{path}: {os.path.getsize(path) / 1e6:.0f} MB; the viewer, G at the first screen, converted whole first vs entry by entry"
    )
    for r in range(rounds):
        w, s = viewer_run(path, "whole"), viewer_run(path, "stream")
        assert w["rows"] == s["rows"], (w, s)
        print(
            f"  round {r + 1}: first screen {w['first_s']:6.2f} s -> {s['first_s']:5.2f} s   "
            f"start to the last row {w['last_s']:6.1f} s -> {s['last_s']:6.1f} s ({w['last_s'] / s['last_s']:4.2f}x)   "
            f"CPU converter {w['conv_cpu']:5.1f} s -> {s['conv_cpu']:5.1f} s, viewer {w['viewer_cpu']:5.1f} s -> "
            f"{s['viewer_cpu']:5.1f} s   {s['rows']:,} rows"
        )


def run(path: str, how: str) -> dict:
    p = subprocess.run(
        [sys.executable, __file__, "--child", how, "--file", path], capture_output=True, text=True, check=True
    )
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--file")
    ap.add_argument("--messages", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--viewer", action="store_true", help="the viewer's first screen and G, whole vs streamed"
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--viewer-child", help=argparse.SUPPRESS)
    ap.add_argument("--t0", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.file, args.child)))
        return
    if args.viewer_child:
        import asyncio

        print(json.dumps(asyncio.run(viewer_child(args.file, args.viewer_child == "whole", args.t0))))
        return
    path = args.file
    if path is None:
        from tests.gencapture import generate
        from tests.geninputs import generate as generate_input

        tmp = Path(tempfile.gettempdir())
        capture = str(tmp / f"mcptrace-bench-har-{args.messages}.jsonl")
        path = capture[: -len("jsonl")] + "har"
        if not os.path.exists(path):
            print(f"generating {path}...", file=sys.stderr)
            generate(capture, args.messages, 300)
            generate_input(capture, path, "har")
    if args.viewer:
        viewer_bench(path, args.rounds)
        return
    print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB; CPU time, whole document vs entry by entry")
    for r in range(args.rounds):
        w, s = run(path, "whole"), run(path, "stream")
        assert w["records"] == s["records"], (w, s)
        print(
            f"  round {r + 1}: first record {w['first_s']:6.2f} s -> {s['first_s']:5.2f} s "
            f"({w['first_s'] / max(s['first_s'], 1e-3):5.1f}x)   all {w['all_s']:6.2f} s -> {s['all_s']:6.2f} s "
            f"({w['all_s'] / s['all_s']:4.2f}x)   peak RSS {w['rss_mb']:5.0f} MB -> {s['rss_mb']:4.0f} MB   "
            f"{s['records']:,} records"
        )


if __name__ == "__main__":
    main()
