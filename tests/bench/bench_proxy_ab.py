"""`mcptrace proxy` of this tree against the same proxy of other trees (an older commit checked out
with `git worktree add`), side by side in one run: what a change to the proxy path bought.

Run: python tests/bench/bench_proxy_ab.py [--tree NAME=PATH]... [--rounds R] [--requests N]
         [--streams S] [--first-event-ms D]

e.g. `git worktree add /tmp/base HEAD~3` then `--tree before=/tmp/base`. The upstream, the client and
the measures are bench_proxy.py's (each configuration has a kept-alive connection of its own, rounds
are interleaved request by request and stream by stream, each configuration first in turn). Besides
latency it prints, per proxy process, CPU time and context switches (all its threads, from /proc)
per JSON POST exchange: steady figures where the milliseconds move with the machine's load. The floor is this tree's master
without the capture (tests/bench/proxy_floor.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.bench_proxy import (  # noqa: E402
    FLOOR,
    _client,
    _ms,
    _ready,
    cpu_s,
    first_event_delay,
    json_latencies,
    start_floor,
)
from tests.proxy_peers import _Lines, _stop  # noqa: E402

BENCH = ROOT / "tests" / "bench" / "bench_proxy.py"


def switches(pid: int | None) -> int:
    """Context switches (voluntary and not) of every thread of PID so far."""
    if pid is None:
        return 0
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            for line in (task / "status").read_text().splitlines():
                if "ctxt_switches:" in line:
                    total += int(line.split(":")[1])
        except FileNotFoundError:  # (a thread that ended meanwhile)
            pass
    return total


def start(
    target: str, trees: dict[str, Path], tmp: Path, envs: dict[str, dict[str, str]], procs: list
) -> tuple[dict[str, str], dict]:
    """(URL, process id) of every configuration; the processes started go to PROCS."""
    urls = {"direct": target + "/mcp"}
    pids: dict[str, int | None] = {"direct": None}
    for name, tree in trees.items():
        cmd = ["-m", "tracer", "proxy", "--upstream", target + "/mcp", "--listen", "127.0.0.1:0"]
        p = subprocess.Popen(
            [sys.executable, *cmd, "-o", str(tmp / f"{len(procs)}.jsonl"), "--no-ui"],
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree), **envs.get(name, {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(p)
        urls[name] = _Lines(p.stderr).wait_for(r"give the host this URL: (http://\S+)", name).group(1)
        pids[name] = p.pid
    urls[FLOOR], pids[FLOOR] = start_floor(target, procs)
    return urls, pids


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", default=[], help="NAME=PATH of another tree's proxy")
    ap.add_argument(
        "--env",
        action="append",
        default=[],
        help="NAME=VAR=VALUE: an environment variable of tree NAME's proxy",
    )
    ap.add_argument("--requests", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--streams", type=int, default=5)
    ap.add_argument("--first-event-ms", type=float, default=20.0)
    args = ap.parse_args()
    trees = {"mcptrace proxy (this tree)": ROOT}
    for spec in args.tree:
        name, _, path = spec.partition("=")
        trees[f"mcptrace proxy ({name})"] = Path(path).resolve()
    envs: dict[str, dict[str, str]] = {}
    for spec in args.env:
        name, _, var = spec.partition("=")
        key, _, value = var.partition("=")
        envs.setdefault(f"mcptrace proxy ({name})", {})[key] = value
    server = subprocess.Popen(
        [sys.executable, str(BENCH), "--serve-upstream", "--first-event-ms", str(args.first_event_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    port = int(_Lines(server.stdout).wait_for(r"upstream on (\d+)", "upstream").group(1))
    with tempfile.TemporaryDirectory() as d:
        load_before = os.getloadavg()
        procs: list = []
        clients = {}
        try:
            urls, pids = start(f"http://127.0.0.1:{port}", trees, Path(d), envs, procs)
            clients = {name: _client() for name in urls}
            names = list(urls)
            lat = {n: [] for n in names}
            first = {n: [] for n in names}
            cpu = dict.fromkeys(names, 0.0)
            ctx = dict.fromkeys(names, 0)
            await _ready(clients, urls)
            for name in names:
                await json_latencies(clients[name], urls[name], 20)  # warm the path
            turn = 0
            for _ in range(args.rounds):
                # one request (one stream) per configuration in turn, each turn starting with the
                # next one: a burst of load from elsewhere falls on all of them alike
                c0 = {n: cpu_s(pids[n]) for n in names}
                s0 = {n: switches(pids[n]) for n in names}
                for _ in range(args.requests):
                    turn += 1
                    for name in names[turn % len(names) :] + names[: turn % len(names)]:
                        lat[name] += await json_latencies(clients[name], urls[name], 1)
                for n in names:
                    cpu[n] += cpu_s(pids[n]) - c0[n]
                    ctx[n] += switches(pids[n]) - s0[n]
                for _ in range(args.streams):
                    turn += 1
                    for name in names[turn % len(names) :] + names[: turn % len(names)]:
                        first[name].append(await first_event_delay(clients[name], urls[name]))
        finally:
            for client in clients.values():
                await client.aclose()
            for p in procs:
                _stop(p)
            server.kill()
            server.wait()
    direct = statistics.median(lat["direct"])
    d_med, d_p90 = _ms(first["direct"]), _ms(first["direct"], 0.9)
    print(
        f"{args.rounds} rounds x {args.requests} JSON POSTs and {args.streams} SSE streams per configuration"
    )
    print(f"(the upstream sends the first event {args.first_event_ms:.0f} ms after the head)\n")
    print(
        f"  {'':<34} {'POST median':>11} {'p90':>8} {'x direct':>8} {'CPU/POST':>9} {'ctxsw/POST':>10}"
        f" {'1st event +med':>14} {'+p90':>8}"
    )
    for name in names:
        n = len(lat[name])
        own = f"{1000 * cpu[name] / n:7.2f}ms {ctx[name] / n:10.1f}" if pids[name] else f"{'':>9} {'':>10}"
        print(
            f"  {name:<34} {_ms(lat[name]):9.3f}ms {_ms(lat[name], 0.9):6.3f}ms"
            f" {statistics.median(lat[name]) / direct:7.2f}x {own}"
            f" {_ms(first[name]) - d_med:+12.2f}ms {_ms(first[name], 0.9) - d_p90:+6.2f}ms"
        )
    print(f"\n  direct first event: median {d_med:.2f} ms, p90 {d_p90:.2f} ms")
    load_after = os.getloadavg()
    print(
        f"load average (1, 5, 15 min): {' '.join(f'{x:.1f}' for x in load_before)} before, "
        f"{' '.join(f'{x:.1f}' for x in load_after)} after"
    )


if __name__ == "__main__":
    asyncio.run(main())
