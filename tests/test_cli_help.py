"""`mcptrace --help` and every subcommand's `--help` show what it does with an example."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tracer.cli import COMMANDS, OPTIONAL_COMMANDS, main

ALL = COMMANDS + OPTIONAL_COMMANDS


def test_top_level_help_lists_every_subcommand_and_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in ALL:
        assert f"    {name}" in out, name
    assert "examples:" in out


@pytest.mark.parametrize("name", ALL)
def test_each_subcommand_help_shows_an_example(name, capsys):
    with pytest.raises(SystemExit) as exc:
        main([name, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "example:" in out and f"mcptrace {name}" in out.split("example:", 1)[1]


def test_an_unknown_subcommand_is_one_line_on_stderr_and_exit_2():
    p = subprocess.run([sys.executable, "-m", "tracer", "frobnicate"], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
