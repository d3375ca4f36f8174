"""`mcptrace unwrap`: take the tee away again, restoring each entry as it was before `wrap`."""

from __future__ import annotations

import argparse

NAME = "unwrap"
HELP = "undo `mcptrace wrap`: restore the host config's original server entries (byte for byte)"
EXAMPLE = """  mcptrace unwrap                                every wrapped server of every host config found
  mcptrace unwrap --host claude-desktop weather"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from tracer.cli.wrap import add_host_arguments

    add_host_arguments(p)
    p.add_argument("--dry-run", action="store_true", help="say what would change, write nothing")


def run(args: argparse.Namespace) -> int:
    from tracer.cli.wrap import run_edit

    return run_edit(args, "unwrap")
