"""Where captures go by default, how they are named, and what the header keeps of the command."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tracer.paths import captures_dir, default_capture_path, label_for_command, recent_captures, state_home
from tracer.redact import redact_argv


@pytest.mark.parametrize(
    ("argv", "label"),
    [
        (["python", "weather.py"], "weather"),
        (["python3.13", "-u", "servers/weather_server.py", "--port", "1"], "weather_server"),
        (["npx", "-y", "@modelcontextprotocol/server-everything"], "server-everything"),
        (["uvx", "mcp-server-git@1.2.0", "--repository", "."], "mcp-server-git"),
        (["uv", "run", "--with", "mcp", "srv.py"], "mcp"),
        (["/usr/local/bin/my-server", "--verbose"], "my-server"),
        (["node", "/opt/x/dist/index.js", "stdio"], "index"),
        (["docker", "run", "-i", "--rm", "mcp/fetch"], "fetch"),
        (["python", "-c", "x=1", "--token", "tok-1"], "python"),  # a credential never names the file
    ],
)
def test_capture_label_comes_from_what_the_command_runs(argv, label):
    assert label_for_command(argv) == label


def test_state_directory_follows_xdg_and_ignores_a_relative_value(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "s"))
    assert state_home() == tmp_path / "s"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/dir")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert state_home() == tmp_path / "home" / ".local" / "state"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert state_home() == tmp_path / "home" / ".local" / "state"


def test_default_capture_path_is_private_and_named_by_time_label_and_pid(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    path = default_capture_path("weather prod/1", now=0, pid=4242)
    assert path.parent == tmp_path / "mcptrace" / "captures" == captures_dir()
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert path.name.endswith("-weather-prod-1-4242.jsonl") and path.name[:8].isdigit()


def test_recent_captures_lists_the_newest_first(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    d = captures_dir()
    for i, name in enumerate(["a.jsonl", "b.jsonl", "notes.txt"]):
        (d / name).write_text("{}\n")
        os.utime(d / name, (1000 + i, 1000 + i))
    assert [p.name for p in recent_captures()] == ["b.jsonl", "a.jsonl"]


def test_credential_arguments_are_redacted_in_the_stored_command():
    argv = [
        "npx",
        "-y",
        "srv",
        "--api-key",
        "sk-1",
        "--token=t",
        "--author",
        "me",
        "GITHUB_TOKEN=ghp_x",
        "https://user:pw@example.com/mcp",
        "Authorization: Bearer abc",
        "--verbose",
    ]
    assert redact_argv(argv) == [
        "npx",
        "-y",
        "srv",
        "--api-key",
        "<redacted>",
        "--token=<redacted>",
        "--author",
        "me",
        "GITHUB_TOKEN=<redacted>",
        "https://user:<redacted>@example.com/mcp",
        "Authorization: Bearer <redacted>",
        "--verbose",
    ]


def test_the_tee_runs_its_server_whatever_the_project_config_nests(tmp_path):
    """A `[tool.mcptrace]` nested past the TOML parser is a warning on stderr, and the server runs
    as always (before: "internal error: RecursionError", exit 70, no server: the host's tool gone)."""
    repo = Path(__file__).resolve().parents[3]
    (tmp_path / "pyproject.toml").write_text(
        "[tool.mcptrace]\nselect = " + "[" * 50_000 + "]" * 50_000 + "\n"
    )
    ping = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'
    echo = [sys.executable, str(repo / "tests" / "servers" / "echo.py")]
    done = subprocess.run(
        [sys.executable, "-m", "tracer", "stdio", "-q", "-o", str(tmp_path / "c.jsonl"), "--", *echo],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(repo)},
        input=ping,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert b'"id":1' in done.stdout
    assert b"nested too deeply" in done.stderr and b"Traceback" not in done.stderr
