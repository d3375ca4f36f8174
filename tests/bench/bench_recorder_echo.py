"""What hiding echoed values costs the HTTP door's recorder (tracer.http.recorder: the proxy live,
HAR and .mitm imports), this tree against other trees, side by side in one run.

Each exchange is a tools/call in a session (`Mcp-Session-Id` on the request and the answer), with
or without a bearer token; the session id and the token are looked for in every body and header.
Per tree and case it prints instructions per exchange (callgrind: the difference of N and N/5
exchanges, start-up cancelled; steady on a loaded machine) or, with `--cpu`, CPU microseconds per
exchange (interleaved rounds, the best of them), and the ratio to the first tree.

Run: python tests/bench/bench_recorder_echo.py --tree base=/path/to/other/tree [--exchanges N] [--cpu]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def exchanges(n: int, auth: bool) -> None:
    """The measured loop (run in a child with the tree on its path)."""
    import json

    from tracer.http.recorder import Exchange, HttpRecorder

    out: list = []
    rec = HttpRecorder(out.extend, redact=True)
    sid = "4ead6e5b0bca48c38ab8459cfcc57344"
    req_h = [
        ["Host", "127.0.0.1:8000"],
        ["Content-Type", "application/json"],
        ["Accept", "application/json, text/event-stream"],
        ["User-Agent", "python-httpx/0.28"],
        ["Mcp-Session-Id", sid],
        ["MCP-Protocol-Version", "2025-11-25"],
    ] + ([["Authorization", "Bearer tok-ABCDEF0123456789"]] if auth else [])
    resp_h = [["Content-Type", "application/json"], ["Mcp-Session-Id", sid], ["Server", "uvicorn"]]
    t0 = time.process_time()
    for i in range(n):
        call = {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": f"hi {i}"}},
        }
        ex = Exchange(
            f"f{i}", "127.0.0.1:5000", "POST", "http://127.0.0.1:8000/mcp", req_h, json.dumps(call).encode()
        )
        ex.client_id = "c1"
        rec.request(ex)
        ex.status, ex.resp_headers = 200, resp_h
        answer = {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": f"hi {i}"}]}}
        rec.response(ex, json.dumps(answer).encode())
        out.clear()
    print(f"{(time.process_time() - t0) / max(n, 1) * 1e6:.3f}")


def child(tree: Path, n: int, auth: bool, callgrind: bool) -> float:
    argv = [sys.executable, __file__, "--child", str(n), "auth" if auth else "noauth"]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    if callgrind:
        argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv]
    run = subprocess.run(argv, capture_output=True, text=True, env=env, check=True)
    if callgrind:
        return float(re.search(r"Collected : (\d+)", run.stderr).group(1))
    return float(run.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", action="append", default=[], help="NAME=PATH of another tree")
    ap.add_argument("--exchanges", type=int, default=5000)
    ap.add_argument("--cpu", action="store_true", help="CPU time instead of instructions")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        exchanges(int(args.child[0]), args.child[1] == "auth")
        return
    trees = [("this", ROOT)] + [(t.split("=", 1)[0], Path(t.split("=", 1)[1])) for t in args.tree]
    callgrind = not args.cpu and shutil.which("valgrind") is not None
    n = args.exchanges
    for auth in (False, True):
        got: dict[str, float] = {}
        for name, tree in trees:
            if callgrind:
                got[name] = (child(tree, n, auth, True) - child(tree, n // 5, auth, True)) / (n - n // 5)
        if not callgrind:
            best = {name: float("inf") for name, _ in trees}
            for _ in range(args.rounds):  # (interleaved: the load moves the same way for each tree)
                for name, tree in trees:
                    best[name] = min(best[name], child(tree, n, auth, False))
            got = best
        unit = "instructions" if callgrind else "CPU us"
        first = got["this"]
        for name, v in got.items():
            print(
                f"{'bearer token' if auth else 'no credential':14} {name:8} {v:12,.1f} {unit}/exchange  x{v / first:.3f}"
            )


if __name__ == "__main__":
    main()
