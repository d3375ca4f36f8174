"""`mcptrace lint`'s exit code tells a CI step whose fault a failure is: 1 for findings (the
traffic's), 3 for an input read only in part (the recording's: a broken or torn line, a HAR cut
short), 2 for usage and unreadable input; `--fail-on never` is a report for its own sake."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.tracer.cli.test_lint_cli import GOOD, _capture
from tracer.cli import main

UNKNOWN_ID = ("s2c", {"jsonrpc": "2.0", "id": 99, "result": {}})  # an answer to no request: an error


def _damaged(path, messages) -> str:
    _capture(path, messages)
    lines = path.read_bytes().splitlines()
    lines.insert(3, b"\x00garbage")
    path.write_bytes(b"\n".join(lines) + b"\n" + b'{"type":"message","se')  # (and a torn last line)
    return str(path)


@pytest.mark.parametrize(
    ("fail_on", "damaged", "finding", "code"),
    [
        ("error", False, False, 0),
        ("error", False, True, 1),
        ("error", True, False, 3),
        ("error", True, True, 1),  # (findings first: the run fails either way; both are reported)
        ("warning", True, False, 3),
        ("info", True, True, 1),
        ("never", True, True, 0),
        ("never", True, False, 0),
        ("never", False, True, 0),
    ],
)
def test_lint_exits_1_for_findings_3_for_a_capture_read_in_part_and_0_with_fail_on_never(
    tmp_path, capsys, fail_on, damaged, finding, code
):
    messages = [*GOOD, UNKNOWN_ID] if finding else GOOD
    path = _damaged(tmp_path / "c.jsonl", messages) if damaged else _capture(tmp_path / "c.jsonl", messages)
    assert main(["lint", "--no-config", "--fail-on", fail_on, "--format", "json", path]) == code
    report = json.loads(capsys.readouterr().out)
    assert len(report["problems"]) == (2 if damaged else 0)  # (the report says what was not read)
    assert bool(report["findings"]) == finding


def test_a_capture_read_in_part_exits_3_from_the_console_script_with_the_problems_on_stdout(tmp_path):
    path = _damaged(tmp_path / "c.jsonl", GOOD)
    done = subprocess.run(
        [sys.executable, "-m", "tracer", "lint", "--no-config", path],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    assert f"{path}:4: capture problem: broken capture record" in done.stdout
    assert "Traceback" not in done.stderr


def test_the_lint_help_says_what_each_exit_code_means(capsys):
    with pytest.raises(SystemExit):
        main(["lint", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit 3 when an input was read only in part" in text and "never: always 0" in text
