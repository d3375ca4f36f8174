"""`mcptrace help [TOPIC]`: the pages behind the README (capture format, each command in depth,
viewer keys, the filter language, config, CI...), shipped in the package (tracer/help)."""

from __future__ import annotations

import argparse
import re
import shutil
import sys

NAME = "help"
HELP = "topics in depth: list them, or print one (mcptrace help view, help filter, help capture-format...)"
EXAMPLE = """  mcptrace help                  # every topic with one line each
  mcptrace help filter           # the viewer's filter language
  mcptrace help stdio | less     # the stdio tee in depth"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic", nargs="?", metavar="TOPIC", help="a topic (mcptrace help lists them)")


def tables(columns: int = 100) -> dict:
    """The generated tables pages may hold, each from the code that owns it, `columns` wide."""
    from tracer.filter_terms import text as filter_text
    from ui.keys import marks_text
    from ui.keys import text as keys_text  # plain data: this does not start textual

    return {
        "keys": lambda: keys_text(columns),
        "marks": marks_text,
        "filter": lambda: filter_text(columns),
    }


def show(page: str, *, console=None) -> None:
    """A page as Markdown: rendered (headings, code blocks, tables) on a terminal, the plain text
    otherwise, so `mcptrace help X | less` and `> file` keep the source."""
    if console is None and not sys.stdout.isatty():
        sys.stdout.write(page)
        return
    from rich.console import Console
    from rich.markdown import Markdown

    (console or Console()).print(Markdown(page, code_theme="ansi_dark"))


def run(args: argparse.Namespace) -> int:
    from tracer import help as pages
    from tracer.cli import UsageError

    if not args.topic or args.topic.strip().lower() in ("help", "topics"):
        sys.stdout.write(pages.listing())
        return 0
    topic = pages.resolve(args.topic)
    if topic is not None:
        if sys.stdout.isatty():  # rendered: the tables fit the terminal (inside a code block's margins)
            show(pages.render(topic, tables(min(100, shutil.get_terminal_size().columns - 4))))
        else:
            show(pages.render(topic, tables()))
        return 0
    if re.fullmatch(r"mcp\d{3}", args.topic.strip().lower()):  # a rule id: `mcptrace rules ID`
        from tracer.cli import main

        return main(["rules", args.topic.strip().upper()])
    close = pages.close_matches(args.topic.strip())
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise UsageError(f"unknown help topic {args.topic!r} ({hint}'mcptrace help' lists the topics)")
