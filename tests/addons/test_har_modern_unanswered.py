"""A HAR of concurrent modern SDK clients whose requests go unanswered, written by a real HAR
writer: mitmproxy's `hardump` (stock mitmdump as a reverse proxy, no `connection` ids), in front of
the official SDK server with `stateless_http=True`, and the flow file (`-w`) of the same traffic.
Stock mitmdump buffers the slow tool's progress stream, so every client gives up on its
`tools/call` id 13 (its `cancel_slow` step fails): the HAR writes each as 200 with an empty body
and no `_error`, the flow file as "Client disconnected.". Before, the exchanges did not overlap,
so they shared the HAR's modern connection, where id 13 stayed pending: the next client's id 13
was read as a reused id and progress token (MCP202, MCP511), each stream as ended by the server
without its response (MCP708) and the last ids 13 as never answered (MCP211). The flow file gave
none of them; now the HAR gives what it gives."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.proxy_peers import lint_findings, mitmdump
from tests.sdk_peers import BOUND_S, REPO, SDK_CLIENT, serve_http, server_cmd

CLIENTS = 4


def _capture(tmp_path):
    har, flows = tmp_path / "modern.har", tmp_path / "modern.mitm"
    server = serve_http(server_cmd("--http", "--port", "0", "--stateless"), "the SDK stateless HTTP server")
    with server as url:
        origin = url.rsplit("/", 1)[0]
        with mitmdump("--mode", f"reverse:{origin}", "-w", str(flows), "--set", f"hardump={har}") as port:
            url = f"http://127.0.0.1:{port}/mcp"
            argv = [sys.executable, str(SDK_CLIENT), "--era", "modern", "--url", url]
            procs = [
                subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                for _ in range(CLIENTS)
            ]
            try:
                for proc in procs:
                    proc.communicate(timeout=BOUND_S)  # (each fails its cancel_slow step: see above)
            finally:
                for proc in procs:
                    if proc.poll() is None:
                        proc.kill()
                        proc.communicate()
    return har, flows


def test_a_mitmproxy_har_of_concurrent_modern_clients_with_unanswered_requests_finds_what_its_flow_file_finds(
    tmp_path,
):
    har, flows = _capture(tmp_path)
    entries = json.loads(har.read_text())["log"]["entries"]
    unanswered = [
        e
        for e in entries
        if '"id":13' in e["request"].get("postData", {}).get("text", "")
        and e["response"]["status"] == 200
        and e["response"]["content"].get("text", "") == ""
    ]
    assert len(unanswered) == CLIENTS  # the case itself: every client's id 13, 200 with an empty body
    in_har = sorted(f.rule for f in lint_findings(har))
    in_flows = sorted(f.rule for f in lint_findings(flows))
    assert in_har == in_flows
    assert not {"MCP202", "MCP511", "MCP708", "MCP211"} & set(in_har)
