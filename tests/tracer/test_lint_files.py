"""Which file a lint result belongs to: findings about a capture as a whole name their file in every
report format, and a baseline judges only the files a run linted."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tests.cases import build_records
from tracer.capture import header_record, write_records
from tracer.cli import main

LIST = {"c2s": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}
LISTED = {"s2c": {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}}
# A server that outlived its stdin's EOF: MCP809, a finding about the process, not about a message.
OUTLIVED = [
    LIST,
    LISTED,
    {"event": {"event": "stdin-eof"}},
    {
        "event": {
            "event": "terminate",
            "signal": "SIGTERM",
            "reason": "no exit after stdin EOF",
            "after_ms": 3000,
        }
    },
    {"event": {"event": "exit", "code": 143, "signal": "SIGTERM"}},
]
UNKNOWN_ID = {"s2c": {"jsonrpc": "2.0", "id": 41, "result": {}}}  # MCP203 on a message


def capture(path, entries) -> str:
    path.unlink(missing_ok=True)  # (a writer appends a new session to an existing capture)
    write_records(str(path), header_record("stdio"), build_records(entries))
    return str(path)


def lint(capsys, *args) -> tuple[int, str, str]:
    code = main(["lint", "--no-progress", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def outlived(tmp_path):
    return capture(tmp_path / "outlived.jsonl", OUTLIVED)


def test_a_whole_capture_finding_names_its_file_in_text_and_github(outlived, capsys):
    _, out, _ = lint(capsys, outlived)
    assert f"{outlived}: MCP809 [info]" in out
    _, out, _ = lint(capsys, "--format", "github", outlived)
    assert f"file={outlived}" in next(line for line in out.splitlines() if "MCP809" in line)


def test_a_whole_capture_finding_names_its_file_in_json_sarif_and_junit(outlived, capsys):
    _, out, _ = lint(capsys, "--format", "json", outlived)
    assert [(f["rule"], f["file"]) for f in json.loads(out)["findings"]] == [("MCP809", outlived)]
    _, out, _ = lint(capsys, "--format", "sarif", outlived)
    result = json.loads(out)["runs"][0]["results"][0]
    assert result["ruleId"] == "MCP809"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("outlived.jsonl")
    _, out, _ = lint(capsys, "--format", "junit", outlived, "--fail-on", "info")
    suites = ET.fromstring(out).findall("testsuite")
    assert [s.get("name") for s in suites] == [outlived]


def test_a_baseline_used_on_some_of_its_files_calls_only_theirs_stale(tmp_path, capsys):
    base = tmp_path / "baseline.json"
    a = capture(tmp_path / "a.jsonl", [LIST, LISTED, UNKNOWN_ID])
    b = capture(tmp_path / "b.jsonl", [LIST, LISTED, UNKNOWN_ID])
    code, _, err = lint(capsys, "--write-baseline", base, a, b)
    assert code == 0 and "wrote 2 baseline entries" in err
    code, _, err = lint(capsys, "--baseline", base, a)  # b is not linted: nothing about it is stale
    assert code == 0
    assert "1 known finding(s) suppressed, 0 stale" in err and "stale baseline entry" not in err
    capture(tmp_path / "a.jsonl", [LIST, LISTED])  # a's finding is fixed: its entry is stale now
    code, _, err = lint(capsys, "--baseline", base, a)
    stale = [line for line in err.splitlines() if "stale baseline entry" in line]
    assert len(stale) == 1 and "a.jsonl" in stale[0], err
