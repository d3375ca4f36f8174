"""`mcptrace wrap` on each host's real file shape in a fake home: the host, starting the wrapped entry
exactly as written, gets the server through the tee and a capture appears; `unwrap` gives back the
original bytes."""

from __future__ import annotations

import re

import pytest

from tests.wrap_support import HOST_FILES, captured_methods, entry, home, start_like_the_host, write_host_file
from tracer.cli import main
from tracer.hosts.hosts import config_files

__all__ = ["home"]  # the fixture, imported for pytest


@pytest.mark.parametrize("host", sorted(HOST_FILES))
def test_wrap_puts_the_tee_in_front_and_the_host_s_start_of_it_is_captured_then_unwrap_restores_the_bytes(
    home, host, capsys
):
    path, original = write_host_file(home, host)
    assert [p for p, _ in config_files(host)] == [path]  # found at its per-OS place without --config

    assert main(["wrap", "--host", host]) == 0
    out = capsys.readouterr().out
    assert "sdk: wrapped:" in out and "backup: " in out
    spec = entry(host, path, "sdk")
    assert spec["command"].endswith("/mcptrace")
    assert spec["args"][:4] == ["stdio", "--name", "sdk", "--"]

    assert "add" in start_like_the_host(spec)
    captures = sorted((home / ".local" / "state" / "mcptrace" / "captures").glob("*-sdk-*.jsonl"))
    assert len(captures) == 1
    assert "tools/list" in captured_methods(captures[0])

    assert main(["unwrap", "--host", host]) == 0
    assert "sdk: unwrapped" in capsys.readouterr().out
    assert path.read_bytes() == original


@pytest.mark.parametrize("host", sorted(HOST_FILES))
def test_wrap_changes_only_the_command_and_args_values(home, host, capsys):
    path, original = write_host_file(home, host)
    assert main(["wrap", "--host", host]) == 0
    capsys.readouterr()
    before, after = original.decode(), path.read_text()
    # Take the two edited values out of both texts: what is left (comments, other keys, other
    # servers, spacing) is identical.
    spec_args = re.compile(r'("args"\s*:\s*|args = )\[[^\]]*\]')
    spec_cmd = re.compile(r'("command"\s*:\s*|command = )"[^"]*"')
    strip = lambda t: spec_cmd.sub("C", spec_args.sub("A", t))  # noqa: E731
    assert strip(after) == strip(before)
    assert original.decode().count("//") == after.count("//")


def test_a_project_level_file_is_found_beside_the_user_one(home, capsys):
    user, _ = write_host_file(home, "cursor")
    project = home / "project" / ".cursor" / "mcp.json"
    project.parent.mkdir()
    project.write_text('{"mcpServers": {"local": {"command": "node", "args": ["/srv/index.js"]}}}\n')
    assert config_files("cursor") == [(user, "user"), (project, "project")]
    assert main(["wrap", "--host", "cursor", "local"]) == 0
    assert '"--", "node", "/srv/index.js"]' in project.read_text()
    assert '"stdio"' not in user.read_text()  # only the server asked for


def test_claude_code_local_scope_servers_under_projects_are_wrapped_too(home, capsys):
    path = home / ".claude.json"
    path.write_text(
        '{"projects": {"/home/me/app": {"mcpServers": {"db": {"type": "stdio", '
        '"command": "/usr/bin/db-mcp", "args": []}}}}}'
    )
    original = path.read_bytes()
    assert main(["wrap", "--host", "claude-code"]) == 0
    assert '"args": ["stdio", "--name", "db", "--", "/usr/bin/db-mcp"]' in path.read_text()
    assert main(["unwrap", "--host", "claude-code"]) == 0
    assert path.read_bytes() == original
