"""A host config file as a list of server entries, each with the spans an edit needs.

Everything in the file is untrusted: a server whose `command` is not a string, whose `args` are
not all strings, or which sits where no server can be, is reported as not editable (with why),
never a traceback.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from tracer.hosts import jsonc, tomlspan
from tracer.hosts.hosts import Host

MCPTRACE_NAMES = ("mcptrace", "mcptrace.exe")


class ConfigFileError(ValueError):
    """A config file that cannot be read or is not valid JSON/JSONC/TOML: one line."""


@dataclass
class Span:
    start: int
    end: int

    def text(self, doc: str) -> str:
        return doc[self.start : self.end]


@dataclass
class Entry:
    name: str
    where: tuple[
        str, ...
    ]  # the container's key path, e.g. ("mcpServers",) or ("projects", "/p", "mcpServers")
    kind: str  # stdio, remote, other
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict | None = None
    cwd: str | None = None
    url: str | None = None
    url_key: str | None = None
    command_span: Span | None = None
    args_span: Span | None = None
    args_insert_at: int | None = None  # where an `args` key can be added when there is none
    url_span: Span | None = None
    problem: str | None = None  # why it cannot be edited

    @property
    def key(self) -> str:
        return "/".join((*self.where, self.name))

    @property
    def wrapped(self) -> bool:
        return (
            self.kind == "stdio"
            and self.command is not None
            and os.path.basename(self.command).lower() in MCPTRACE_NAMES
            and self.args[:1] == ["stdio"]
            and "--" in self.args
        )

    def original_argv(self) -> list[str]:
        """For a wrapped entry: the server command line behind the tee."""
        rest = self.args[self.args.index("--") + 1 :]
        return rest


@dataclass
class Document:
    path: Path
    host: Host
    text: str
    raw: bytes
    stat: os.stat_result
    entries: list[Entry]

    def dumps(self, value) -> str:
        return tomlspan.dumps_value(value) if self.host.fmt == "toml" else jsonc.dumps(value)

    def args_insertion(self, e: Entry, args: list[str]) -> str:
        """The text that adds `args` to an entry that has none (beside its command)."""
        if self.host.fmt == "toml":
            return f"args = {tomlspan.dumps_value(args)}\n"
        return f', "args": {jsonc.dumps(args)}'


def load(path: Path, host: Host) -> Document:
    try:
        raw = path.read_bytes()
        st = path.stat()
    except OSError as exc:
        raise ConfigFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"{path}: not UTF-8 (byte {exc.start})") from None
    entries = _toml_entries(path, text, host) if host.fmt == "toml" else _json_entries(path, text, host)
    return Document(path, host, text, raw, st, entries)


def _strings(node: jsonc.Node | None) -> list[str] | None:
    if node is None:
        return []
    if node.kind != "array" or not all(i.kind == "scalar" and isinstance(i.value, str) for i in node.items):
        return None
    return [i.value for i in node.items]


def _containers(root: jsonc.Node, pattern: tuple[str, ...], prefix: tuple[str, ...] = ()):
    if not pattern:
        yield prefix, root
        return
    head, rest = pattern[0], pattern[1:]
    if root.kind != "object":
        return
    for k, v in root.members:
        if head in ("*", k):
            yield from _containers(v, rest, (*prefix, k))


def _json_entries(path: Path, text: str, host: Host) -> list[Entry]:
    try:
        root = jsonc.parse(text)
    except jsonc.JsoncError as exc:
        raise ConfigFileError(f"{path}: not valid JSON: {exc}") from None
    if root.kind != "object":
        raise ConfigFileError(f"{path}: the top level is not an object")
    out: list[Entry] = []
    for pattern in host.containers:
        for where, box in _containers(root, pattern):
            if box.kind != "object":
                continue
            for name, node in box.members:
                out.append(_json_entry(name, where, node, host))
    return out


def _json_entry(name: str, where: tuple[str, ...], node: jsonc.Node, host: Host) -> Entry:
    if node.kind != "object":
        return Entry(name, where, "other", problem="not an object")
    holder = node
    cmd = node.get("command")
    if cmd is not None and cmd.kind == "object":  # Zed's older shape: "command": {"path", "args", "env"}
        holder, cmd = cmd, cmd.get("path")
    url_key = next((k for k in host.url_keys if node.get(k) is not None), None)
    if cmd is None:
        if url_key is not None:
            u = node.get(url_key)
            if u.kind != "scalar" or not isinstance(u.value, str):
                return Entry(name, where, "remote", problem=f"{url_key} is not a string")
            return Entry(name, where, "remote", url=u.value, url_key=url_key, url_span=Span(u.start, u.end))
        kind = "remote" if any(node.get(k) for k in ("url", "serverUrl", "httpUrl")) else "other"
        return Entry(name, where, kind, problem="no command")
    if cmd.kind != "scalar" or not isinstance(cmd.value, str):
        return Entry(name, where, "stdio", problem="command is not a string")
    args_node = holder.get("args")
    args = _strings(args_node)
    if args is None:
        return Entry(name, where, "stdio", command=cmd.value, problem="args is not a list of strings")
    env = node.get("env") or holder.get("env")
    cwd = node.get("cwd")
    return Entry(
        name,
        where,
        "stdio",
        command=cmd.value,
        args=args,
        env=env.plain() if env is not None and env.kind == "object" else None,
        cwd=cwd.value if cwd is not None and isinstance(cwd.value, str) else None,
        command_span=Span(cmd.start, cmd.end),
        args_span=Span(args_node.start, args_node.end) if args_node is not None else None,
        args_insert_at=cmd.end,
    )


def _toml_entries(path: Path, text: str, host: Host) -> list[Entry]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: not valid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses per nesting level
        raise ConfigFileError(f"{path}: not valid TOML: nested too deeply to read") from None
    servers = data.get("mcp_servers")
    if not isinstance(servers, dict):
        return []
    try:
        tables = {t.name: t for t in tomlspan.scan(text)}
    except (ValueError, IndexError) as exc:
        raise ConfigFileError(f"{path}: cannot follow the TOML layout: {exc}") from None
    out: list[Entry] = []
    for name, spec in servers.items():
        if not isinstance(spec, dict):
            out.append(Entry(name, ("mcp_servers",), "other", problem="not a table"))
            continue
        table = tables.get(("mcp_servers", name))
        if "command" not in spec:
            url = spec.get("url")
            e = Entry(
                name,
                ("mcp_servers",),
                "remote" if isinstance(url, str) else "other",
                url=url if isinstance(url, str) else None,
                url_key="url",
            )
            kv = table.find("url") if table else None
            if kv is not None and isinstance(url, str):
                e.url_span = Span(kv.value_start, kv.value_end)
            elif url is None:
                e.problem = "no command"
            else:
                e.problem = (
                    "url is not a string"
                    if not isinstance(url, str)
                    else f"not in a [mcp_servers.{name}] table of its own"
                )
            out.append(e)
            continue
        command, args = spec.get("command"), spec.get("args", [])
        if (
            not isinstance(command, str)
            or not isinstance(args, list)
            or not all(isinstance(a, str) for a in args)
        ):
            out.append(Entry(name, ("mcp_servers",), "stdio", problem="command/args are not strings"))
            continue
        e = Entry(
            name,
            ("mcp_servers",),
            "stdio",
            command=command,
            args=args,
            env=spec.get("env") if isinstance(spec.get("env"), dict) else None,
            cwd=spec.get("cwd") if isinstance(spec.get("cwd"), str) else None,
        )
        ckv = table.find("command") if table else None
        akv = table.find("args") if table else None
        if ckv is None or ("args" in spec and akv is None):
            e.problem = f"not written as a [mcp_servers.{name}] table with command/args keys"
        else:
            e.command_span = Span(ckv.value_start, ckv.value_end)
            e.args_span = Span(akv.value_start, akv.value_end) if akv else None
            eol = text.find("\n", ckv.value_end)
            e.args_insert_at = len(text) if eol < 0 else eol + 1
        out.append(e)
    return out


__all__ = ["ConfigFileError", "Document", "Entry", "Span", "load"]
