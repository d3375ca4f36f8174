"""`mcptrace rules`: list the rule catalog, or explain one rule."""

from __future__ import annotations

import argparse
import sys

NAME = "rules"
HELP = "list the rule catalog, or explain one rule (what it flags, the spec's words, its source)"
EXAMPLE = """  mcptrace rules
  mcptrace rules MCP310"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("rule", nargs="?", metavar="ID", help="a rule id, e.g. MCP310")
    p.add_argument("--format", choices=["text", "markdown"], default="text")


def run(args: argparse.Namespace) -> int:
    from tracer.catalog.docs import explain, table_markdown, table_text
    from tracer.cli import UsageError
    from tracer.rules import all_rules

    rules = all_rules()
    if args.rule:
        r = rules.get(args.rule.upper())
        if r is None:
            raise UsageError(f"unknown rule id {args.rule!r}")
        sys.stdout.write(explain(r))
        return 0
    sys.stdout.write(
        table_markdown(rules.values()) if args.format == "markdown" else table_text(rules.values())
    )
    return 0
