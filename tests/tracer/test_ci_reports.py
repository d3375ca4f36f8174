"""CI-grade lint output: JUnit XML, GitHub Actions annotations, and baselines that survive edits."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tests.cases import LEGACY_HANDSHAKE, build_records
from tracer.capture import header_record, write_records
from tracer.cli import main

INIT = [
    *LEGACY_HANDSHAKE,
    {"c2s": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}},
    {"s2c": {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}},
]
UNKNOWN_ID = {"s2c": {"jsonrpc": "2.0", "id": 41, "result": {}}}  # MCP203 error
PING_PARAMS = {
    "c2s": {"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"echo": "x"}}
}  # MCP522 warning
PONG = {"s2c": {"jsonrpc": "2.0", "id": 7, "result": {}}}
CUSTOM = {"c2s": {"jsonrpc": "2.0", "method": "acme/hello\nworld"}}  # MCP209 info (a newline in the text)
LIST = {"c2s": {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}}
LISTED = {"s2c": {"jsonrpc": "2.0", "id": 3, "result": {"tools": []}}}


def capture(path, entries) -> str:
    path.unlink(missing_ok=True)  # these tests re-record a file: a writer would append a new session
    write_records(str(path), header_record("stdio"), build_records(entries))
    return str(path)


def lint(capsys, *args) -> tuple[int, str, str]:
    code = main(["lint", "--no-progress", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def faulty(tmp_path):
    return capture(tmp_path / "faulty.jsonl", [*INIT, UNKNOWN_ID, PING_PARAMS, PONG, CUSTOM])


def test_lint_offers_junit_and_github_formats(capsys):
    with pytest.raises(SystemExit):
        main(["lint", "--help"])
    out = capsys.readouterr().out
    assert "junit" in out and "github" in out and "--baseline" in out and "--write-baseline" in out


def test_junit_report_shows_each_finding_as_a_test_case_and_clean_files_as_passed(faulty, tmp_path, capsys):
    clean = capture(tmp_path / "clean.jsonl", [*INIT, LIST, LISTED])
    code, out, _ = lint(capsys, "--format", "junit", faulty, clean)
    assert code == 1
    root = ET.fromstring(out)
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    bad, good = suites[faulty], suites[clean]
    failures = {f.get("type"): f for f in bad.iter("failure")}
    assert set(failures) == {"error", "warning"}
    assert bad.get("failures") == "2" and root.get("failures") == "2"
    names = [c.get("name") for c in bad.iter("testcase")]
    assert any(n.startswith("MCP203 response-id-unknown") for n in names)
    info = next(c for c in bad.iter("testcase") if c.get("name").startswith("MCP209"))
    assert info.find("failure") is None and "acme/hello" in info.find("system-out").text
    assert [c.get("name") for c in good.iter("testcase")] == ["no findings"] and good.get("failures") == "0"


def test_junit_report_stays_well_formed_with_control_characters_in_traffic(tmp_path, capsys):
    path = capture(tmp_path / "ctl.jsonl", [{"c2s": {"jsonrpc": "2.0", "method": "acme/\u0001bell\u0007"}}])
    _, out, _ = lint(capsys, "--format", "junit", "--fail-on", "never", path)
    root = ET.fromstring(out)  # raises on an invalid XML character
    assert root.get("tests") == "1"


def test_github_annotations_carry_severity_file_line_and_escaped_text(faulty, capsys):
    code, out, _ = lint(capsys, "--format", "github", faulty)
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("::")]
    by_cmd = {line.split(" ", 1)[0]: line for line in lines}
    assert set(by_cmd) == {"::error", "::warning", "::notice"}
    err = by_cmd["::error"]
    assert f"file={faulty.replace(':', '%3A').replace(',', '%2C')},line=7," in err
    assert "title=MCP203 response-id-unknown::" in err
    notice = by_cmd["::notice"]
    assert "acme/hello%0Aworld" in notice and "\n" not in notice  # one annotation per line


def test_baseline_accepts_known_findings_and_survives_unrelated_edits(tmp_path, capsys):
    base = tmp_path / "baseline.json"
    first = capture(tmp_path / "s.jsonl", [*INIT, UNKNOWN_ID, PING_PARAMS, PONG])
    code, _, err = lint(capsys, "--write-baseline", base, first)
    assert code == 0 and "wrote 2 baseline entries" in err
    assert {e["rule"] for e in json.loads(base.read_text())["findings"]} == {"MCP203", "MCP522"}
    # Same traffic with other messages in front: every line and seq number moves.
    edited = capture(
        tmp_path / "s.jsonl",
        [
            *INIT,
            LIST,
            LISTED,
            LIST | {"c2s": {**LIST["c2s"], "id": 4}},
            {"s2c": {"jsonrpc": "2.0", "id": 4, "result": {"tools": []}}},
            UNKNOWN_ID,
            PING_PARAMS,
            PONG,
        ],
    )
    code, out, err = lint(capsys, "--format", "json", "--baseline", base, edited)
    assert code == 0, out
    assert json.loads(out)["findings"] == []
    assert "2 known finding(s) suppressed, 0 stale" in err


def test_baseline_still_reports_new_findings_and_lists_stale_entries(tmp_path, capsys):
    base = tmp_path / "baseline.json"
    path = capture(tmp_path / "s.jsonl", [*INIT, UNKNOWN_ID, PING_PARAMS, PONG])
    lint(capsys, "--write-baseline", base, path)
    # The ping is fixed, a new unknown id appears.
    capture(tmp_path / "s.jsonl", [*INIT, UNKNOWN_ID, {"s2c": {"jsonrpc": "2.0", "id": 99, "result": {}}}])
    code, out, err = lint(capsys, "--format", "json", "--baseline", base, path)
    found = json.loads(out)["findings"]
    assert code == 1
    assert [(f["rule"], f["seq"]) for f in found] == [("MCP203", 7)]
    stale = [line for line in err.splitlines() if "stale baseline entry" in line]
    assert len(stale) == 1 and "MCP522" in stale[0]


def test_identical_findings_are_counted_not_merged(tmp_path, capsys):
    base = tmp_path / "baseline.json"
    path = capture(tmp_path / "s.jsonl", [*INIT, UNKNOWN_ID])
    lint(capsys, "--write-baseline", base, path)
    capture(tmp_path / "s.jsonl", [*INIT, UNKNOWN_ID, UNKNOWN_ID])
    code, out, _ = lint(capsys, "--format", "json", "--baseline", base, path)
    assert code == 1 and len(json.loads(out)["findings"]) == 1


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        '{"tool": "other"}',
        '{"tool": "mcptrace", "baseline": 1, "findings": [{"rule": "MCP203"}]}',
    ],
)
def test_a_broken_baseline_is_a_one_line_usage_error(content, faulty, tmp_path, capsys):
    base = tmp_path / "baseline.json"
    base.write_text(content)
    code, out, err = lint(capsys, "--baseline", base, faulty)
    assert code == 2 and out == "" and err.count("\n") == 1 and "baseline" in err


def test_a_missing_baseline_is_a_usage_error(faulty, tmp_path, capsys):
    code, _, err = lint(capsys, "--baseline", tmp_path / "nope.json", faulty)
    assert code == 2 and err.count("\n") == 1
