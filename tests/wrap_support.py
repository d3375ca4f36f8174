"""Shared by the wrap/unwrap/doctor tests: a fake home directory per test, each host's real file
shape, and an SDK client that starts a config entry exactly the way the host would."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tracer.capture import read_capture
from tracer.model import Record, RecordType

REPO = Path(__file__).resolve().parent.parent
SDK_SERVER = str(REPO / "fixtures" / "sdk" / "server.py")
PY = json.dumps(sys.executable)
SRV = json.dumps(SDK_SERVER)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """HOME is a fresh directory; the working directory is a project inside it; XDG/APPDATA unset so
    every per-OS default location is computed from HOME."""
    h = tmp_path / "home"
    (h / "project").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(h))
    for var in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "APPDATA", "CODEX_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(h / "project")
    return h


# Each host's file (relative to HOME on Linux) in the shape its docs show: a stdio server "sdk"
# (the official SDK's server), other keys the host owns, and where the format allows, comments
# and a remote server.
HOST_FILES: dict[str, tuple[str, str]] = {
    "claude-desktop": (
        ".config/Claude/claude_desktop_config.json",
        f"""{{
  "globalShortcut": "",
  "mcpServers": {{
    "sdk": {{
      "command": {PY},
      "args": [{SRV}],
      "env": {{"SDK_FIXTURE_MODE": "plain"}}
    }}
  }}
}}
""",
    ),
    "claude-code": (
        ".claude.json",
        f"""{{
  "numStartups": 12,
  "projects": {{
    "/home/me/app": {{"allowedTools": [], "mcpServers": {{}}, "hasTrustDialogAccepted": true}}
  }},
  "mcpServers": {{
    "sdk": {{"type": "stdio", "command": {PY}, "args": [{SRV}], "env": {{}}}},
    "notion": {{"type": "http", "url": "https://mcp.notion.com/mcp"}}
  }},
  "tipsHistory": {{"x": 1}}
}}
""",
    ),
    "cursor": (
        ".cursor/mcp.json",
        f"""{{
  "mcpServers": {{
    "sdk": {{
      "command": {PY},
      "args": [
        {SRV}
      ]
    }},
    "docs": {{ "url": "https://docs.example.com/mcp", "headers": {{"Authorization": "Bearer ${{env:TOKEN}}"}} }}
  }}
}}
""",
    ),
    "vscode": (
        ".config/Code/User/mcp.json",
        f"""// VS Code user MCP servers
{{
  "servers": {{
    "sdk": {{
      "type": "stdio", // required
      "command": {PY},
      "args": [{SRV}], /* the fixture server */
      "env": {{"KEY": "${{input:api-key}}"}},
    }},
    "github": {{"type": "http", "url": "https://api.githubcopilot.com/mcp/"}}
  }},
  "inputs": [{{"type": "promptString", "id": "api-key", "description": "API key", "password": true}}]
}}
""",
    ),
    "windsurf": (
        ".codeium/windsurf/mcp_config.json",
        f"""{{
  "mcpServers": {{
    "sdk": {{"command": {PY}, "args": [{SRV}], "disabled": false, "env": {{}}}},
    "github": {{"serverUrl": "https://api.githubcopilot.com/mcp/", "headers": {{"Authorization": "Bearer x"}}}}
  }}
}}
""",
    ),
    "zed": (
        ".config/zed/settings.json",
        f"""// Zed settings
//
// For information on how to configure Zed, see the Zed
// documentation: https://zed.dev/docs/configuring-zed
{{
  "ui_font_size": 16,
  "context_servers": {{
    "sdk": {{
      "command": {PY},
      "args": [{SRV}],
      "env": {{}}
    }},
    "remote-mcp-server": {{"url": "https://example.com/mcp", "headers": {{"Authorization": "Bearer <token>"}}}}
  }},
  "theme": {{"mode": "system", "light": "One Light", "dark": "One Dark"}}
}}
""",
    ),
    "gemini": (
        ".gemini/settings.json",
        f"""{{
  "theme": "Dracula",
  "mcpServers": {{
    "sdk": {{"command": {PY}, "args": [{SRV}], "timeout": 30000, "trust": false}},
    "github": {{"httpUrl": "https://api.githubcopilot.com/mcp/", "timeout": 5000}}
  }}
}}
""",
    ),
    "codex": (
        ".codex/config.toml",
        f"""# Codex configuration
model = "o3"
approval_policy = "on-request"  # ask first

[mcp_servers.sdk]
# the SDK fixture server
command = {PY}
args = [
  {SRV},  # one script
]
startup_timeout_sec = 20

[mcp_servers.sdk.env]
SDK_FIXTURE_MODE = "plain"

[mcp_servers.docs]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "DOCS_TOKEN"

[profiles.fast]
model = "o4-mini"
""",
    ),
}


def write_host_file(home: Path, host: str) -> tuple[Path, bytes]:
    rel, text = HOST_FILES[host]
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path, path.read_bytes()


def entry(host: str, path: Path, name: str) -> dict:
    """The server entry as the host reads it (comments and trailing commas stripped by our reader)."""
    from tracer.hosts.jsonc import parse

    if host == "codex":
        return tomllib.loads(path.read_text())["mcp_servers"][name]
    data = parse(path.read_text()).plain()
    key = {"vscode": "servers", "zed": "context_servers"}.get(host, "mcpServers")
    return data[key][name]


def start_like_the_host(spec: dict) -> list[str]:
    """Spawn exactly the entry's command and args with the SDK client (as a host does), list the
    tools, hang up; returns the tool names."""

    async def session() -> list[str]:
        params = StdioServerParameters(
            command=spec["command"], args=spec.get("args", []), env=spec.get("env") or None
        )
        async with Client(params, mode="legacy") as client:
            return sorted(t.name for t in (await client.list_tools()).tools)

    return anyio.run(session)


def captured_methods(path: Path) -> list[str]:
    with open(path, "rb") as fh:
        recs = [
            r for r in read_capture(fh, str(path)) if isinstance(r, Record) and r.type is RecordType.MESSAGE
        ]
    methods = []
    for r in recs:
        try:
            msg = json.loads(r.raw)
        except ValueError:
            continue
        if isinstance(msg, dict) and isinstance(msg.get("method"), str):
            methods.append(msg["method"])
    return methods
