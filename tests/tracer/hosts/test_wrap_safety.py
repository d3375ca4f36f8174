"""`wrap` / `unwrap` never lose the user's config: backups, idempotence, concurrent saves, later edits,
bad files, remote servers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.proxy_peers import free_port
from tests.sdk_peers import sdk_http_server
from tests.wrap_support import SDK_SERVER, entry, home, write_host_file
from tracer.cli import main
from tracer.hosts.entries import load
from tracer.hosts.hosts import HOSTS
from tracer.hosts.wrap import ConcurrentEdit, wrap

__all__ = ["home"]


def test_a_backup_of_the_original_bytes_is_written_before_the_file_changes(home, capsys):
    _, original = write_host_file(home, "vscode")
    assert main(["wrap", "--host", "vscode"]) == 0
    backup = next(
        line.split("backup: ", 1)[1] for line in capsys.readouterr().out.splitlines() if "backup: " in line
    )
    with open(backup, "rb") as fh:
        assert fh.read() == original
    assert os.stat(backup).st_mode & 0o777 == 0o600  # configs hold API keys
    (ledger,) = (home / ".local" / "state" / "mcptrace" / "wrap").iterdir()  # what unwrap restores from
    assert ledger.stat().st_mode & 0o777 == 0o600


def test_wrapping_twice_changes_nothing_the_second_time(home, capsys):
    path, _ = write_host_file(home, "codex")
    assert main(["wrap", "--host", "codex"]) == 0
    once, mtime = path.read_bytes(), path.stat().st_mtime_ns
    capsys.readouterr()
    assert main(["wrap", "--host", "codex"]) == 0
    out = capsys.readouterr().out
    assert "sdk: already wrapped" in out and "backup" not in out
    assert (path.read_bytes(), path.stat().st_mtime_ns) == (once, mtime)


def test_a_file_saved_by_another_program_meanwhile_is_not_overwritten(home):
    path, _ = write_host_file(home, "claude-desktop")
    doc = load(path, HOSTS["claude-desktop"])  # mcptrace has read it...
    theirs = path.read_text().replace('"globalShortcut": ""', '"globalShortcut": "Alt+Space"')
    path.write_text(theirs)  # ...and Claude Desktop saves its settings before mcptrace writes
    with pytest.raises(ConcurrentEdit, match="run the command again"):
        wrap(doc)
    assert path.read_text() == theirs


def test_unwrap_keeps_what_the_user_changed_elsewhere_in_the_file(home, capsys):
    path, original = write_host_file(home, "zed")
    assert main(["wrap", "--host", "zed"]) == 0
    edited = path.read_text().replace('"ui_font_size": 16', '"ui_font_size": 18')
    path.write_text(edited)
    assert main(["unwrap", "--host", "zed"]) == 0
    assert path.read_bytes() == original.replace(b'"ui_font_size": 16', b'"ui_font_size": 18')


def test_an_entry_edited_after_wrap_is_unwrapped_from_its_arguments(home, capsys):
    path, _ = write_host_file(home, "cursor")
    assert main(["wrap", "--host", "cursor"]) == 0
    spec = entry("cursor", path, "sdk")
    path.write_text(path.read_text().replace('"--", ', '"--", "nice", '))
    capsys.readouterr()
    assert main(["unwrap", "--host", "cursor"]) == 0
    assert "unwrapped from its arguments" in capsys.readouterr().out
    again = entry("cursor", path, "sdk")
    assert [again["command"], *again["args"]] == ["nice", *spec["args"][4:]]


def test_an_entry_without_args_gets_them_and_unwrap_takes_them_away(home, capsys):
    path = home / ".codeium" / "windsurf" / "mcp_config.json"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"mcpServers": {"solo": {"command": "/opt/solo-mcp"}}}')
    assert main(["wrap", "--host", "windsurf"]) == 0
    assert entry("windsurf", path, "solo")["args"] == ["stdio", "--name", "solo", "--", "/opt/solo-mcp"]
    assert main(["unwrap", "--host", "windsurf"]) == 0
    assert path.read_bytes() == b'{"mcpServers": {"solo": {"command": "/opt/solo-mcp"}}}'


def test_codex_toml_without_args_and_without_a_final_newline(home, capsys):
    path = home / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    text = 'model = "o3"\n\n[mcp_servers.solo]\ncommand = "/opt/solo-mcp"'
    path.write_text(text)
    assert main(["wrap", "--host", "codex"]) == 0
    assert entry("codex", path, "solo")["args"] == ["stdio", "--name", "solo", "--", "/opt/solo-mcp"]
    assert main(["unwrap", "--host", "codex"]) == 0
    assert path.read_text() == text


def test_dry_run_writes_nothing(home, capsys):
    path, original = write_host_file(home, "gemini")
    assert main(["wrap", "--host", "gemini", "--dry-run"]) == 0
    assert "dry run" in capsys.readouterr().out
    assert path.read_bytes() == original
    assert not (home / ".local" / "state" / "mcptrace" / "backups").exists()


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("vscode", ["wrap", "--host", "vscode", "nosuch"], "no server named nosuch"),
        ("broken", ["wrap", "--host", "cursor"], "not valid JSON: line 1 column 17"),
        ("none", ["wrap", "--host", "zed"], "no config file of --host zed found"),
        ("none", ["wrap", "--config", "whatever.json"], "cannot tell which host"),
        ("toml", ["wrap", "--host", "codex"], "not valid TOML"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(home, capsys, setup, args, message):
    if setup == "vscode":
        write_host_file(home, "vscode")
    elif setup == "broken":
        (home / ".cursor").mkdir()
        (home / ".cursor" / "mcp.json").write_text('{"mcpServers": [}')
    elif setup == "toml":
        (home / ".codex").mkdir()
        (home / ".codex" / "config.toml").write_text("[mcp_servers.x\n")
    (home / "project" / "whatever.json").write_text("{}")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_remote_server_is_explained_and_with_remote_pointed_at_a_working_proxy(home, capsys, tmp_path):
    path, _ = write_host_file(home, "gemini")
    assert main(["wrap", "--host", "gemini"]) == 0
    out = capsys.readouterr().out
    assert (
        "github: remote server https://api.githubcopilot.com/mcp/: to capture it, run `mcptrace proxy" in out
    )
    assert entry("gemini", path, "github")["httpUrl"] == "https://api.githubcopilot.com/mcp/"

    with sdk_http_server() as upstream:
        # Point the "github" entry at the SDK server, so the proxy it is told to run has a real upstream.
        path.write_text(path.read_text().replace("https://api.githubcopilot.com/mcp/", upstream))
        port = free_port()
        assert main(["wrap", "--host", "gemini", "--remote", "--proxy-port", str(port), "github"]) == 0
        out = capsys.readouterr().out
        local = entry("gemini", path, "github")["httpUrl"]
        assert local == f"http://127.0.0.1:{port}/mcp"
        command = out.split("keep the proxy running while the host uses it: ", 1)[1].split("\n", 1)[0]
        assert command.startswith("mcptrace proxy --upstream " + upstream)
        cap = tmp_path / "remote.jsonl"
        proxy = subprocess.Popen(
            [sys.executable, "-m", "tracer", *command.split()[1:], "-o", str(cap)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            for line in proxy.stderr:  # bounded: the proxy says where it listens or exits
                if "give the host this URL" in line or "error" in line:
                    break
            assert f"give the host this URL: {local}" in line
            ops = subprocess.run(
                [sys.executable, "fixtures/sdk/client.py", "--era", "modern", "--url", local],
                cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))),
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert ops.returncode == 0, ops.stderr
        finally:
            proxy.send_signal(2)
            proxy.wait(timeout=60)
            proxy.stderr.close()
    assert b"tools/call" in cap.read_bytes()
    assert main(["unwrap", "--host", "gemini", "github"]) == 0
    assert json.loads(path.read_text())["mcpServers"]["github"]["httpUrl"] == upstream


@pytest.mark.parametrize(
    "text",
    [
        '{"mcpServers": []}',
        '{"mcpServers": {"a": 1, "b": {"command": 5}, "c": {"command": "x", "args": [1]}, "d": {"url": 3}, "e": {}}}',
        "[1, 2]",
        "",
        '{"mcpServers": {"a": {"command": "x"}}} trailing',
        '{"a": "\\ud800"}',
        "{" * 5000,
        '{"mcpServers": {"a": {"command": "x", "args": "y"}}}',
        '\ufeff{"mcpServers": {}}',
        '{"mcpServers": {"a\x00": {"command": "x\ty"}}}',  # raw control characters in strings
        '{"mcpServers": {"a": {"command": "\\x"}}}',  # an escape JSON does not have
    ],
)
def test_hostile_config_content_never_breaks_wrap_or_doctor(home, capsys, text):
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text(text)
    before = path.read_bytes()
    assert main(["wrap", "--host", "cursor"]) in (0, 2)
    assert main(["doctor", "--host", "cursor"]) == 0
    out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in out + err
    assert path.read_bytes() == before  # nothing in these is a wrappable server


def test_a_lone_surrogate_escape_in_a_config_is_wrapped_shown_and_unwrapped_without_an_error(home):
    # json reads `"\ud800"` as a lone surrogate, which UTF-8 cannot write: wrap used to exit 70
    # ("internal error") printing it and writing the file, and doctor likewise
    path = home / ".cursor" / "mcp.json"
    path.parent.mkdir(parents=True)
    original = b'{"mcpServers": {"odd": {"command": "srv\\ud800", "args": ["-x\\udcff"]}}}\n'
    path.write_bytes(original)
    cli = [sys.executable, "-m", "tracer"]  # mcptrace's own process: its terminal output as a user sees it
    env = {**os.environ, "HOME": str(home)}

    def run(*args: str) -> str:
        p = subprocess.run([*cli, *args], env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and "internal error" not in p.stderr, p.stderr
        return p.stdout

    assert "odd: wrapped" in run("wrap", "--host", "cursor", "--config", str(path))
    wrapped = json.loads(path.read_bytes())["mcpServers"]["odd"]
    assert wrapped["args"][-2:] == ["srv\ud800", "-x\udcff"]  # the same strings, as the host reads them
    assert "srv\\ud800" in run("doctor", "--host", "cursor", "--config", str(path))
    run("unwrap", "--host", "cursor", "--config", str(path))
    assert path.read_bytes() == original


def test_a_codex_toml_nested_past_the_parsers_limit_is_a_bad_file_not_an_internal_error(home, capsys):
    # tomllib recurses per level: 5,000 nested arrays raised RecursionError (exit 70) in wrap,
    # unwrap and doctor
    path = home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text("x = " + "[" * 5000 + "]" * 5000 + '\n[mcp_servers.a]\ncommand = "python"\n')
    before = path.read_bytes()
    assert main(["wrap", "--host", "codex"]) == 2
    assert "not valid TOML" in capsys.readouterr().err
    assert main(["doctor", "--host", "codex"]) == 0
    out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in out + err
    assert path.read_bytes() == before


def test_a_config_with_two_servers_of_one_name_is_unwrapped_byte_for_byte(home, capsys):
    """JSON allows a name twice in `mcpServers` (the host uses the last); wrap wraps both, and
    unwrap must put back each one's own text, not rebuild the first from its arguments."""
    path = home / ".config" / "Claude" / "claude_desktop_config.json"
    path.parent.mkdir(parents=True)
    original = (
        b'{\n  "mcpServers": {\n'
        b'    "sdk": {"command": "python3",   "args": ["old_server.py" ,"--verbose"]},\n'
        b'    "sdk": {\n      "command": "python3",\n      "args": [ "server.py" ]\n    }\n'
        b"  }\n}\n"
    )
    path.write_bytes(original)
    assert main(["wrap", "--host", "claude-desktop"]) == 0
    assert path.read_bytes().count(b'"stdio"') == 2
    capsys.readouterr()
    assert main(["unwrap", "--host", "claude-desktop"]) == 0
    out = capsys.readouterr().out
    assert path.read_bytes() == original
    assert out.count("sdk: unwrapped") == 2 and "from its arguments" not in out


def test_a_corrupted_ledger_costs_its_entries_not_a_traceback(home, capsys):
    path, _ = write_host_file(home, "vscode")
    assert main(["wrap", "--host", "vscode"]) == 0
    (ledger,) = (home / ".local" / "state" / "mcptrace" / "wrap").iterdir()
    ledger.write_text("[" * 100_000 + "]" * 100_000)  # (nested past json's recursion limit)
    capsys.readouterr()
    code = main(["unwrap", "--host", "vscode"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in out + err
    assert code == 0 and "unwrapped from its arguments" in out  # (the wrapped command says what it ran)
    text = path.read_text()
    assert "mcptrace" not in text and f'"args": [{json.dumps(SDK_SERVER)}]' in text
