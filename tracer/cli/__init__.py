"""The `mcptrace` command. This module owns stdout, stderr and exit codes for every subcommand.

Exit codes: 0 success, 1 findings at or above the threshold (or a replay difference), 2 usage or
input error (one line on stderr, never a traceback), 127/126 command not found / not executable
(tee), 130 interrupted. Subcommands live in their own modules and import heavy dependencies
(textual, mitmproxy) only inside `run`.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys
from typing import NoReturn

from tracer import __version__

# Subcommand modules, in the order `mcptrace --help` lists them.
COMMANDS = ["lint", "rules", "help"]
OPTIONAL_COMMANDS = ["stdio", "proxy", "view", "demo", "replay", "mock", "export", "wrap", "unwrap", "doctor"]


class UsageError(Exception):
    """A mistake in how the command was called: one line on stderr, exit 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=32, width=100)


def _modules() -> list:
    mods = []
    for name in COMMANDS + OPTIONAL_COMMANDS:
        try:
            mods.append(importlib.import_module(f"tracer.cli.{name}"))
        except ModuleNotFoundError as exc:
            if exc.name != f"tracer.cli.{name}":
                raise
    return mods


def build_parser() -> Parser:
    parser = Parser(
        prog="mcptrace",
        formatter_class=HelpFormatter,
        description="MCP traffic inspector and request tracer: capture, analyse, view, lint, replay.",
        epilog=(
            "examples:\n"
            "  mcptrace demo                         run a bundled server and client, open the viewer\n"
            "  mcptrace stdio -- python server.py    tee a stdio server (usable in a host's config)\n"
            "  mcptrace wrap                         put the tee in front of the servers of every host config found\n"
            "  mcptrace lint capture.jsonl           check recorded traffic against the spec\n"
            "  mcptrace rules MCP310                 explain one rule\n"
            "  mcptrace help                         list the topics in depth (help view, help filter, help ci...)\n"
            "\nrun 'mcptrace COMMAND --help' for a command's options and examples, 'mcptrace help TOPIC' for a topic."
        ),
    )
    parser.add_argument("--version", action="version", version=f"mcptrace {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for mod in _modules():
        p = sub.add_parser(
            mod.NAME,
            help=mod.HELP,
            description=mod.HELP,
            epilog="example:\n" + mod.EXAMPLE,
            formatter_class=HelpFormatter,
        )
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


# What a command's writes can meet that is the machine's state, not a bug: said in one line.
_ENVIRONMENT_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EIO,
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.EMFILE,
        errno.ENFILE,
    }
)


def _quiet_stdout() -> None:
    """Drop what is still buffered for a stdout that cannot take it (a full disk), so the
    interpreter's exit does not fail on it again with a traceback."""
    try:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
    except OSError:
        pass


def _safe_terminal_text() -> None:
    """Text from a file or the wire can hold what the terminal's encoding cannot write (a lone
    surrogate a JSON escape gave, a name that is not UTF-8): it is printed escaped, never raised.
    Only in mcptrace's own process: a caller's Python program keeps its streams as they are."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (OSError, ValueError):  # a closed or detached stream: nothing to print to
                pass


def main(argv: list[str] | None = None) -> int:
    own_process = argv is None
    argv = sys.argv[1:] if argv is None else argv
    if own_process:
        _safe_terminal_text()
    try:
        parser = build_parser()
        # (own process: the console script or `python -m tracer`, not a caller's Python program,
        # which a command may not end under it; `mcptrace stdio` exits at once only in its own)
        args = parser.parse_args(argv)
        args._own_process = own_process
        if not getattr(args, "command", None):
            parser.print_help(sys.stderr)
            return 2
        return int(args._run(args) or 0)
    except UsageError as exc:
        sys.stderr.write(f"mcptrace: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (| head): not an error worth a traceback.
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        except OSError:
            pass
        return 0
    except Exception as exc:  # last line of defence: one line, never a traceback
        from tracer.inputs import InputError

        if isinstance(exc, InputError):  # an unreadable input, wherever a command met it: exit 2
            sys.stderr.write(f"mcptrace: error: {exc}\n")
            return 2
        if isinstance(exc, OSError) and exc.errno in _ENVIRONMENT_ERRNOS:
            # the machine, not mcptrace: a full disk under `-o report.sarif`, a read-only mount...
            where = f" ({exc.filename})" if exc.filename else ""
            sys.stderr.write(f"mcptrace: error: {exc.strerror or exc}{where}\n")
            if own_process:
                _quiet_stdout()
            return 2
        if os.environ.get("MCPTRACE_DEBUG"):
            raise
        sys.stderr.write(
            f"mcptrace: internal error: {type(exc).__name__}: {exc} (set MCPTRACE_DEBUG=1 for a traceback)\n"
        )
        return 70


def entry() -> NoReturn:
    sys.exit(main())
