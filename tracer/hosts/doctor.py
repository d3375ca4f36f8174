"""`doctor`: every host config found, each server in it, and what would stop it being captured."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path

from tracer.hosts.entries import ConfigFileError, Document, Entry, load
from tracer.hosts.hosts import HOSTS, user_files
from tracer.hosts.wrap import proxied
from tracer.paths import APP, captures_dir, safe_label, state_home

_SCRIPT = re.compile(r"\.(py|js|mjs|cjs|ts|sh|rb|jar|exe|bat|cmd|ps1)$", re.I)


def relative_paths(argv: list[str]) -> list[str]:
    """Arguments that look like relative file paths (a GUI host resolves them from its own
    working directory, not the project's): `server.py`, `./build/index.js`, `src/main.py`."""
    found = []
    for arg in argv:
        if (
            not arg
            or arg.startswith(("-", "@", "$", "%"))
            or "://" in arg
            or "=" in arg
            or os.path.isabs(arg)
        ):
            continue
        if arg.startswith("~"):
            continue
        if arg.startswith(("./", "../", ".\\", "..\\")) or _SCRIPT.search(arg):
            found.append(arg)
    return found


def command_status(command: str) -> str:
    if os.path.isabs(command):
        return (
            f"{command} exists" if os.access(command, os.X_OK) else f"{command} NOT FOUND (or not executable)"
        )
    found = shutil.which(command)
    return f"{command} on PATH ({found})" if found else f"{command} NOT on PATH"


def recent_captures(name: str, directory: Path | None = None) -> list[Path]:
    """The server's captures, newest first: in the captures directory, and in the default one too
    when a project config moved it (a GUI host starts the tee outside the project)."""
    dirs = (
        [directory]
        if directory is not None
        else list(dict.fromkeys([captures_dir(create=False), state_home() / APP / "captures"]))
    )
    rx = re.compile(rf"^\d{{8}}-\d{{6}}-{re.escape(safe_label(name))}-\d+\.jsonl$")
    files: list[Path] = []
    for d in dirs:
        try:
            files.extend(p for p in d.iterdir() if rx.match(p.name))
        except OSError:
            continue
    return sorted(files, key=lambda p: p.stat().st_mtime, reverse=True)


def _entry_lines(doc: Document, e: Entry, scope: str) -> list[str]:
    host_id, gui = doc.host.id, doc.host.gui
    if e.kind == "remote":
        if e.url is None:
            return [f"  {e.name}: remote server ({e.problem})"]
        rec = proxied(doc, e)
        if rec is not None:
            return [
                f"  {e.name}: remote, POINTED AT the mcptrace proxy {e.url}; it must be running: {rec.get('run')}"
            ]
        return [
            f"  {e.name}: remote {e.url}; to capture it: mcptrace wrap --host {host_id} --remote {e.name} "
            f"(then run the mcptrace proxy command it prints)"
        ]
    if e.problem:
        return [f"  {e.name}: cannot be wrapped: {e.problem}"]
    if e.kind != "stdio":
        return []
    argv = e.original_argv() if e.wrapped else [e.command, *e.args]
    lines = [
        f"  {e.name}: stdio, {'WRAPPED (captured by mcptrace)' if e.wrapped else 'not wrapped'}: "
        f"{' '.join(argv)}"
    ]
    if e.wrapped:
        lines.append(f"    mcptrace: {command_status(e.command)}")
    if argv:
        lines.append(f"    command: {command_status(argv[0])}")
    rel = relative_paths(argv)
    if rel and e.cwd is None and (gui or scope == "user"):
        lines.append(
            f"    relative path(s) {', '.join(rel)}: the host starts the server from its own working "
            f"directory, not your project's; use absolute paths"
        )
    caps = recent_captures(e.name)
    if caps:
        lines.append(f"    captures: {len(caps)}, newest {caps[0]} (mcptrace view {caps[0]})")
    elif e.wrapped:
        lines.append("    captures: none yet (restart the host, or use the server once)")
    return lines


def report(
    targets: Iterable[tuple[str, Path, str]], searched: list[str], names: list[str] | None = None
) -> list[str]:
    """The doctor's lines for each (host id, config file, scope); NAMES: only these servers."""
    lines: list[str] = []
    seen_hosts: set[str] = set()
    found_any = False
    for host_id, path, scope in targets:
        found_any = True
        host = HOSTS[host_id]
        lines.append(f"{host.title} ({host_id}): {path} [{scope}]")
        try:
            doc = load(path, host)
        except ConfigFileError as exc:
            lines.append(f"  cannot read it: {exc}")
            continue
        if not doc.entries:
            lines.append("  no MCP servers in it")
        for e in doc.entries:
            if names is None or e.name in names:
                lines.extend(_entry_lines(doc, e, scope))
        if host_id not in seen_hosts:
            seen_hosts.add(host_id)
            lint = (
                " (mcptrace lint reads these logs, e.g. mcptrace lint ~/Library/Logs/Claude/mcp*.log)"
                if host.logs_lintable
                else ""
            )
            lines.append(f"  logs: {host.logs}{lint}")
    if not found_any:
        lines.append("no host config found; looked for:")
        lines.extend(f"  {p}" for p in searched)
    lines.append(f"captures directory: {captures_dir(create=False)}")
    return lines


def searched_paths() -> list[str]:
    return [str(p) for h in HOSTS for p in user_files(h)]


__all__ = ["command_status", "recent_captures", "relative_paths", "report", "searched_paths"]
