"""`path:line: MCPnnn [severity] message`, one line per finding, then a summary by rule with each
rule's spec page (the help a reader needs once per rule, not on every line)."""

from __future__ import annotations

from typing import IO

from tracer.capture import ReadProblem
from tracer.catalog.docs import spec_links
from tracer.lint import LintStats, Reporter
from tracer.model import Finding
from tracer.safejson import terminal_text

_COLORS = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
_RESET = "\x1b[0m"


def location(f: Finding) -> str:
    where = f"{f.source}:{f.line}" if f.line else (f.source or "-")
    return where


class TextReporter(Reporter):
    def __init__(self, out: IO[str], *, color: bool = False):
        self.out = out
        self.color = color
        self.names: dict[str, str] = {}
        self.links: dict[str, str] = {}

    def start(self, rules: list) -> None:
        self.names = {r.id: r.name for r in rules}
        self.links = {r.id: next(iter(spec_links(r)), "") for r in rules}

    def problem(self, p: ReadProblem) -> None:
        self.out.write(terminal_text(f"{p.source}:{p.line}: capture problem: {p.message}") + "\n")

    def finding(self, f: Finding) -> None:
        sev = f.severity.label
        if self.color:
            sev = f"{_COLORS[sev]}{sev}{_RESET}"
        extra = []
        if f.seq:
            extra.append(f"seq {f.seq}")
        if f.offset is not None:
            extra.append(f"offset {f.offset}")
        if f.path:
            extra.append(f.path)
        tail = f" ({', '.join(extra)})" if extra else ""
        # (messages quote what peers sent: a lone surrogate must not kill a UTF-8 stdout, an ESC
        # must not restyle the terminal, a newline must not forge a finding of its own)
        self.out.write(f"{terminal_text(location(f))}: {f.rule} [{sev}] {terminal_text(f.message + tail)}\n")

    def end(self, stats: LintStats) -> None:
        out = self.out
        if stats.findings:
            out.write("\nFindings by rule:\n")
            for rule_id, n in sorted(stats.by_rule.items()):
                link = self.links.get(rule_id, "")
                out.write(
                    f"  {rule_id} {self.names.get(rule_id, ''):<40} {n:>8}{'  ' + link if link else ''}\n"
                )
        eras = ", ".join(f"{k} {v}" for k, v in sorted(stats.eras.items())) or "none"
        sev = ", ".join(f"{stats.by_severity.get(k, 0)} {k}s" for k in ("error", "warning", "info"))
        out.write(
            f"\n{stats.messages:,} messages in {stats.files} file(s) ({eras}); {sev}"
            + (
                f"; {stats.problems} read problem(s): unreadable lines or gaps the capture records"
                if stats.problems
                else ""
            )
            + "\n"
        )
