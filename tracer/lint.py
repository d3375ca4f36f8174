"""Offline lint: stream inputs through the analyser and hand findings to a reporter.

Memory does not grow with the input: records are read one at a time, analysed messages are dropped
after their findings are reported, and sessions are dropped when their connection closes.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tracer.analyser import Analyser, RuleSet
from tracer.capture import ReadProblem
from tracer.gaps import gap_problem
from tracer.inputs import InputError, OpenInput, open_input
from tracer.model import REC_EVENT as _EVENT
from tracer.model import Analysed, Era, Finding, Severity

_ERA_NAMES = {e: e.value for e in Era}


@dataclass
class LintStats:
    files: int = 0
    records: int = 0
    messages: int = 0
    findings: int = 0
    problems: int = 0
    by_rule: Counter = field(default_factory=Counter)
    by_severity: Counter = field(default_factory=Counter)
    eras: Counter = field(default_factory=Counter)
    formats: dict[str, str] = field(default_factory=dict)
    sessions: dict[str, str] = field(default_factory=dict)  # "file#conn" -> compatibility cell
    seconds: float = 0.0

    def worst(self) -> Severity | None:
        present = [s for s in Severity if self.by_severity.get(s.label)]
        return max(present) if present else None


class Reporter:
    """Receives what lint finds, as it finds it."""

    def start(self, rules: list) -> None: ...
    def file(self, path: str, fmt: str) -> None: ...
    def problem(self, p: ReadProblem) -> None: ...
    def finding(self, f: Finding) -> None: ...
    def end(self, stats: LintStats) -> None: ...


class Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal and the input is large."""

    MIN_BYTES = 20 * 1024 * 1024

    def __init__(self, total_bytes: int, enabled: bool | None = None):
        self.total = total_bytes
        self.enabled = (sys.stderr.isatty() and total_bytes >= self.MIN_BYTES) if enabled is None else enabled
        self.last = 0.0

    def update(self, done_bytes: int, messages: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.last < 0.2:
            return
        self.last = now
        frac = min(1.0, done_bytes / self.total) if self.total else 1.0
        bar = "#" * int(frac * 30)
        sys.stderr.write(f"\rlint [{bar:<30}] {frac * 100:5.1f}%  {messages:,} messages")
        sys.stderr.flush()

    def done(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 70 + "\r")
            sys.stderr.flush()


def lint_paths(
    paths: Iterable[str],
    rules: RuleSet,
    reporter: Reporter,
    *,
    fmt: str | None = None,
    progress: bool | None = None,
    keep: Callable[[Finding], bool] | None = None,
    on_message: Callable[[Analysed], None] | None = None,
    digests: Callable[[tuple[str, int], str], None] | None = None,
    jobs: int = 1,
) -> LintStats:
    """Lint every path; raises InputError (before reporting anything for it) for unreadable input.

    `digests((source, seq), digest)` is told each message's tracer.baseline.message_digest, in
    input order (what a baseline needs; unlike `on_message` it works across processes). With
    `jobs` > 1 big inputs are shared by that many processes (tracer.parallel); the report is the
    same byte for byte."""
    stats = LintStats()
    started = time.perf_counter()
    paths = list(paths)
    if paths.count("-") > 1:  # both would read one stream, each a part of it
        raise InputError("standard input ('-') can be linted once per run")
    opened = []
    for path in paths:  # open all first, so an unreadable input fails before any output
        opened.append(open_input(path, fmt=fmt))
    total = sum(inp.size or 0 for inp in opened)
    bar = Progress(total, progress)
    done_before = 0
    reporter.start(rules.rules)
    current = [""]  # the file being linted

    def emit(f: Finding) -> None:
        if not f.source:  # about the capture as a whole (MCP809...): it still has a file
            f.source = current[0]
        if keep is not None and not keep(f):
            return
        stats.findings += 1
        stats.by_rule[f.rule] += 1
        stats.by_severity[f.severity.label] += 1
        reporter.finding(f)

    def problem(p: ReadProblem) -> None:
        stats.problems += 1
        reporter.problem(p)

    pool = None
    if jobs > 1:
        from tracer.parallel import plan

        tasks = plan(opened, jobs, fmt)
        if any(tasks):  # (else one process lints them all: the pool's modules are not even loaded)
            from tracer.parallel_pool import start_pool

            pool = start_pool(opened, jobs, rules, digests is not None, tasks)
    given = [
        pool is not None and pool.takes(i) for i in range(len(opened))
    ]  # (the pool closed their handles)
    try:
        for i, inp in enumerate(opened):
            path = inp.path
            current[0] = path
            stats.files += 1
            stats.formats[path] = inp.format.name
            reporter.file(path, inp.format.name)
            if pool is not None and pool.takes(i):
                res = pool.merge(i, problem, emit, digests)
                if res.redo_from_line is None:
                    stats.records += res.records
                    stats.messages += res.messages
                    for era, count in res.eras:
                        stats.eras[era] += count
                    _name_sessions(stats, path, res.cells)
                else:  # the shards could not hold: this process goes on where the merge stopped
                    pool.close()
                    pool = None
                    inp = open_input(path, fmt=fmt)
                    _lint_file(
                        inp,
                        rules,
                        stats,
                        emit,
                        problem,
                        bar,
                        done_before,
                        on_message,
                        digests,
                        res.redo_from_line,
                    )
            else:
                if given[i]:  # the pool was to lint it, but stopped at an earlier file
                    inp = open_input(path, fmt=fmt)
                _lint_file(inp, rules, stats, emit, problem, bar, done_before, on_message, digests)
            done_before += inp.size or 0
            bar.update(done_before, stats.messages)
    finally:
        if pool is not None:
            pool.close()
    bar.done()
    stats.seconds = time.perf_counter() - started
    reporter.end(stats)
    return stats


def _name_sessions(stats: LintStats, path: str, cells: Iterable[tuple[str, str]]) -> None:
    """A file's sessions as Analyser names them: a connection name that comes back (a later
    recording in the file) gets "#2", "#3"..."""
    named: dict[str, str] = {}
    for conn, cell in cells:
        key, n = conn, 1
        while key in named:
            n += 1
            key = f"{conn}#{n}"
        named[key] = cell
    for conn, cell in named.items():
        stats.sessions[f"{path}#{conn}"] = cell


def _lint_file(
    inp: OpenInput,
    rules: RuleSet,
    stats: LintStats,
    emit: Callable[[Finding], None],
    problem: Callable[[ReadProblem], None],
    bar: Progress,
    done_before: int,
    on_message: Callable[[Analysed], None] | None,
    digests: Callable[[tuple[str, int], str], None] | None,
    from_line: int = 0,
) -> None:
    """One input in this process. From `from_line` on only (a file whose earlier lines the worker
    pool has reported already): what is about earlier lines is not reported again."""
    path, records = inp.path, inp.records
    analyser = Analyser(rules)
    # The per-record loop runs a million times on a big capture: locals instead of attribute
    # updates, era counts by the Era itself (named once at the end of the file).
    feed = analyser.feed
    n = 0
    messages = stats.messages
    eras: dict[Era, int] = {}  # in order of first appearance, like stats.eras
    quiet = from_line > 0
    if digests is not None:
        from tracer.baseline import message_digest
    for item in records:
        if quiet and item.line >= from_line:
            quiet = False
        if isinstance(item, ReadProblem):
            if not quiet:
                problem(item)
            continue
        n += 1
        if item.type is _EVENT and not quiet:
            gap = gap_problem(item, path)
            if gap is not None:
                problem(gap)
        try:
            a = feed(item)
        except Exception as exc:  # a record this version cannot analyse costs its line, not the report
            if not quiet:
                problem(
                    ReadProblem(
                        item.source or path,
                        item.line,
                        "the analysis could not read this "
                        f"record ({type(exc).__name__}: {str(exc)[:200]}); skipped",
                    )
                )
            continue
        if a.__class__ is Analysed:  # a message record (nearly every one): its analysis itself
            messages += 1
            try:
                eras[a.era] += 1
            except KeyError:
                eras[a.era] = 1
            if quiet:
                continue
            if on_message is not None:  # e.g. a baseline fingerprinting the message's bytes
                on_message(a)
            if digests is not None:
                digests((item.source, item.seq), message_digest(item.raw))
            if a.findings:
                for f in a.findings:
                    emit(f)
            if a.members:
                for member in a.members:
                    for f in member.findings:
                        emit(f)
            if not messages & 0xFFFF:
                bar.update(done_before + inp.position(), messages)
            continue
        if not quiet:  # an HTTP record's findings, a closed session's end-of-session findings
            for ev in a:
                for f in ev.findings:
                    emit(f)
    stats.messages = messages
    for era, count in eras.items():
        stats.eras[_ERA_NAMES[era]] += count  # (Enum.value is a slow descriptor)
    for ev in analyser.finish():
        for f in ev.findings:
            emit(f)
    # (named as each session closed: a session whose end rules raised is still counted)
    for name, cell in analyser.session_cells.items():
        stats.sessions[f"{path}#{name}"] = cell
    stats.records += n


__all__ = ["InputError", "LintStats", "Reporter", "lint_paths"]
