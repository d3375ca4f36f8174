"""`mcptrace lint`: check recorded MCP traffic against the spec, offline, for CI."""

from __future__ import annotations

import argparse
import sys

NAME = "lint"
# The exit codes a CI step tells apart (as ruff, eslint and shellcheck do): findings are the
# traffic's fault, a read problem (a broken or torn capture line, a HAR cut short) the recording's,
# and 2 (usage, an input that cannot be read at all: tracer.cli) means no report was made.
EXIT_CLEAN, EXIT_FINDINGS, EXIT_READ_IN_PART = 0, 1, 3
HELP = "check recorded MCP traffic (captures, NDJSON, host logs, HAR, .mitm) against the spec"
EXAMPLE = """  mcptrace lint capture.jsonl
  mcptrace lint --format sarif -o lint.sarif logs/*.jsonl
  mcptrace lint --select MCP1,MCP2 --ignore MCP209 --fail-on warning ~/Library/Logs/Claude/mcp.log
  mcptrace lint --format github --baseline mcptrace-baseline.json captures/*.jsonl"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    from tracer.report import EXTRA_FORMATS, FORMATS

    p.add_argument("paths", nargs="*", metavar="PATH", help="inputs; the format is detected from content")
    p.add_argument(
        "--format",
        "-f",
        default=None,
        choices=list(FORMATS) + sorted(EXTRA_FORMATS),
        help="report format (default: text, or the project config's `format`)",
    )
    p.add_argument("--output", "-o", metavar="FILE", help="write the report here instead of stdout")
    p.add_argument(
        "--select",
        action="append",
        metavar="IDS",
        help="only these rule ids or prefixes, comma-separated (MCP1,MCP310)",
    )
    p.add_argument("--ignore", action="append", metavar="IDS", help="skip these rule ids or prefixes")
    p.add_argument(
        "--fail-on",
        default=None,
        choices=["info", "warning", "error", "never"],
        help="exit 1 when a finding is at or above this severity (default: error); otherwise exit 3 "
        "when an input was read only in part (a broken or torn line), else 0; never: always 0",
    )
    p.add_argument(
        "--show-config",
        action="store_true",
        help="print the effective settings (project config [tool.mcptrace] / mcptrace.toml, then "
        "these flags) and where each came from, then exit",
    )
    p.add_argument("--no-config", action="store_true", help="ignore the project config file")
    p.add_argument(
        "--input-format", metavar="NAME", help="skip detection: capture, ndjson, hostlog, har, mitm"
    )
    p.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        metavar="N",
        help="processes to share big inputs among (default: every core; 1: this process only); "
        "the report is the same whatever N",
    )
    p.add_argument(
        "--baseline",
        metavar="FILE",
        help="suppress the findings this baseline lists; its entries that no longer occur are "
        "reported as stale (on stderr)",
    )
    p.add_argument(
        "--write-baseline",
        metavar="FILE",
        help="write every finding of this run to FILE as a baseline (exit 0 once written)",
    )


def run(args: argparse.Namespace) -> int:
    from tracer.analyser import RuleSet
    from tracer.cli import UsageError
    from tracer.cli.inputs import register_optional_inputs
    from tracer.cli.lint_config import finding_filter, settings_for, show_config
    from tracer.lint import InputError, lint_paths
    from tracer.model import Severity
    from tracer.report import make_reporter
    from tracer.rules import SelectionError, select_rules

    settings = settings_for(args)  # the project config under the flags; args now hold the effective values
    if args.show_config:
        show_config(settings, sys.stdout)
        return 0
    if not args.paths:
        raise UsageError("give at least one PATH to lint (see 'mcptrace lint --help')")
    register_optional_inputs()
    try:
        rules = select_rules(args.select, args.ignore)
    except SelectionError as exc:
        from_file = [
            k for k in ("select", "ignore") if settings.sources[k] not in ("default", "command line")
        ]
        raise UsageError(f"{settings.where(from_file[0])}: {exc}" if from_file else str(exc)) from None
    from tracer.parallel import default_jobs

    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        raise UsageError(f"--jobs {args.jobs}: give 1 or more processes")
    baseline = _baseline(args)
    keep = finding_filter(settings, baseline.keep if baseline else None)
    out = sys.stdout
    if args.output:
        try:
            out = open(args.output, "w", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror}") from None
    try:
        reporter = make_reporter(args.format, out, color=out.isatty() and args.format == "text")
        try:
            stats = lint_paths(
                args.paths,
                RuleSet(rules),
                reporter,
                fmt=args.input_format,
                progress=False if args.no_progress else None,
                keep=keep,
                digests=baseline.digests.put if baseline else None,
                jobs=jobs,
            )
        except InputError as exc:
            sys.stderr.write(f"mcptrace: error: {exc}\n")
            return 2
        except Exception as exc:
            # (a bug, or a worker killed from outside: --jobs 1 still works). The pool's module is
            # loaded only when a pool started, so a run without one never imports it to ask.
            pool = sys.modules.get("tracer.parallel_pool")
            if pool is None or not isinstance(exc, pool.WorkerFailed):
                raise
            sys.stderr.write(f"mcptrace: error: {exc}; try --jobs 1\n")
            return 2
    finally:
        if out is not sys.stdout:
            out.close()
    if baseline is not None and _finish_baseline(args, baseline):
        return 0
    if args.fail_on == "never":  # (a report for its own sake: neither findings nor read problems fail)
        return EXIT_CLEAN
    worst = stats.worst()
    if worst is not None and worst >= Severity.parse(args.fail_on):
        return EXIT_FINDINGS  # (first: the run fails either way, and the report names the problems too)
    return EXIT_READ_IN_PART if stats.problems else EXIT_CLEAN


def _baseline(args: argparse.Namespace):
    """The Baseline for --baseline / --write-baseline, or None."""
    if not args.baseline and not args.write_baseline:
        return None
    from tracer.baseline import Baseline, BaselineError, load_baseline
    from tracer.cli import UsageError

    if not args.baseline:
        return Baseline()
    try:
        return load_baseline(args.baseline)
    except BaselineError as exc:
        raise UsageError(str(exc)) from None


def _finish_baseline(args: argparse.Namespace, baseline) -> bool:
    """Report suppressed and stale entries, write the new baseline. True: the run wrote one."""
    from tracer.cli import UsageError

    if args.baseline:
        stale = baseline.stale(args.paths)
        sys.stderr.write(
            f"mcptrace: baseline {args.baseline}: {baseline.suppressed} known finding(s) "
            f"suppressed, {sum(e.count for e in stale)} stale\n"
        )
        for e in stale:
            times = f" (x{e.count})" if e.count > 1 else ""
            sys.stderr.write(
                f"mcptrace: stale baseline entry {e.fingerprint}: {e.rule} in {e.file or '-'}"
                f"{times}: {e.message}\n"
            )
    if not args.write_baseline:
        return False
    try:
        n = baseline.write(args.write_baseline)
    except OSError as exc:
        raise UsageError(f"cannot write {args.write_baseline}: {exc.strerror}") from None
    sys.stderr.write(
        f"mcptrace: wrote {n} baseline entr{'y' if n == 1 else 'ies'} to {args.write_baseline}\n"
    )
    return True
