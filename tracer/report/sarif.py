"""SARIF 2.1.0: `runs[0].results[]` with ruleId, level and a file/line location; the selected rules
are listed in `runs[0].tool.driver.rules`."""

from __future__ import annotations

from typing import IO

from tracer import __version__
from tracer.capture import ReadProblem
from tracer.catalog.docs import spec_links
from tracer.catalog.specref import SPEC_SITE
from tracer.lint import LintStats, Reporter
from tracer.model import Finding, Severity
from tracer.safejson import dumps_text

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def rule_descriptor(r) -> dict:
    links = spec_links(r)
    out = {
        "id": r.id,
        "name": r.name,
        "shortDescription": {"text": r.summary or r.name},
        "fullDescription": {"text": r.doc or r.name},
        "help": {"text": f"Source: {r.spec}"},
        "defaultConfiguration": {"level": LEVELS[r.severity]},
        "properties": {"versions": r.versions_label, "scope": r.scope, "spec": r.spec},
    }
    if links:
        out["helpUri"] = links[0]
    return out


def _location(source: str, line: int) -> dict:
    loc: dict = {"physicalLocation": {"artifactLocation": {"uri": source or "-"}}}
    if line:
        loc["physicalLocation"]["region"] = {"startLine": line}
    return loc


class SarifReporter(Reporter):
    def __init__(self, out: IO[str]):
        self.out = out
        self.first = True
        self.index: dict[str, int] = {}
        self.notifications: list[dict] = []

    def start(self, rules: list) -> None:
        self.index = {r.id: i for i, r in enumerate(rules)}
        driver = {
            "name": "mcptrace",
            "version": __version__,
            "informationUri": SPEC_SITE,
            "rules": [rule_descriptor(r) for r in rules],
        }
        self.out.write('{"$schema": "%s", "version": "2.1.0", "runs": [{"tool": {"driver": ' % SARIF_SCHEMA)
        self.out.write(dumps_text(driver))
        self.out.write('}, "results": [')

    def problem(self, p: ReadProblem) -> None:
        self.notifications.append(
            {
                "level": "warning" if p.torn else "error",
                "message": {"text": p.message},
                "locations": [_location(p.source, p.line)],
            }
        )

    def finding(self, f: Finding) -> None:
        result = {
            "ruleId": f.rule,
            "level": LEVELS[f.severity],
            "message": {"text": f.message},
            "locations": [_location(f.source, f.line)],
            "properties": {"seq": f.seq},
        }
        if f.rule in self.index:
            result["ruleIndex"] = self.index[f.rule]
        if f.path:
            result["properties"]["jsonPath"] = f.path
        if f.offset is not None:
            result["properties"]["byteOffset"] = f.offset
        self.out.write(("\n" if self.first else ",\n") + dumps_text(result))
        self.first = False

    def end(self, stats: LintStats) -> None:
        invocation = {"executionSuccessful": True, "toolExecutionNotifications": self.notifications}
        self.out.write('\n], "invocations": [%s]}]}\n' % dumps_text(invocation))
