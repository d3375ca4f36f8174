"""JUnit XML, the report format CI servers (GitLab, Jenkins, Azure, CircleCI...) show as test results.

One `<testsuite>` per input file. Each error or warning is a `<testcase>` with a `<failure>` (its
`type` is the severity); infos are passing test cases that carry their text in `<system-out>`; a
file without findings is one passing test case, so clean inputs show up as passed. Unreadable
capture lines are `<error>`s. Findings are kept per file until the end (the counts come first in
the XML).
"""

from __future__ import annotations

import re
from typing import IO
from xml.sax.saxutils import escape, quoteattr

from tracer.capture import ReadProblem
from tracer.lint import LintStats, Reporter
from tracer.model import Finding, Severity
from tracer.safejson import safe_text

# Characters XML 1.0 does not allow, even escaped (traffic may carry any of them).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", safe_text(text))


def _attr(text: str) -> str:
    return quoteattr(_clean(text))


class _Suite:
    __slots__ = ("cases", "errors", "failures", "fmt", "name")

    def __init__(self, name: str, fmt: str = ""):
        self.name = name
        self.fmt = fmt
        self.cases: list[str] = []
        self.failures = 0
        self.errors = 0


class JunitReporter(Reporter):
    def __init__(self, out: IO[str]):
        self.out = out
        self.names: dict[str, str] = {}
        self.suites: dict[str, _Suite] = {}

    def _suite(self, source: str) -> _Suite:
        suite = self.suites.get(source)
        if suite is None:
            suite = self.suites[source] = _Suite(source or "-")
        return suite

    def start(self, rules: list) -> None:
        self.names = {r.id: r.name for r in rules}

    def file(self, path: str, fmt: str) -> None:
        self._suite(path).fmt = fmt

    def problem(self, p: ReadProblem) -> None:
        suite = self._suite(p.source)
        suite.errors += 1
        suite.cases.append(
            f"    <testcase classname={_attr('mcptrace.' + suite.name)} name={_attr(f'line {p.line}: capture')}>\n"
            f'      <error type="capture" message={_attr(p.message)}/>\n    </testcase>\n'
        )

    def finding(self, f: Finding) -> None:
        suite = self._suite(f.source)
        where = f"line {f.line}" if f.line else "capture"
        name = f"{f.rule} {self.names.get(f.rule, '')} ({where}{', seq ' + str(f.seq) if f.seq else ''})"
        details = "\n".join(
            x
            for x in (
                f"{f.source}:{f.line}" if f.line else f.source,
                f"seq {f.seq}" if f.seq else "",
                f"path {f.path}" if f.path else "",
                f"related seq {f.related_seq}" if f.related_seq else "",
            )
            if x
        )
        head = f"    <testcase classname={_attr('mcptrace.' + suite.name)} name={_attr(name)}>\n"
        if f.severity >= Severity.WARNING:
            suite.failures += 1
            body = (
                f'      <failure type="{f.severity.label}" message={_attr(f.message)}>'
                f"{escape(_clean(details))}</failure>\n"
            )
        else:
            body = f"      <system-out>{escape(_clean(f.message))}</system-out>\n"
        suite.cases.append(head + body + "    </testcase>\n")

    def end(self, stats: LintStats) -> None:
        out = self.out
        tests = sum(max(1, len(s.cases)) for s in self.suites.values())
        failures = sum(s.failures for s in self.suites.values())
        errors = sum(s.errors for s in self.suites.values())
        out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
        out.write(
            f'<testsuites name="mcptrace" tests="{tests}" failures="{failures}" errors="{errors}" '
            f'time="{stats.seconds:.3f}">\n'
        )
        for suite in self.suites.values():
            cases = suite.cases or [
                f'    <testcase classname={_attr("mcptrace." + suite.name)} name="no findings"/>\n'
            ]
            out.write(
                f'  <testsuite name={_attr(suite.name)} tests="{len(cases)}" failures="{suite.failures}" '
                f'errors="{suite.errors}">\n'
            )
            if suite.fmt:
                out.write(
                    f'    <properties><property name="input-format" value={_attr(suite.fmt)}/></properties>\n'
                )
            out.writelines(cases)
            out.write("  </testsuite>\n")
        out.write("</testsuites>\n")
