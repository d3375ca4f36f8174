"""`mcptrace wrap`: put the tee in front of each stdio server of a host's config file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

NAME = "wrap"
HELP = "put mcptrace's tee in front of the stdio servers of a host's config (Claude, Cursor, VS Code, ...)"
EXAMPLE = """  mcptrace wrap                                  every host config found (user and project level)
  mcptrace wrap --host claude-desktop weather    one server of one host
  mcptrace wrap --config .vscode/mcp.json --dry-run
  mcptrace wrap --host cursor --remote docs      point a remote server at a local mcptrace proxy

Hosts: claude-desktop, claude-code, cursor, vscode, windsurf, zed, gemini, codex. A backup of each
file goes to $XDG_STATE_HOME/mcptrace/backups/ before it changes; `mcptrace unwrap` undoes it."""


def add_host_arguments(p: argparse.ArgumentParser) -> None:
    from tracer.hosts.hosts import HOSTS

    p.add_argument("--host", choices=sorted(HOSTS), help="only this host's config files")
    p.add_argument(
        "--config", metavar="FILE", help="this config file (its host is guessed from its name, or --host)"
    )
    p.add_argument("servers", nargs="*", metavar="SERVER", help="only these servers (default: all)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_host_arguments(p)
    p.add_argument(
        "--remote",
        action="store_true",
        help="also point remote servers at a local `mcptrace proxy` (prints the command to keep running)",
    )
    p.add_argument(
        "--proxy-port",
        type=int,
        default=None,
        metavar="PORT",
        help="with --remote: the first local port for the proxies (default 8790, then 8791, ...)",
    )
    p.add_argument("--dry-run", action="store_true", help="say what would change, write nothing")


def targets(args: argparse.Namespace) -> list[tuple[str, Path, str]]:
    """(host id, file, scope) for the command line: --config, else every existing file of --host or of all hosts."""
    from tracer.cli import UsageError
    from tracer.hosts.hosts import HOSTS, config_files, guess_host

    if args.config:
        path = Path(args.config).expanduser()
        host = args.host or guess_host(path)
        if host is None:
            raise UsageError(
                f"cannot tell which host {path} belongs to; add --host ({', '.join(sorted(HOSTS))})"
            )
        if not path.is_file():
            raise UsageError(f"{path}: no such file")
        return [(host, path, "given")]
    hosts = [args.host] if args.host else list(HOSTS)
    return [(h, p, scope) for h in hosts for p, scope in config_files(h)]


def run_edit(args: argparse.Namespace, verb: str) -> int:
    from tracer.cli import UsageError
    from tracer.hosts.entries import ConfigFileError, load
    from tracer.hosts.hosts import HOSTS
    from tracer.hosts.wrap import ConcurrentEdit, unwrap, wrap

    found = targets(args)
    if not found:
        from tracer.hosts.doctor import searched_paths

        where = f"--host {args.host}" if args.host else "any host"
        raise UsageError(
            f"no config file of {where} found (looked in {', '.join(searched_paths()[:3])}, ...); "
            f"give one with --config FILE"
        )
    wanted = list(args.servers) or None
    docs = []
    for host_id, path, _scope in found:
        try:
            docs.append(load(path, HOSTS[host_id]))
        except ConfigFileError as exc:
            raise UsageError(str(exc)) from None
    if wanted:
        names = {e.name for d in docs for e in d.entries}
        missing = [n for n in wanted if n not in names]
        if missing:
            raise UsageError(
                f"no server named {', '.join(missing)} in {', '.join(str(d.path) for d in docs)} "
                f"(servers: {', '.join(sorted(names)) or 'none'})"
            )
    import itertools

    from tracer.hosts.wrap import PROXY_PORT_BASE

    first = getattr(args, "proxy_port", None) or PROXY_PORT_BASE
    if not 0 < first < 65536:
        raise UsageError(f"--proxy-port {first}: expected a port number (1-65535)")
    ports = itertools.count(first)  # one local proxy port per remote server of the run
    status = 0
    for doc in docs:
        try:
            if verb == "wrap":
                outcome = wrap(doc, wanted, remote=args.remote, dry_run=args.dry_run, ports=ports)
            else:
                outcome = unwrap(doc, wanted, dry_run=args.dry_run)
        except ConcurrentEdit as exc:
            sys.stderr.write(f"mcptrace: error: {exc}\n")
            status = 2
            continue
        except OSError as exc:
            sys.stderr.write(f"mcptrace: error: cannot write {doc.path}: {exc.strerror or exc}\n")
            status = 2
            continue
        sys.stdout.write(f"{doc.host.title}: {doc.path}\n")
        for line in outcome.lines:
            sys.stdout.write(f"  {line}\n")
        if outcome.backup is not None:
            sys.stdout.write(f"  backup: {outcome.backup}\n")
        if outcome.written:
            sys.stdout.write(f"  restart {doc.host.title} (or reload its MCP servers) to apply\n")
    return status


def run(args: argparse.Namespace) -> int:
    return run_edit(args, "wrap")
