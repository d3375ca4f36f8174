"""Machine-readable JSON: {"tool", "files", "findings": [...], "problems": [...], "summary"}."""

from __future__ import annotations

from typing import IO

from tracer import __version__
from tracer.capture import ReadProblem
from tracer.lint import LintStats, Reporter
from tracer.model import Finding
from tracer.safejson import dumps_text


def finding_dict(f: Finding, names: dict[str, str]) -> dict:
    d = {
        "rule": f.rule,
        "name": names.get(f.rule, ""),
        "severity": f.severity.label,
        "message": f.message,
        "file": f.source,
        "line": f.line,
        "seq": f.seq,
    }
    if f.path is not None:
        d["path"] = f.path
    if f.related_seq is not None:
        d["related_seq"] = f.related_seq
    if f.offset is not None:
        d["offset"] = f.offset
    return d


class JsonReporter(Reporter):
    def __init__(self, out: IO[str]):
        self.out = out
        self.names: dict[str, str] = {}
        self.first = True
        self.problems: list[dict] = []
        self.files: list[dict] = []

    def start(self, rules: list) -> None:
        self.names = {r.id: r.name for r in rules}
        self.out.write('{"tool": "mcptrace", "version": "%s", "findings": [' % __version__)

    def file(self, path: str, fmt: str) -> None:
        self.files.append({"path": path, "format": fmt})

    def problem(self, p: ReadProblem) -> None:
        self.problems.append({"file": p.source, "line": p.line, "message": p.message, "torn": p.torn})

    def finding(self, f: Finding) -> None:
        self.out.write(("\n  " if self.first else ",\n  ") + dumps_text(finding_dict(f, self.names)))
        self.first = False

    def end(self, stats: LintStats) -> None:
        summary = {
            "files": stats.files,
            "messages": stats.messages,
            "findings": stats.findings,
            "by_severity": dict(stats.by_severity),
            "by_rule": dict(sorted(stats.by_rule.items())),
            "eras": dict(stats.eras),
            "sessions": stats.sessions,
        }
        self.out.write("\n],\n")
        self.out.write('"files": %s,\n' % dumps_text(self.files))
        self.out.write('"problems": %s,\n' % dumps_text(self.problems))
        self.out.write('"summary": %s\n}\n' % dumps_text(summary))
