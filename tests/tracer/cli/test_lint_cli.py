"""`mcptrace lint` as a user runs it: reports, exit codes, and bad input that never crashes it."""

from __future__ import annotations

import json
import subprocess
import sys

import orjson

from tracer.capture import CaptureWriter, header_record
from tracer.cli import main
from tracer.model import Direction, Record, RecordType

GOOD = [
    (
        "c2s",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            },
        },
    ),
    (
        "s2c",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "s", "version": "1"},
            },
        },
    ),
    ("c2s", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ("c2s", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    ("s2c", {"jsonrpc": "2.0", "id": 2, "result": {"tools": []}}),
]


def _capture(path, messages):
    with CaptureWriter(path, header_record("stdio")) as w:
        for d, obj in messages:
            raw = obj if isinstance(obj, bytes) else orjson.dumps(obj)
            w.write(Record(RecordType.MESSAGE, dir=Direction(d), raw=raw, conn="c1"))
    return str(path)


def test_clean_capture_exits_0_and_says_so(tmp_path, capsys):
    path = _capture(tmp_path / "good.jsonl", GOOD)
    assert main(["lint", path]) == 0
    out = capsys.readouterr().out
    assert "5 messages in 1 file(s) (legacy 5); 0 errors, 0 warnings" in out


def test_findings_print_path_line_rule_severity_and_exit_1(tmp_path, capsys):
    bad = [*GOOD, ("s2c", {"jsonrpc": "2.0", "id": 99, "result": {}})]
    path = _capture(tmp_path / "bad.jsonl", bad)
    assert main(["lint", path]) == 1
    out = capsys.readouterr().out
    assert f"{path}:7: MCP203 [error] id 99 matches no request" in out
    assert "MCP203 response-id-unknown" in out  # the summary by rule


def test_fail_on_threshold_and_ignore_change_the_exit_code(tmp_path, capsys):
    bad = [*GOOD, ("s2c", {"jsonrpc": "2.0", "id": 99, "result": {}})]
    path = _capture(tmp_path / "bad.jsonl", bad)
    assert main(["lint", "--ignore", "MCP203", path]) == 0
    assert main(["lint", "--fail-on", "never", path]) == 0
    assert main(["lint", "--select", "MCP1", path]) == 0


def test_unknown_rule_ids_are_a_one_line_usage_error(tmp_path, capsys):
    path = _capture(tmp_path / "good.jsonl", GOOD)
    assert main(["lint", "--select", "MCP999", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MCP999" in err


def test_json_report_is_parseable_and_complete(tmp_path, capsys):
    bad = [*GOOD, ("c2s", b"{oops")]
    path = _capture(tmp_path / "bad.jsonl", bad)
    assert main(["lint", "--format", "json", path]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["messages"] == 6
    assert [f["rule"] for f in doc["findings"]] == [
        "MCP801"
    ]  # stdio: a stray line is explained by the framing rule
    assert doc["findings"][0]["line"] == 7 and doc["findings"][0]["severity"] == "error"


def test_sarif_report_has_results_with_locations_and_the_rule_list(tmp_path, capsys):
    bad = [*GOOD, ("c2s", b"{oops")]
    path = _capture(tmp_path / "bad.jsonl", bad)
    main(["lint", "--format", "sarif", path])
    doc = json.loads(capsys.readouterr().out)
    run = doc["runs"][0]
    assert doc["version"] == "2.1.0"
    res = run["results"][0]
    assert res["ruleId"] == "MCP801" and res["level"] == "error"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 7
    assert any(r["id"] == "MCP801" for r in run["tool"]["driver"]["rules"])


def test_unreadable_input_is_exit_2_with_one_line_and_no_traceback(tmp_path):
    noise = tmp_path / "noise.bin"
    noise.write_bytes(bytes(range(256)) * 10)
    for args in (["lint", str(tmp_path / "missing.jsonl")], ["lint", str(noise)], ["lint", str(tmp_path)]):
        p = subprocess.run([sys.executable, "-m", "tracer", *args], capture_output=True, text=True)
        assert p.returncode == 2, p.stderr
        assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
        assert p.stdout == ""


def test_broken_capture_lines_are_reported_and_the_rest_is_linted(tmp_path, capsys):
    path = tmp_path / "damaged.jsonl"
    _capture(path, GOOD)
    data = path.read_bytes().splitlines()
    data.insert(3, b"\x00garbage")
    path.write_bytes(b"\n".join(data) + b"\n" + b'{"type":"message","se')
    assert main(["lint", str(path)]) == 3  # (read in part, no finding: exit 3)
    out = capsys.readouterr().out
    assert f"{path}:4: capture problem: broken capture record" in out
    assert f"{path}:8: capture problem: torn last line" in out
    assert "5 messages in 1 file(s)" in out


def test_deeply_nested_and_random_messages_are_findings_not_crashes(tmp_path, capsys):
    deep = b"[" * 200_000 + b"]" * 200_000
    path = _capture(tmp_path / "nasty.jsonl", [*GOOD, ("c2s", deep), ("s2c", bytes(range(256)))])
    assert main(["lint", "--format", "json", path]) == 1
    rules = [f["rule"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert rules == ["MCP801", "MCP801"]


def test_a_selection_that_leaves_no_rule_is_a_usage_error_not_a_silent_pass(tmp_path, capsys):
    # `--select "$RULES"` with an empty variable, or an ignore that takes back the whole select:
    # linting with no rule would "pass" a capture it never checked
    path = _capture(tmp_path / "bad.jsonl", [*GOOD, ("s2c", {"jsonrpc": "2.0", "id": 99, "result": {}})])
    for flags in (["--select", ",,,"], ["--select", "MCP2", "--ignore", "MCP2"]):
        assert main(["lint", "--no-config", *flags, path]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "leaves no rule to run" in err


def test_a_full_disk_under_the_report_is_one_line_and_exit_2_not_an_internal_error(tmp_path):
    path = _capture(tmp_path / "good.jsonl", GOOD)
    for args in (
        ["lint", "-f", "sarif", "-o", "/dev/full", path],
        ["export", "-f", "otlp-json", "-o", "/dev/full", path],
    ):
        p = subprocess.run(
            [sys.executable, "-m", "tracer", *args], capture_output=True, text=True, timeout=120
        )
        assert (p.returncode, p.stderr) == (2, "mcptrace: error: No space left on device\n")
    with open("/dev/full", "w") as full:  # the report on stdout, as `mcptrace lint x > /dev/full`
        p = subprocess.run(
            [sys.executable, "-m", "tracer", "lint", path], stdout=full, stderr=subprocess.PIPE, text=True
        )
    assert (p.returncode, p.stderr) == (2, "mcptrace: error: No space left on device\n")
