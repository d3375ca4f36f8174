"""`mcptrace proxy` against the other MCP proxies, measured side by side in one run.

Run: python tests/bench/bench_proxy.py [--requests N] [--rounds R] [--streams S] [--first-event-ms D]

Peers come from PyPI, each in a venv of its own (never the product's .venv), e.g.:
    python3.13 -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install mcphawk==1.0.0
    python3.13 -m venv /tmp/benchvenv-recorder && /tmp/benchvenv-recorder/bin/pip install \
        mcp-recorder==0.5.0 'starlette<1'      (0.5.0 passes Starlette an argument 1.0 removed)
(--mcphawk / --mcp-recorder give other paths; a peer that is not installed is reported as such.)

An upstream on loopback, in a process of its own, answers MCP requests at once: a JSON-RPC result as `application/json`, or,
for a call of the tool "stream", an SSE stream whose first event comes D ms after the response
head (then a second one and the end). The same client (httpx2, keep-alive) talks to it:
  - directly;
  - through stock `mitmdump` in reverse mode (and again with `stream_large_bodies=1`, mitmproxy
    streaming every body itself), and through `mitmdump -s addons/mcp_capture.py`;
  - through `mcptrace proxy` (what users run), mcphawk 1.0.0 `proxy` and mcp-recorder 0.5.0 `record`;
  - through the master `mcptrace proxy` runs without the capture (tests/bench/proxy_floor.py): the
    floor set by mitmproxy's own forwarding, so what the capture adds shows apart from it.
Each configuration has a keep-alive connection of its own (one pool shared by all would open a new
connection at every switch, and measure connection setup instead of forwarding). Rounds are
interleaved so every configuration sees the same noise; medians and p90 are reported.

It prints:
  1. request latency (median, p90) of JSON request POSTs per configuration, as a ratio to direct
     (targets for mcptrace proxy: <= 5x direct, and below every peer);
  2. the delay of the first SSE event after the request, direct and proxied, and the difference
     (target: within 2 ms of direct): on the configuration's kept-alive connection (as a client
     of Streamable HTTP sends its POSTs), and on a new connection, which adds the proxy's setup of
     both connections (mitmproxy's client connection, then the upstream one, opened lazily). Stock
     mitmdump buffers SSE (mitmproxy#4469): its first event only arrives with the end of the stream;
  3. the addon's own CPU time per exchange, in-process (steady where the latencies above are noisy).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.proxy_peers import MITMDUMP, _Lines, _stop, free_port  # noqa: E402

REQUEST = (
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},'
    b'"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}'
)
STREAM_REQUEST = REQUEST.replace(b'"name":"echo"', b'"name":"stream"')  # answered with SSE
RESULT = (
    b'{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"hi"}],'
    b'"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bench","version":"1"}}}}'
)
FLOOR = "lean master, no capture"  # (not a peer: mitmproxy's floor under mcptrace proxy)
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "echo",
}


# -- the upstream: a minimal HTTP/1.1 server, so the proxy is what is measured ------------------------


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, first_event_s: float) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            length = next(
                (
                    int(v)
                    for k, _, v in (ln.partition(":") for ln in lines[1:])
                    if k.strip().lower() == "content-length"
                ),
                0,
            )
            body = await reader.readexactly(length) if length else b""
            # (by body, not path: mcphawk forwards every request to the one upstream URL)
            if path.startswith("/sse") or b'"name":"stream"' in body:
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
                    b"x-accel-buffering: no\r\ntransfer-encoding: chunked\r\n\r\n"
                )
                await writer.drain()
                await asyncio.sleep(first_event_s)
                for event in (
                    b'data: {"jsonrpc":"2.0","method":"notifications/progress","params":'
                    b'{"progressToken":1,"progress":1}}\n\n',
                    b"data: " + RESULT + b"\n\n",
                ):
                    writer.write(b"%x\r\n%s\r\n" % (len(event), event))
                    await writer.drain()
                    await asyncio.sleep(first_event_s)
                writer.write(b"0\r\n\r\n")
            else:
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                    % (len(RESULT), RESULT)
                )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def serve_upstream(first_event_s: float) -> None:
    server = await asyncio.start_server(lambda r, w: _serve(r, w, first_event_s), "127.0.0.1", 0)
    print(f"upstream on {server.sockets[0].getsockname()[1]}", flush=True)
    await server.serve_forever()


# -- the proxies ------------------------------------------------------------------------------------------


def start_floor(target: str, procs: list) -> tuple[str, int]:
    """Our lean master without the capture (proxy_floor.py) in front of TARGET: (its URL, its pid)."""
    p = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "bench" / "proxy_floor.py"), target],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    procs.append(p)
    port = int(_Lines(p.stdout).wait_for(r"listening on (\d+)", "proxy_floor").group(1))
    return f"http://127.0.0.1:{port}/mcp", p.pid


def start_proxies(upstream_port: int, tmp: Path, peers: dict[str, Path]) -> tuple[dict[str, str], list, dict]:
    """(URL to post to, processes, process id) of every configuration."""
    target = f"http://127.0.0.1:{upstream_port}"
    procs = []
    urls = {"direct": target + "/mcp"}
    pids: dict[str, int | None] = {"direct": None}
    for name, extra in (
        ("mitmdump", []),
        ("mitmdump streaming", ["--set", "stream_large_bodies=1"]),
        (
            "mitmdump + addon",
            [
                "-s",
                str(ROOT / "addons" / "mcp_capture.py"),
                "--set",
                f"mcptrace_output={tmp / 'addon.jsonl'}",
            ],
        ),
    ):
        port = free_port()
        p = subprocess.Popen(
            [
                str(MITMDUMP),
                "-q",
                "--mode",
                f"reverse:{target}",
                "--listen-host",
                "127.0.0.1",
                "--listen-port",
                str(port),
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(p)
        urls[name] = f"http://127.0.0.1:{port}/mcp"
        pids[name] = p.pid
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracer",
            "proxy",
            "--upstream",
            target + "/mcp",
            "--listen",
            "127.0.0.1:0",
            "-o",
            str(tmp / "proxy.jsonl"),
            "--no-ui",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    procs.append(p)
    urls["mcptrace proxy"] = (
        _Lines(p.stderr).wait_for(r"give the host this URL: (http://\S+)", "proxy").group(1)
    )
    pids["mcptrace proxy"] = p.pid
    urls[FLOOR], pids[FLOOR] = start_floor(target, procs)
    if peers["mcphawk"].exists():
        env = {**os.environ, "HOME": str(tmp / "mcphawk-home")}  # (its database: not the user's)
        port = free_port()
        p = subprocess.Popen(
            [str(peers["mcphawk"]), "proxy", "--target", target + "/mcp", "--port", str(port)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        procs.append(p)
        urls["mcphawk 1.0.0"] = (
            _Lines(p.stdout).wait_for(r"Point your client at: (http://\S+)", "mcphawk").group(1)
        )
        pids["mcphawk 1.0.0"] = p.pid
    if peers["mcp-recorder"].exists():
        port = free_port()
        p = subprocess.Popen(
            [
                str(peers["mcp-recorder"]),
                "record",
                "--target",
                target + "/mcp",
                "--port",
                str(port),
                "--output",
                str(tmp / "cassette.json"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(p)
        urls["mcp-recorder 0.5.0"] = f"http://127.0.0.1:{port}/mcp"
        pids["mcp-recorder 0.5.0"] = p.pid
    return urls, procs, pids


def cpu_s(pid: int | None) -> float:
    """CPU time (user + system) a process has used so far: steady where wall-clock latency is noisy."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _client() -> httpx2.AsyncClient:
    limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
    return httpx2.AsyncClient(limits=limits, timeout=60, trust_env=False)


async def _ready(clients: dict[str, httpx2.AsyncClient], urls: dict[str, str]) -> None:
    for name, url in urls.items():
        for _ in range(1200):  # bounded: mitmdump prints nothing with -q, so poll its port
            try:
                r = await clients[name].post(url, content=REQUEST, headers=HEADERS)
                if r.status_code == 200:
                    break
            except httpx2.TransportError:
                await asyncio.sleep(0.05)
        else:
            raise SystemExit(f"{url} never answered")


async def json_latencies(client, url: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        r = await client.post(url, content=REQUEST, headers=HEADERS)
        await r.aread()
        out.append(time.perf_counter() - t)
    return out


async def first_event_delay(client, url: str) -> float:
    t = time.perf_counter()
    delay = None
    async with client.stream("POST", url, content=STREAM_REQUEST, headers=HEADERS) as r:
        async for chunk in r.aiter_raw():  # read to the end: the connection is reused
            if delay is None and b"data:" in chunk:
                delay = time.perf_counter() - t
    if delay is None:
        raise RuntimeError("no event")
    return delay


async def first_event_new_connection(url: str) -> float:
    async with _client() as client:
        return await first_event_delay(client, url)


def _ms(xs: list[float], q: float = 0.5) -> float:
    xs = sorted(xs)
    return 1000 * xs[min(len(xs) - 1, int(q * len(xs)))]


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=60, help="JSON requests per configuration per round")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--streams", type=int, default=3, help="SSE streams per configuration per round")
    ap.add_argument(
        "--first-event-ms", type=float, default=150.0, help="upstream delay before each SSE event"
    )
    ap.add_argument("--mcphawk", type=Path, default=Path("/tmp/benchvenv/bin/mcphawk"))
    ap.add_argument("--mcp-recorder", type=Path, default=Path("/tmp/benchvenv-recorder/bin/mcp-recorder"))
    ap.add_argument("--serve-upstream", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_upstream:
        await serve_upstream(args.first_event_ms / 1000)
        return
    peers = {"mcphawk": args.mcphawk, "mcp-recorder": args.mcp_recorder}
    # The upstream runs in a process of its own, as a server does: in the client's process (and
    # event loop) "direct" would need no process to wake up at all, unlike every proxied path.
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve-upstream", "--first-event-ms", str(args.first_event_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    port = int(_Lines(server.stdout).wait_for(r"upstream on (\d+)", "upstream").group(1))
    with tempfile.TemporaryDirectory() as d:
        load_before = os.getloadavg()
        urls, procs, pids = start_proxies(port, Path(d), peers)
        clients = {name: _client() for name in urls}  # a kept-alive connection per configuration
        try:
            await _ready(clients, urls)
            lat = {name: [] for name in urls}
            first = {name: [] for name in urls}
            first_new = {name: [] for name in urls}
            cpu = dict.fromkeys(urls, 0.0)
            names = list(urls)
            for i in range(args.rounds):
                order = names[i % len(names) :] + names[: i % len(names)]  # each starts a round in turn
                for name in order:
                    await json_latencies(clients[name], urls[name], 20)  # warm the connection path
                    before = cpu_s(pids[name])
                    lat[name] += await json_latencies(clients[name], urls[name], args.requests)
                    cpu[name] += cpu_s(pids[name]) - before
                for name in order:
                    for _ in range(args.streams):
                        first[name].append(await first_event_delay(clients[name], urls[name]))
                for name in order:
                    first_new[name].append(await first_event_new_connection(urls[name]))
        finally:
            for client in clients.values():
                await client.aclose()
            for p in procs:
                _stop(p)
    server.kill()  # (it waits for no connection to close)
    server.wait()

    direct = statistics.median(lat["direct"])
    print(
        f"request latency, {args.rounds} x {args.requests} JSON POSTs per configuration (loopback, keep-alive)"
    )
    for name in urls:
        med = statistics.median(lat[name])
        own = f"   proxy CPU {1000 * cpu[name] / len(lat[name]):5.2f} ms/request" if pids[name] else ""
        print(
            f"  {name:<24} median {_ms(lat[name]):6.3f} ms   p90 {_ms(lat[name], 0.9):6.3f} ms   "
            f"{med / direct:5.2f}x direct{own}"
        )
    ours = statistics.median(lat["mcptrace proxy"]) / direct
    others = {
        n: statistics.median(lat[n]) / direct for n in urls if n not in ("direct", "mcptrace proxy", FLOOR)
    }
    best = min(others, key=others.get)
    print(
        f"  mcptrace proxy {ours:.2f}x direct (target <= 5x); best other proxy: {best} {others[best]:.2f}x "
        f"({'below every other' if ours < others[best] else 'NOT below every other'})"
    )
    print(f"  mitmdump + addon / stock mitmdump: {others['mitmdump + addon'] / others['mitmdump']:.2f}x")
    for peer, path in peers.items():
        if not path.exists():
            print(f"  ({peer} not measured: {path} is not installed; see the header of this script)")
    print(f"  (the {FLOOR!r} line is mitmproxy's own floor under mcptrace proxy, not a peer)")
    for what, delays in (
        (f"on the kept-alive connection, {args.rounds} x {args.streams} streams each", first),
        (f"on a new connection, {args.rounds} streams each", first_new),
    ):
        print(f"\nfirst SSE event {what} (the upstream sends it {args.first_event_ms:.0f} ms after the head)")
        d_med, d_p90 = _ms(delays["direct"]), _ms(delays["direct"], 0.9)
        for name in urls:
            med, p90 = _ms(delays[name]), _ms(delays[name], 0.9)
            print(
                f"  {name:<24} median {med:7.2f} ms  p90 {p90:7.2f} ms   added: median {med - d_med:+7.2f} ms"
                f"  p90 {p90 - d_p90:+7.2f} ms"
            )
    print(
        "  (target for mcptrace proxy: within 2 ms of direct; stock mitmdump buffers SSE, mitmproxy#4469;\n"
        "   'mitmdump streaming' is mitmproxy streaming every body itself, without the addon)"
    )
    load_after = os.getloadavg()
    print(
        f"\nload average (1, 5, 15 min): {' '.join(f'{x:.1f}' for x in load_before)} before, "
        f"{' '.join(f'{x:.1f}' for x in load_after)} after"
    )


def addon_cpu(n: int = 2000) -> None:
    """The addon's own work per exchange, in-process (no network, so no noise from other processes):
    mitmproxy's hooks called as mitmproxy calls them, on a JSON request POST and its JSON answer."""
    import warnings

    warnings.simplefilter("ignore")  # mitmproxy's addon imports warn about pyasn1 names
    from mitmproxy.test import taddons

    from addons.mcp_capture import McpCapture
    from tests.addon_helpers import exchange, post

    hdrs = tuple((k.encode(), v.encode()) for k, v in HEADERS.items())
    print(f"\naddon work per exchange (request + JSON answer, in-process, {n} exchanges)")
    for annotate in (False, True):
        with tempfile.TemporaryDirectory() as d:
            addon = McpCapture()
            with taddons.context(addon) as tctx:
                tctx.configure(addon, mcptrace_output=str(Path(d) / "cpu.jsonl"), mcptrace_annotate=annotate)
                flows = [post(REQUEST, resp=RESULT, headers=hdrs) for _ in range(n + 100)]
                for f in flows[:100]:
                    exchange(addon, f)
                t = time.perf_counter()
                for f in flows[100:]:
                    exchange(addon, f)
                per = (time.perf_counter() - t) / n * 1e6
                addon.done()
        what = (
            "capture + live analysis for annotations (mitmdump -s default)"
            if annotate
            else "capture only (mcptrace proxy)"
        )
        print(f"  {what:<62} {per:7.1f} us")


if __name__ == "__main__":
    asyncio.run(main())
    if "--serve-upstream" not in sys.argv:
        addon_cpu()
