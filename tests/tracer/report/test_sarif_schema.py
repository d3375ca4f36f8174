"""`mcptrace lint --format sarif` validates against the official SARIF 2.1.0 JSON schema.

The schema comes from npm (`@microsoft/jest-sarif` ships it), fetched into `.ci/node/sarif-2.1.0.json`
on first use (tests/node_peers.py); without npm there is no copy of the official schema to check
against, and the test says so as its skip reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tests.node_peers import npm_file
from tracer.capture import CaptureWriter, header_record
from tracer.cli import main
from tracer.model import Direction, Record, RecordType


def _capture(path: Path) -> str:
    with CaptureWriter(path, header_record("stdio")) as w:
        for d, raw in [
            ("c2s", b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'),
            ("s2c", b'{"jsonrpc":"2.0","id":2,"result":{}}'),
            ("c2s", b"{not json"),
            ("c2s", b'{"jsonrpc":"2.0","id":null,"method":"rpc.x","params":[1]}'),
        ]:
            w.write(Record(RecordType.MESSAGE, dir=Direction(d), raw=raw, conn="c1", transport="http"))
    with open(path, "ab") as fh:  # a broken line and a torn last line become tool notifications
        fh.write(b'\x00broken\n{"type":"mess')
    return str(path)


def test_sarif_report_validates_against_the_official_sarif_2_1_0_schema(tmp_path, capsys):
    path = npm_file("@microsoft/jest-sarif", "lib/schemas/sarif-2.1.0-rtm.5.json", "sarif-2.1.0.json")
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert main(["lint", "--format", "sarif", "--fail-on", "never", _capture(tmp_path / "c.jsonl")]) == 0
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validators.validator_for(schema)(schema).validate(doc)
    run = doc["runs"][0]
    assert len(run["results"]) >= 4
    assert {r["ruleId"] for r in run["results"]} >= {"MCP101", "MCP203"}
    assert len(run["invocations"][0]["toolExecutionNotifications"]) == 2
