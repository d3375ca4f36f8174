"""`mcptrace doctor`: every host config found, each server's state, and what would stop a capture."""

from __future__ import annotations

import pytest

from tests.wrap_support import entry, home, start_like_the_host, write_host_file
from tracer.cli import main

__all__ = ["home"]


def doctor(capsys, *args: str) -> str:
    assert main(["doctor", *args]) == 0
    return capsys.readouterr().out


def test_doctor_lists_each_host_file_and_server_wrapped_or_not(home, capsys):
    desktop, _ = write_host_file(home, "claude-desktop")
    write_host_file(home, "codex")
    assert main(["wrap", "--host", "claude-desktop"]) == 0
    capsys.readouterr()
    out = doctor(capsys)
    assert f"Claude Desktop (claude-desktop): {desktop} [user]" in out
    assert "  sdk: stdio, WRAPPED (captured by mcptrace): " in out
    assert "Codex (codex): " in out and "  sdk: stdio, not wrapped: " in out
    assert (
        "  docs: remote https://mcp.example.com/mcp; to capture it: mcptrace wrap --host codex --remote docs"
        in out
    )
    assert "(mcptrace lint reads these logs, e.g. mcptrace lint ~/Library/Logs/Claude/mcp*.log)" in out
    assert "Cursor" not in out  # no file, not listed


def test_doctor_flags_commands_missing_from_path_and_relative_paths(home, capsys):
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(
        '{"mcpServers": {"local": {"command": "no-such-mcp-server-xyz", "args": ["./build/index.js"]},'
        '"abs": {"command": "/bin/sh", "args": ["-c", "true"]}}}'
    )
    out = doctor(capsys, "--host", "cursor")
    assert "command: no-such-mcp-server-xyz NOT on PATH" in out
    assert (
        "relative path(s) ./build/index.js: the host starts the server from its own working directory" in out
    )
    assert "command: /bin/sh exists" in out
    only = doctor(capsys, "--host", "cursor", "abs")
    assert "  abs: stdio" in only and "  local:" not in only


def test_doctor_shows_the_recent_captures_of_a_wrapped_server(home, capsys):
    path, _ = write_host_file(home, "windsurf")
    assert main(["wrap", "--host", "windsurf", "sdk"]) == 0
    capsys.readouterr()
    assert "captures: none yet" in doctor(capsys)
    start_like_the_host(entry("windsurf", path, "sdk"))
    out = doctor(capsys)
    assert "    captures: 1, newest " in out and "-sdk-" in out


def test_doctor_with_no_host_config_says_where_it_looked(home, capsys):
    out = doctor(capsys)
    assert "no host config found; looked for:" in out
    assert str(home / ".codex" / "config.toml") in out
    assert str(home / ".config" / "Claude" / "claude_desktop_config.json") in out


@pytest.mark.parametrize(
    ("platform", "expected"),
    [
        ("darwin", "Library/Application Support/Claude/claude_desktop_config.json"),
        ("win32", "AppData/Roaming/Claude/claude_desktop_config.json"),
        ("linux", ".config/Claude/claude_desktop_config.json"),
    ],
)
def test_claude_desktop_config_location_per_os(home, platform, expected):
    from tracer.hosts.hosts import user_files

    assert user_files("claude-desktop", platform) == [home / expected]


def test_a_config_that_does_not_parse_is_reported_not_fatal(home, capsys):
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text('{"mcpServers": {"a": }')
    out = doctor(capsys)
    assert "cannot read it: " in out and "not valid JSON" in out
    assert "no host config found" not in out
