"""The MCP hosts whose config files `wrap`, `unwrap` and `doctor` know: where each keeps its file
on each OS, where its servers are in it, how it names a remote server's URL, where it logs.

Sources (checked 2026-12): Claude Desktop's and Claude Code's docs and `claude mcp` scopes
(`~/.claude.json` top level = user scope, `projects.<dir>.mcpServers` = local scope, `.mcp.json` =
project scope); Cursor (`~/.cursor/mcp.json`, `.cursor/mcp.json`); the VS Code MCP configuration
reference (`servers`, required `type`, `inputs`; the user-profile `mcp.json` beside `settings.json`);
Windsurf (`~/.codeium/windsurf/mcp_config.json`, `serverUrl` for remote servers); Zed
("Configuring Zed": `~/.config/zed/settings.json`, `$XDG_CONFIG_HOME/zed` on Linux;
`context_servers`); Gemini CLI (`~/.gemini/settings.json`, `.gemini/settings.json`; `httpUrl` for
Streamable HTTP, `url` for SSE); Codex (`~/.codex/config.toml`, `.codex/config.toml` in a trusted
project, `[mcp_servers.NAME]` with `command`/`args` or `url`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Host:
    id: str
    title: str
    fmt: str  # json (comments tolerated on read, kept on write) or toml
    containers: tuple[tuple[str, ...], ...]  # where server tables are; "*" matches any key
    url_keys: tuple[str, ...]  # keys a remote server's URL may be under, preferred first
    logs: str  # where the host writes its MCP logs, for `doctor`
    logs_lintable: bool = False  # `mcptrace lint` reads those logs (the hostlog input)
    remote_note: str = ""  # when the format cannot point at a proxy: what to do instead
    gui: bool = True  # a GUI app: starts servers from its own working directory, with a small PATH


def _home() -> Path:
    return Path(os.environ.get("HOME") or os.path.expanduser("~"))


def _appdata() -> Path:
    return Path(os.environ.get("APPDATA") or _home() / "AppData" / "Roaming")


def _xdg_config() -> Path:
    env = os.environ.get("XDG_CONFIG_HOME", "")
    return Path(env) if env and os.path.isabs(env) else _home() / ".config"


def _app_support() -> Path:
    return _home() / "Library" / "Application Support"


HOSTS: dict[str, Host] = {
    h.id: h
    for h in (
        Host(
            "claude-desktop",
            "Claude Desktop",
            "json",
            (("mcpServers",),),
            (),
            logs="macOS ~/Library/Logs/Claude/mcp*.log, Windows %APPDATA%\\Claude\\logs\\mcp*.log "
            "(mcp.log, and mcp-server-NAME.log per server)",
            logs_lintable=True,
            remote_note="Claude Desktop's config file holds only stdio servers (remote ones are connectors "
            "added in its settings)",
        ),
        Host(
            "claude-code",
            "Claude Code",
            "json",
            (("mcpServers",), ("projects", "*", "mcpServers")),
            ("url",),
            logs="`claude --debug` prints MCP server output; `/mcp` shows each server's state",
            gui=False,
        ),
        Host(
            "cursor",
            "Cursor",
            "json",
            (("mcpServers",),),
            ("url",),
            logs='the Output panel, channel "MCP Logs"',
        ),
        Host(
            "vscode",
            "VS Code",
            "json",
            (("servers",),),
            ("url",),
            logs="the Output panel: `MCP: List Servers` > a server > Show Output",
        ),
        Host(
            "windsurf",
            "Windsurf",
            "json",
            (("mcpServers",),),
            ("serverUrl", "url"),
            logs="Cascade's MCP panel (no log file documented)",
        ),
        Host(
            "zed",
            "Zed",
            "json",
            (("context_servers",),),
            ("url",),
            logs="`zed: open log` (macOS ~/Library/Logs/Zed/Zed.log, Linux ~/.local/share/zed/logs/Zed.log)",
        ),
        Host(
            "gemini",
            "Gemini CLI",
            "json",
            (("mcpServers",),),
            ("httpUrl", "url"),
            logs="`gemini --debug`; `/mcp` lists each server's state",
            gui=False,
        ),
        Host(
            "codex",
            "Codex",
            "toml",
            (("mcp_servers",),),
            ("url",),
            logs="~/.codex/log/codex-tui.log (`RUST_LOG` sets the detail)",
            gui=False,
        ),
    )
}


def user_files(host_id: str, platform: str | None = None) -> list[Path]:
    """The host's user-level config files for PLATFORM (default: this machine's)."""
    plat = platform or sys.platform
    home = _home()
    mac, win = plat == "darwin", plat.startswith("win")
    if host_id == "claude-desktop":
        base = _app_support() if mac else _appdata() if win else _xdg_config()
        return [base / "Claude" / "claude_desktop_config.json"]
    if host_id == "claude-code":
        return [home / ".claude.json"]
    if host_id == "cursor":
        return [home / ".cursor" / "mcp.json"]
    if host_id == "vscode":
        base = _app_support() if mac else _appdata() if win else _xdg_config()
        return [base / "Code" / "User" / "mcp.json", base / "Code - Insiders" / "User" / "mcp.json"]
    if host_id == "windsurf":
        return [home / ".codeium" / "windsurf" / "mcp_config.json"]
    if host_id == "zed":
        base = _appdata() / "Zed" if win else (home / ".config" / "zed" if mac else _xdg_config() / "zed")
        return [base / "settings.json"]
    if host_id == "gemini":
        return [home / ".gemini" / "settings.json"]
    if host_id == "codex":
        codex_home = os.environ.get("CODEX_HOME")
        return [Path(codex_home) / "config.toml" if codex_home else home / ".codex" / "config.toml"]
    raise KeyError(host_id)


PROJECT_FILES = {
    "claude-code": ".mcp.json",
    "cursor": ".cursor/mcp.json",
    "vscode": ".vscode/mcp.json",
    "zed": ".zed/settings.json",
    "gemini": ".gemini/settings.json",
    "codex": ".codex/config.toml",
}


def config_files(host_id: str, cwd: Path | None = None) -> list[tuple[Path, str]]:
    """(path, scope) of every config file of the host that exists: user-level, then the project's
    (in the working directory)."""
    found = [(p, "user") for p in user_files(host_id) if p.is_file()]
    rel = PROJECT_FILES.get(host_id)
    if rel:
        p = (cwd or Path.cwd()) / rel
        if p.is_file() and all(p.resolve() != q.resolve() for q, _ in found):
            found.append((p, "project"))
    return found


def guess_host(path: Path) -> str | None:
    """The host a config file belongs to, from its name and folder (for `--config` without `--host`)."""
    name, parent = path.name, path.parent.name
    if name == "claude_desktop_config.json":
        return "claude-desktop"
    if name in (".claude.json", ".mcp.json"):
        return "claude-code"
    if name == "mcp_config.json":
        return "windsurf"
    if name == "config.toml":
        return "codex"
    if name == "mcp.json":
        return "cursor" if parent == ".cursor" else "vscode" if parent in (".vscode", "User") else None
    if name == "settings.json":
        return "zed" if parent in ("zed", ".zed", "Zed") else "gemini" if parent == ".gemini" else None
    return None


__all__ = ["HOSTS", "PROJECT_FILES", "Host", "config_files", "guess_host", "user_files"]
