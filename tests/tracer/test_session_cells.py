"""A session's compatibility cell follows what really happened: a rejected initialize opens no
legacy session, and a probe answered only at the HTTP level is a failed probe, not an unanswered one."""

from __future__ import annotations

from tests.cases import build_records, initialize
from tracer.analyser import Analyser

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
URL = "http://127.0.0.1:8765/mcp"
INIT = initialize(1, "c")


def _cell(entries, transport="stdio"):
    a = Analyser()
    for rec in build_records(entries, transport):
        a.feed(rec)
    a.finish()
    return a.session_cells["c1"]


def test_a_session_that_goes_on_modern_after_its_initialize_was_rejected_is_modern():
    assert (
        _cell(
            [
                {"c2s": INIT},
                {
                    "s2c": {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "error": {
                            "code": -32601,
                            "message": "Method not found",
                            "data": {"supported": ["2026-07-28"]},
                        },
                    }
                },
                {"c2s": {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": META}}},
                {"s2c": {"jsonrpc": "2.0", "id": 2, "result": {"resultType": "complete", "tools": []}}},
            ]
        )
        == "modern (2026-07-28; the server rejected an initialize)"
    )


def test_a_probe_answered_only_at_the_http_level_is_a_failed_probe_before_the_fallback():
    assert _cell(
        [
            {
                "c2s": {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": META}},
                "http": {
                    "method": "POST",
                    "url": URL,
                    "flow": "f1",
                    "req_headers": [["mcp-protocol-version", "2026-07-28"]],
                },
            },
            {
                "http_only": {
                    "method": "POST",
                    "url": URL,
                    "status": 400,
                    "flow": "f1",
                    "resp_headers": [["content-type", "text/plain"]],
                },
                "body": "Bad Request",
            },
            {
                "c2s": {**INIT, "id": 2},
                "http": {"method": "POST", "url": URL, "flow": "f2", "req_headers": []},
            },
            {
                "s2c": {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "serverInfo": {"name": "s", "version": "1"},
                    },
                },
                "http": {"method": "POST", "url": URL, "status": 200, "flow": "f2", "resp_headers": []},
            },
        ],
        transport="http",
    ) == ("dual-era: server/discover probe answered with error, fell back to initialize (legacy 2025-11-25)")
