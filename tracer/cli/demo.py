"""`mcptrace demo`: record a bundled demo server in both protocol eras through the stdio tee,
then open the viewer on the capture (or, with --no-ui, print the lint report)."""

from __future__ import annotations

import argparse
import sys

NAME = "demo"
HELP = "record a bundled demo MCP server (a legacy and a modern session) and open the viewer on it"
EXAMPLE = """  mcptrace demo                  # record, then explore: n = next finding, p = partner, / = filter
  mcptrace demo --no-ui          # record and print the lint report instead
  mcptrace demo -o demo.jsonl    # keep the capture where you want it"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="where to write the capture (default: a new file in the captures directory)",
    )
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing -o file (default: the demo's sessions are appended to a capture)",
    )
    p.add_argument("--no-ui", action="store_true", help="print the lint report instead of opening the viewer")


def run(args: argparse.Namespace) -> int:
    from tracer.cli import UsageError
    from tracer.demo.client import DemoError, record_demo
    from tracer.paths import default_capture_path

    if not args.no_ui:
        from tracer.cli.view import check_terminal

        check_terminal()
    from tracer.output import check_output

    try:
        path = args.output or str(default_capture_path("demo"))
    except OSError as exc:
        raise UsageError(f"cannot create the captures directory: {exc.strerror or exc}") from None
    try:  # up front: a bad -o must not cost the user the whole recording first
        check_output(path, overwrite=args.overwrite)
    except OSError as exc:
        raise UsageError(f"cannot write the capture {path}: {exc.strerror or exc}") from None

    def step(text: str) -> None:
        sys.stderr.write(f"mcptrace demo: {text}\n")
        sys.stderr.flush()

    try:
        record_demo(path, on_step=step, overwrite=args.overwrite)
    except (DemoError, OSError) as exc:
        sys.stderr.write(f"mcptrace: error: demo failed: {exc}\n")
        return 1
    step(f"capture written to {path}")
    if args.no_ui:
        return print_report(path)
    from ui.app import McpTraceApp

    McpTraceApp(path).run()
    sys.stderr.write(f"mcptrace demo: the capture stays at {path} (mcptrace view {path})\n")
    return 0


def print_report(path: str) -> int:
    """The lint report of the demo capture on stdout. Exit 0: the violations are the point."""
    from tracer.analyser import RuleSet
    from tracer.lint import lint_paths
    from tracer.report import make_reporter

    reporter = make_reporter("text", sys.stdout, color=sys.stdout.isatty())
    lint_paths([path], RuleSet(), reporter, progress=False)
    return 0
