"""`mcptrace view` on the command line: usage errors are one line and exit 2."""

from __future__ import annotations

import subprocess
import sys


def _view(*args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "tracer", "view", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        **kw,
    )


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
    p = subprocess.run(
        [sys.executable, "-m", "tracer", "view", "--help"], capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 0 and "--follow" in p.stdout and "example" in p.stdout


def test_binary_garbage_empty_files_and_stdin_are_one_line_and_exit_2_like_lint(tmp_path):
    garbage = tmp_path / "noise.bin"
    garbage.write_bytes(bytes(range(256)) * 20)
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    for args, why in (
        ([str(garbage)], "not a recognised MCP capture"),
        ([str(empty)], "empty file"),
        (["-"], "not standard input"),
        (["/dev/stdin"], "not a regular file"),
    ):
        p = _view(*args)
        assert p.returncode == 2, p.stderr
        assert p.stderr.count("\n") == 1 and why in p.stderr and "Traceback" not in p.stderr
        assert "needs a terminal" not in p.stderr, "the input is judged before the screen"


def test_a_forced_format_that_reads_nothing_is_refused_before_the_screen(tmp_path):
    cap = tmp_path / "c.jsonl"
    cap.write_text(
        '{"type":"header","format":"mcptrace","version":1}\n'
        '{"type":"message","seq":1,"t_ns":1,"dir":"c2s","transport":"stdio","conn":"0",'
        '"text":"{\\"jsonrpc\\":\\"2.0\\",\\"id\\":1,\\"method\\":\\"ping\\"}"}\n'
    )
    p = _view("--input-format", "hostlog", str(cap))
    assert p.returncode == 2 and "read as hostlog, it holds no message" in p.stderr
    assert "--input-format capture" in p.stderr


def test_an_empty_file_with_follow_is_not_an_input_error(tmp_path):
    empty = tmp_path / "starting.jsonl"
    empty.write_bytes(b"")
    p = _view("--follow", str(empty))  # it would wait for the recorder; here only the terminal is missing
    assert p.returncode == 2 and "needs a terminal" in p.stderr
