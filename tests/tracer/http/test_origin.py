"""MCP706 judges `Origin` against the address the server was really reached at, recorded by the HTTP
door (the proxy's server connection; a HAR's serverIPAddress), not against `Host`: a rebinding
attack puts the attacker's name in both."""

from __future__ import annotations

import json

import pytest

from tests.tracer.inputs.test_har_import import INIT, INIT_RESULT, entry, har
from tracer.analyser import analyse_all
from tracer.inputs import open_input
from tracer.model import Record


def _rules(path) -> list[str]:
    recs = [r for r in open_input(str(path)).records if isinstance(r, Record)]
    msgs, ends = analyse_all(recs)
    return [f.rule for m in msgs for f in m.findings] + [f.rule for f in ends]


@pytest.mark.parametrize(("reached", "flagged"), [("127.0.0.1", True), ("::1", True), ("203.0.113.7", False)])
def test_an_origin_matching_the_host_is_foreign_when_the_server_was_reached_at_loopback(
    tmp_path, reached, flagged
):
    e = entry(
        "2026-11-29T10:00:00.000Z",
        "POST",
        INIT,
        200,
        [["content-type", "application/json"]],
        {"size": 10, "mimeType": "application/json", "text": json.dumps(INIT_RESULT)},
        req_headers=[["origin", "https://mcp.example.com"]],
        serverIPAddress=reached,
    )
    path = tmp_path / "rebind.har"
    path.write_text(json.dumps(har([e])))
    assert ("MCP706" in _rules(path)) is flagged


def test_a_server_address_of_the_wrong_type_in_a_har_is_ignored(tmp_path):
    e = entry(
        "2026-11-29T10:00:00.000Z",
        "POST",
        INIT,
        200,
        [["content-type", "application/json"]],
        {"size": 10, "mimeType": "application/json", "text": json.dumps(INIT_RESULT)},
        req_headers=[["origin", "https://mcp.example.com"]],
        serverIPAddress={"ip": "127.0.0.1"},
    )
    path = tmp_path / "odd.har"
    path.write_text(json.dumps(har([e])))
    assert "MCP706" not in _rules(path)
