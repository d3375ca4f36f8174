"""What settling costs: reading a host log with and without tracer.inputs.settle, side by side.

Run: python tests/bench/bench_settle.py [--messages N]

Inputs whose order is not authoritative (host logs, NDJSON, HAR, .mitm) pass through `settle`,
which parses each message once more to know requests from responses. This prints, for a generated
Claude-Desktop-style host log (every 50th answer logged 1 ms before its request): records/s read
through `open_input` with settling and with it bypassed, and the same through the whole analyser
(all rules), as ratios measured in one run (these machines are noisy).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tracer import inputs  # noqa: E402
from tracer.analyser import Analyser  # noqa: E402
from tracer.model import Record  # noqa: E402


def _write(path: Path, n: int) -> None:
    with path.open("w") as fh:
        ms = 0
        for i in range(1, n // 2 + 1):
            req = f'{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"echo","arguments":{{"t":"x"}}}}}}'
            res = f'{{"jsonrpc":"2.0","id":{i},"result":{{"content":[{{"type":"text","text":"x"}}]}}}}'
            lines = [("client", req), ("server", res)]
            if i % 50 == 0:
                lines.reverse()
            for who, body in lines:
                ms += 1
                fh.write(
                    f"2025-06-13T14:{(ms // 60000) % 60:02d}:{(ms // 1000) % 60:02d}.{ms % 1000:03d}Z "
                    f"[info] [fs] Message from {who}: {body}\n"
                )


def _run(path: Path, settle: bool, analyse: bool) -> float:
    saved = inputs.settle
    if not settle:
        inputs.settle = lambda items: items
    try:
        t = time.perf_counter()
        inp = inputs.open_input(str(path))
        a = Analyser() if analyse else None
        for item in inp.records:
            if a is not None and type(item) is Record:
                a.feed(item)
        if a is not None:
            a.finish()
        return time.perf_counter() - t
    finally:
        inputs.settle = saved


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=200_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "mcp.log"
        _write(path, args.messages)
        for analyse in (False, True):
            best = {True: float("inf"), False: float("inf")}
            for _ in range(3):
                for settle in (False, True):
                    best[settle] = min(best[settle], _run(path, settle, analyse))
            what = "read + analyse (all rules)" if analyse else "read only"
            print(
                f"{what}: {args.messages / best[False]:,.0f} msg/s without settle, "
                f"{args.messages / best[True]:,.0f} msg/s with; settled/plain time ratio "
                f"{best[True] / best[False]:.2f}"
            )


if __name__ == "__main__":
    main()
