"""`mcptrace view` on the command line: usage errors are one line and exit 2."""

from __future__ import annotations

import subprocess
import sys


def _view(*args, **kw):
    return subprocess.run([sys.executable, "-m", "tracer", "view", *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, **kw)


def test_a_missing_file_is_one_line_and_exit_2(tmp_path):
    p = _view(str(tmp_path / "nope.jsonl"))
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "no such file" in p.stderr


def test_without_a_terminal_the_viewer_points_to_lint(tmp_path):
    cap = tmp_path / "c.jsonl"
    cap.write_text('{"type":"header","format":"mcptrace","version":1}\n')
    p = _view(str(cap))
    assert p.returncode == 2
    assert "mcptrace lint" in p.stderr and p.stderr.count("\n") == 1


def test_view_is_listed_in_the_help_with_an_example():
    p = subprocess.run([sys.executable, "-m", "tracer", "view", "--help"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "--follow" in p.stdout and "example" in p.stdout
