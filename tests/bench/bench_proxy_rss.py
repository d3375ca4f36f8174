"""The resident memory of a real `mcptrace proxy` over a long run: does it stay flat?

Run: python tests/bench/bench_proxy_rss.py [--requests 200000] [--connections 4] [--samples 20]
     [--legacy]

An upstream in a process of its own (bench_proxy.py's: it answers every request at once) sits
behind `mcptrace proxy -o CAPTURE` (what users run, the capture written). Keep-alive clients, one
thread per connection, send `tools/call` requests with increasing ids, as a real client numbers
them (a per-request table keyed by id would show here; one id sent again and again would hide it):
modern 2026-07-28 requests by default, or with --legacy one `initialize`d 2025-11-25 session-less
session per connection. The proxy's VmRSS (/proc) is sampled every requests/samples requests; it
prints each sample and the growth over the second half of the run, in bytes per request (the first
half holds the warm-up: allocator arenas, mitmproxy's and the analysis' caches filling). A few
bytes per request over 100,000 requests is noise of the allocator; a table kept per request shows
as tens to hundreds.
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.proxy_peers import _Lines, _stop, start_proxy  # noqa: E402

MODERN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _headers(legacy: bool) -> dict[str, str]:
    h = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    if legacy:
        h["mcp-protocol-version"] = "2025-11-25"
    else:
        h.update({"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "echo"})
    return h


def _client(port: int, count: int, legacy: bool, done: list[int], lock: threading.Lock) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = _headers(legacy)

    def post(msg: dict) -> None:
        conn.request("POST", "/mcp", json.dumps(msg), headers)
        resp = conn.getresponse()
        resp.read()

    if legacy:
        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "1"},
        }
        post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for i in range(1, count + 1):
        params = {"name": "echo", "arguments": {"text": "hi"}}
        if not legacy:
            params["_meta"] = MODERN_META
        post({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
        with lock:
            done[0] += 1
    conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--legacy", action="store_true", help="2025-11-25 session-less sessions, not 2026-07-28")
    args = ap.parse_args()
    upstream = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "bench" / "bench_proxy.py"), "--serve-upstream"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        port = int(_Lines(upstream.stdout).wait_for(r"upstream on (\d+)", "upstream").group(1))
        with tempfile.TemporaryDirectory() as tmp:
            cap = Path(tmp) / "rss.jsonl"
            proc, err, url = start_proxy(f"http://127.0.0.1:{port}/mcp", cap)
            try:
                run(proc.pid, urlsplit(url).port, args, cap)
            finally:
                _stop(proc)
                err.rest()
                proc.stdout.close()
                proc.stderr.close()
    finally:
        upstream.kill()
        upstream.wait()


def run(pid: int, port: int, args, cap: Path) -> None:
    per = args.requests // args.connections
    total = per * args.connections
    done, lock = [0], threading.Lock()
    threads = [
        threading.Thread(target=_client, args=(port, per, args.legacy, done, lock), daemon=True)
        for _ in range(args.connections)
    ]
    t0, cpu0 = time.monotonic(), _cpu(pid)
    for t in threads:
        t.start()
    step = max(total // args.samples, 1)
    samples: list[tuple[int, float]] = []
    mark = step
    while any(t.is_alive() for t in threads):
        time.sleep(0.05)
        with lock:
            n = done[0]
        if n >= mark:
            samples.append((n, rss_mb(pid)))
            print(f"{n:>9,} requests  proxy RSS {samples[-1][1]:7.1f} MB", flush=True)
            mark = (n // step + 1) * step
    samples.append((done[0], rss_mb(pid)))
    wall, cpu = time.monotonic() - t0, _cpu(pid) - cpu0
    mode = "legacy 2025-11-25 session-less" if args.legacy else "modern 2026-07-28"
    print(
        f"{done[0]:,} {mode} requests on {args.connections} keep-alive connections in {wall:.0f} s "
        f"(proxy CPU {cpu:.0f} s); capture {cap.stat().st_size / 1e6:.0f} MB"
    )
    half = [s for s in samples if s[0] >= total // 2]
    (n0, r0), (n1, r1) = half[0], half[-1]
    per_req = (r1 - r0) * 1024 * 1024 / max(n1 - n0, 1)
    print(
        f"RSS {samples[0][1]:.1f} MB at {samples[0][0]:,}, {r0:.1f} MB at {n0:,}, {r1:.1f} MB at {n1:,}: "
        f"{per_req:+.1f} bytes a request over the second half; peak {max(r for _, r in samples):.1f} MB"
    )


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, in clock ticks of 1/100 s


if __name__ == "__main__":
    main()
