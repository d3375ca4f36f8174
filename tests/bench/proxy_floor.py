"""The master `mcptrace proxy` runs (addons/lean.py, reverse mode, lazy upstream connections, SSE
streamed) without the capture addon: the floor bench_proxy.py measures mitmproxy's own forwarding
against, so what the capture adds and what mitmproxy costs are told apart in one run.

Run: python tests/bench/proxy_floor.py UPSTREAM_ORIGIN   (prints "listening on PORT", Ctrl-C stops)
"""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mitmproxy import options

from addons.lean import LeanMaster, needed_addons
from tracer.http.headers import is_sse


class StreamSse:
    """What the capture does to a flow's forwarding, and nothing else: SSE answers stream."""

    def responseheaders(self, flow) -> None:
        if flow.response is not None and is_sse(flow.response.headers.get("content-type")):
            flow.response.stream = True


class Ready:
    def __init__(self, master: LeanMaster) -> None:
        self.master = master

    def running(self) -> None:
        port = self.master.addons.get("proxyserver").listen_addrs()[0][1]
        print(f"listening on {port}", flush=True)


async def main(upstream: str) -> None:
    modes = [f"reverse:{upstream}"]
    opts = options.Options(mode=modes, listen_host="127.0.0.1", listen_port=0)
    m = LeanMaster(opts)
    m.addons.add(*needed_addons(modes), StreamSse(), Ready(m))
    opts.update(connection_strategy="lazy")  # (as `mcptrace proxy --upstream` runs)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, m.shutdown)
    await m.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
