"""What hiding echoed values costs the HTTP door's recorder (tracer.http.recorder: the proxy live,
HAR and .mitm imports), this tree against other trees, side by side in one run.

Each exchange is a tools/call in a session (`Mcp-Session-Id` on the request and the answer), with
or without a bearer token; the session id and the token are looked for in every body and header.
Before the first exchange the recorder has met K other sessions (`--known`, default 64 and 4096:
a proxy in front of that many), whose ids it looks for too; "new session" gives every exchange a
session id never seen before (what learning one costs). Per tree and case it prints instructions
per exchange (callgrind: the difference of N and N/5 exchanges, start-up cancelled; steady on a
loaded machine) or, with `--cpu`, CPU microseconds per exchange (interleaved rounds, the best of
them), and the ratio to the first tree; then, per tree, each K's cost over the first K's. A tree
that remembers fewer ids than K (64 before the one-pass matcher) looks for fewer.

Run: python tests/bench/bench_recorder_echo.py [--tree base=/path/to/other/tree] [--exchanges N]
     [--known 64 --known 4096] [--cpu]
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


def _sid(i: int) -> str:
    import hashlib

    return hashlib.md5(str(i).encode()).hexdigest()  # (32 hex digits: the SDK's uuid4().hex shape)


def exchanges(n: int, auth: bool, known: int = 0, fresh: bool = False) -> None:
    """The measured loop (run in a child with the tree on its path)."""
    import json

    from tracer.http.recorder import Exchange, HttpRecorder

    out: list = []
    rec = HttpRecorder(out.extend, redact=True)
    rec.echo.learn_sessions(_sid(-1 - k) for k in range(known))
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
        if fresh:
            sid = _sid(i)
            req_h[4] = ["Mcp-Session-Id", sid]
            resp_h[1] = ["Mcp-Session-Id", sid]
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


def child(tree: Path, n: int, case: tuple[bool, int, bool], callgrind: bool) -> float:
    auth, known, fresh = case
    argv = [sys.executable, __file__, "--child", str(n), "auth" if auth else "noauth", str(known)]
    argv += ["fresh"] if fresh else []
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
    ap.add_argument("--known", type=int, action="append", help="sessions met before (default 64, 4096)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        c = args.child
        exchanges(int(c[0]), c[1] == "auth", int(c[2]) if len(c) > 2 else 0, c[3:] == ["fresh"])
        return
    trees = [("this", ROOT)] + [(t.split("=", 1)[0], Path(t.split("=", 1)[1])) for t in args.tree]
    callgrind = not args.cpu and shutil.which("valgrind") is not None
    n = args.exchanges
    knowns = args.known or [64, 4096]
    unit = "instructions" if callgrind else "CPU us"
    table: dict[tuple, dict[str, float]] = {}
    for fresh in (False, True):
        for auth in (False, True):
            for known in knowns:
                case = (auth, known, fresh)
                got: dict[str, float] = {}
                if callgrind:
                    for name, tree in trees:
                        whole, fifth = child(tree, n, case, True), child(tree, n // 5, case, True)
                        got[name] = (whole - fifth) / (n - n // 5)
                else:
                    got = {name: float("inf") for name, _ in trees}
                    for _ in range(args.rounds):  # (interleaved: the load moves the same way for each tree)
                        for name, tree in trees:
                            got[name] = min(got[name], child(tree, n, case, False))
                table[case] = got
                label = f"{'bearer token' if auth else 'no credential'}, {known} known"
                label += ", new session" if fresh else ""
                first = got["this"]
                for name, v in got.items():
                    print(f"{label:36} {name:8} {v:12,.1f} {unit}/exchange  x{v / first:.3f}", flush=True)
    print(f"\nper tree, {' : '.join(str(k) for k in knowns)} known sessions side by side")
    for auth, known, fresh in table:
        if known != knowns[0]:
            continue
        label = f"{'bearer token' if auth else 'no credential'}{', new session' if fresh else ''}"
        for name, _ in trees:
            row = [table[(auth, k, fresh)][name] for k in knowns]
            shown = "  ".join(f"{v:10,.1f}" for v in row)
            print(f"{label:28} {name:8} {shown}  x{row[-1] / row[0]:.3f}")


if __name__ == "__main__":
    main()
