"""Replay over HTTP puts values of the capture in request headers (the method in `Mcp-Method`, the
`_meta` protocol version in `MCP-Protocol-Version`, recorded `Mcp-Param-*` headers). A hostile
capture's value that no HTTP head can hold (a lone surrogate, a line break) is left out and said,
never a traceback, never a header it smuggles in."""

from __future__ import annotations

import json
import subprocess

from tests.replay_support import MCPTRACE
from tests.sdk_peers import BOUND_S, REPO, sdk_http_server

META = "io.modelcontextprotocol/protocolVersion"


def _capture(path) -> None:
    lines = [
        {"type": "header", "format": "mcptrace", "version": 1, "tool": "t", "t_ns": 1, "transport": "stdio"}
    ]
    texts = [
        # (a lone surrogate escape: valid JSON, no header value; before, a UnicodeEncodeError traceback)
        '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"%s":"\\udfff"}}}' % META,
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/list\r\nX-Smuggled: 1",
                "params": {"_meta": {META: "2026-07-28"}},
            }
        ),
    ]
    for n, text in enumerate(texts, 1):
        lines.append(
            {
                "type": "message",
                "seq": n,
                "t_ns": 1000 * n,
                "dir": "c2s",
                "transport": "stdio",
                "conn": "c",
                "text": text,
            }
        )
    path.write_text("".join(json.dumps(rec) + "\n" for rec in lines))


def test_a_capture_value_no_http_head_can_hold_is_left_out_and_said(tmp_path):
    cap, out = tmp_path / "hostile.jsonl", tmp_path / "new.jsonl"
    _capture(cap)
    with sdk_http_server() as url:
        run = subprocess.run(
            [*MCPTRACE, "replay", str(cap), "--url", url, "--timeout", "5", "-o", str(out)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=BOUND_S,
        )
    assert run.returncode in (0, 1), run.stderr
    assert "Traceback" not in run.stderr and "Error" not in run.stderr, run.stderr
    assert "'MCP-Protocol-Version' not sent" in run.stdout and "'Mcp-Method' not sent" in run.stdout
    sent = [json.loads(line) for line in out.read_bytes().splitlines() if b'"req_headers"' in line]
    first, second = ({h[0].lower() for h in r["http"]["req_headers"]} for r in sent)
    assert "mcp-protocol-version" not in first and "mcp-method" in first
    assert "mcp-method" not in second and "x-smuggled" not in second
