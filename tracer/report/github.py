"""GitHub Actions workflow commands: one annotation per finding, shown on the file and line in the
pull request. Errors are `::error`, warnings `::warning`, infos `::notice`.

    ::error file=caps/session.jsonl,line=12,title=MCP203 response-id-unknown::id 7 matches no request...
"""

from __future__ import annotations

from typing import IO

from tracer.capture import ReadProblem
from tracer.lint import LintStats, Reporter
from tracer.model import Finding, Severity
from tracer.safejson import terminal_text

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """The message part of a workflow command (after `::`); what the log viewer would obey (an ESC
    sequence, a bidi override) is written as its escape, a line break as GitHub's `%0A`."""
    text = terminal_text(text, keep="\r\n")
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (file=, title=): also `:` and `,`, which separate properties."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(command: str, message: str, *, file: str = "", line: int = 0, title: str = "") -> str:
    props = []
    if file:
        props.append(f"file={escape_property(file)}")
    if line:
        props.append(f"line={line}")
    if title:
        props.append(f"title={escape_property(title)}")
    head = f"::{command} {','.join(props)}" if props else f"::{command}"
    return f"{head}::{escape_data(message)}\n"


class GithubReporter(Reporter):
    def __init__(self, out: IO[str]):
        self.out = out
        self.names: dict[str, str] = {}

    def start(self, rules: list) -> None:
        self.names = {r.id: r.name for r in rules}

    def problem(self, p: ReadProblem) -> None:
        self.out.write(
            annotation(
                "warning" if p.torn else "error",
                f"capture problem: {p.message}",
                file=p.source,
                line=p.line,
                title="mcptrace capture",
            )
        )

    def finding(self, f: Finding) -> None:
        details = [f"seq {f.seq}"] if f.seq else []
        if f.path:
            details.append(f.path)
        text = f.message + (f" ({', '.join(details)})" if details else "")
        title = f"{f.rule} {self.names.get(f.rule, '')}".strip()
        self.out.write(annotation(COMMANDS[f.severity], text, file=f.source, line=f.line, title=title))

    def end(self, stats: LintStats) -> None:
        sev = ", ".join(f"{stats.by_severity.get(k, 0)} {k}s" for k in ("error", "warning", "info"))
        self.out.write(f"mcptrace: {stats.messages:,} messages in {stats.files} file(s); {sev}\n")
