"""`mcptrace doctor`: the host configs found, their servers, and what stands in the way of capturing them."""

from __future__ import annotations

import argparse
import sys

NAME = "doctor"
HELP = "list host configs and their servers: wrapped or not, command on PATH, relative paths, logs, captures"
EXAMPLE = """  mcptrace doctor
  mcptrace doctor --host claude-desktop"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from tracer.cli.wrap import add_host_arguments

    add_host_arguments(p)


def run(args: argparse.Namespace) -> int:
    from tracer.cli.wrap import targets
    from tracer.hosts.doctor import report, searched_paths

    for line in report(targets(args), searched_paths(), list(args.servers) or None):
        sys.stdout.write(line + "\n")
    return 0
