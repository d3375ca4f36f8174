"""`McpCapture`: one server session recorded by mcptrace for a test, and its lint findings.

The fixtures of tracer/testing/plugin.py make these; nothing here needs pytest, so a plain script
can use it too:

    cap = McpCapture.stdio(["python", "server.py"], path="cap.jsonl")
    ... run any client with cap.command ...
    cap.assert_clean(fail_on="warning")
"""

from __future__ import annotations

import io
import os
import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

BOUND_S = 60  # upper bound for a helper process to start or stop; healthy ones take a second
_SEVERITIES = ("info", "warning", "error")


class McpSpecWarning(UserWarning):
    """A finding below the fail-on threshold, raised as a warning so `filterwarnings = error`
    (or `-W error::tracer.testing.McpSpecWarning`) can make it fail the test."""


class McpCaptureError(RuntimeError):
    """A helper process (proxy, mock) did not start."""


def _tracer_argv(*args: str) -> list[str]:
    # The interpreter running the tests, by absolute path: a client that spawns this with a
    # reduced environment (the SDK passes only HOME, PATH, ...) still finds mcptrace.
    return [sys.executable, "-m", "tracer", *args]


def _ids(value: str | Iterable[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


@dataclass
class LintResult:
    findings: list
    problems: list[str]


def lint_capture(
    path: str | os.PathLike, *, select=None, ignore=None, baseline: str | None = None
) -> LintResult:
    """Every finding `mcptrace lint` reports for PATH, with these rule selections and baseline."""
    from tracer.analyser import RuleSet
    from tracer.cli.inputs import register_optional_inputs
    from tracer.lint import Reporter, lint_paths
    from tracer.rules import select_rules

    register_optional_inputs()
    found: list = []
    problems: list[str] = []

    class Collect(Reporter):
        def finding(self, f) -> None:
            found.append(f)

        def problem(self, p) -> None:
            problems.append(f"{p.source}:{p.line}: capture problem: {p.message}")

    keep = on_message = None
    if baseline:
        from tracer.baseline import load_baseline

        base = load_baseline(baseline)
        keep, on_message = base.keep, base.on_message
    rules = RuleSet(select_rules(_ids(select), _ids(ignore)))
    lint_paths([str(path)], rules, Collect(), progress=False, keep=keep, on_message=on_message)
    return LintResult(found, problems)


def format_findings(findings: list) -> str:
    """The findings as `mcptrace lint` prints them, one line each."""
    from tracer.report.text import TextReporter

    out = io.StringIO()
    reporter = TextReporter(out)
    for f in findings:
        reporter.finding(f)
    return out.getvalue()


def at_or_above(findings: list, fail_on: str) -> tuple[list, list]:
    """(findings at or above FAIL_ON, the others); `never` puts every finding in the second list."""
    if fail_on == "never":
        return [], list(findings)
    if fail_on not in _SEVERITIES:
        raise ValueError(f"fail_on must be one of info, warning, error, never (got {fail_on!r})")
    from tracer.model import Severity

    threshold = Severity.parse(fail_on)
    high = [f for f in findings if f.severity >= threshold]
    return high, [f for f in findings if f.severity < threshold]


class _Lines:
    """A child's stream read by a thread, so a wait for one line has a bound."""

    def __init__(self, stream) -> None:
        self.q: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in iter(stream.readline, ""):
            self.q.put(line)
        self.q.put("")

    def wait_for(self, pattern: str, what: str) -> re.Match:
        rx = re.compile(pattern)
        while True:
            try:
                line = self.q.get(timeout=BOUND_S)
            except queue.Empty:
                raise McpCaptureError(f"{what} said nothing for {BOUND_S}s: {self.seen}") from None
            if line == "":
                raise McpCaptureError(f"{what} ended before it was ready: {' / '.join(self.seen)}")
            self.seen.append(line.rstrip("\n"))
            m = rx.search(line)
            if m:
                return m


def _stop(proc: subprocess.Popen) -> None:
    """Ctrl-C (how a user stops the proxy and the mock), then a bounded wait, then SIGKILL."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


@dataclass
class McpCapture:
    """A recorded MCP session: where a client connects (`command` or `url`), the capture file
    (`path`), and its findings (`lint()`, `assert_clean()`)."""

    path: Path
    name: str
    command: list[str] | None = None
    url: str | None = None
    env: dict[str, str] | None = None  # for a stdio client: the server's environment (None: inherit)
    select: list[str] | None = None
    ignore: list[str] | None = None
    baseline: str | None = None
    _procs: list[subprocess.Popen] = field(default_factory=list, repr=False)

    # -- starting ------------------------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        argv: list[str],
        *,
        path: str | os.PathLike,
        name: str | None = None,
        env: dict[str, str] | None = None,
    ) -> McpCapture:
        """The server ARGV behind the tee; nothing runs until a client starts `.command`."""
        from tracer.paths import label_for_command

        if not argv or not all(isinstance(a, str) for a in argv):
            raise TypeError("mcp_stdio needs the server command as a non-empty list of strings")
        label = name or label_for_command(list(argv))
        command = _tracer_argv("stdio", "-q", "-o", str(path), "--name", label, "--", *argv)
        merged = None if env is None else {**os.environ, **env}
        return cls(Path(path), label, command=command, env=merged)

    @classmethod
    def http(cls, upstream: str, *, path: str | os.PathLike, name: str | None = None) -> McpCapture:
        """`mcptrace proxy` in front of the Streamable HTTP server at UPSTREAM; `.url` is the proxy's."""
        if not isinstance(upstream, str) or not re.match(r"^https?://", upstream):
            raise ValueError(f"mcp_http needs an http:// or https:// URL, got {upstream!r}")
        label = name or "http"
        cap = cls(Path(path), label)
        cap.url = cap._start(
            _tracer_argv(
                "proxy",
                "--upstream",
                upstream,
                "--listen",
                "127.0.0.1:0",
                "-o",
                str(path),
                "--label",
                label,
                "--no-ui",
            ),
            r"give the host this URL: (\S+)",
            "mcptrace proxy",
            stream="stderr",
        )
        return cap

    @classmethod
    def mock(
        cls,
        capture: str | os.PathLike,
        *,
        path: str | os.PathLike,
        transport: str = "stdio",
        name: str | None = None,
    ) -> McpCapture:
        """The server side of CAPTURE served by `mcptrace mock`, with the new traffic recorded."""
        if transport not in ("stdio", "http"):
            raise ValueError(f"transport must be 'stdio' or 'http', got {transport!r}")
        label = name or "mock-" + Path(capture).stem
        if transport == "stdio":
            return cls.stdio([*_tracer_argv("mock", "-q", str(capture))], path=path, name=label)
        cap = cls(Path(path), label)
        mock_url = cap._start(
            _tracer_argv("mock", "-q", str(capture), "--listen", "127.0.0.1:0"),
            r"^(http://\S+)",
            "mcptrace mock",
            stream="stdout",
        )
        try:
            cap.url = cap._start(
                _tracer_argv(
                    "proxy",
                    "--upstream",
                    mock_url,
                    "--listen",
                    "127.0.0.1:0",
                    "-o",
                    str(path),
                    "--label",
                    label,
                    "--no-ui",
                ),
                r"give the host this URL: (\S+)",
                "mcptrace proxy",
                stream="stderr",
            )
        except McpCaptureError:
            cap.close()
            raise
        return cap

    def _start(self, argv: list[str], ready: str, what: str, *, stream: str) -> str:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self._procs.append(proc)
        lines = _Lines(proc.stderr if stream == "stderr" else proc.stdout)
        try:
            return lines.wait_for(ready, what).group(1)
        except McpCaptureError:
            self.close()
            raise

    def close(self) -> None:
        """Stop the helper processes (the proxy last, so it records everything up to the end)."""
        while self._procs:
            _stop(self._procs.pop())

    # -- results -------------------------------------------------------------------------------

    def lint(self, *, select=None, ignore=None, baseline: str | None = None) -> list:
        """The findings (tracer.model.Finding) of the capture so far."""
        if not self.path.exists():
            return []
        return lint_capture(
            self.path,
            select=select if select is not None else self.select,
            ignore=ignore if ignore is not None else self.ignore,
            baseline=baseline if baseline is not None else self.baseline,
        ).findings

    def assert_clean(self, select=None, ignore=None, fail_on: str = "error") -> None:
        """AssertionError listing every finding at or above FAIL_ON, printed like `mcptrace lint`."""
        high, _ = at_or_above(self.lint(select=select, ignore=ignore), fail_on)
        if high:
            raise AssertionError(
                f"{len(high)} MCP finding(s) at or above {fail_on} in {self.path}:\n" + format_findings(high)
            )

    def stderr_lines(self) -> list[str]:
        """What the server wrote on stderr (stdio captures record it line by line)."""
        from tracer.capture import read_capture
        from tracer.model import Record, RecordType

        if not self.path.exists():
            return []
        with open(self.path, "rb") as fh:
            return [
                r.text.rstrip("\n")
                for r in read_capture(fh, str(self.path))
                if isinstance(r, Record) and r.type is RecordType.STDERR
            ]


__all__ = [
    "LintResult",
    "McpCapture",
    "McpCaptureError",
    "McpSpecWarning",
    "at_or_above",
    "format_findings",
    "lint_capture",
]
