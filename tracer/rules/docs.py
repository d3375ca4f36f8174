"""Rule documentation, rendered from the registry (the README's rule table is generated from here)."""

from __future__ import annotations

from collections.abc import Iterable

from tracer.rules.registry import Rule


def table_text(rules: Iterable[Rule]) -> str:
    lines = [f"{'ID':<7} {'SEVERITY':<8} {'VERSIONS':<14} NAME"]
    for r in rules:
        lines.append(f"{r.id:<7} {r.severity.label:<8} {r.versions_label:<14} {r.name}")
    return "\n".join(lines) + "\n"


def table_markdown(rules: Iterable[Rule]) -> str:
    lines = ["| ID | Name | Severity | Versions | What it flags |", "| --- | --- | --- | --- | --- |"]
    for r in rules:
        summary = r.summary.replace("|", "\\|")
        lines.append(f"| {r.id} | {r.name} | {r.severity.label} | {r.versions_label} | {summary} |")
    return "\n".join(lines) + "\n"


def explain(r: Rule) -> str:
    return (
        f"{r.id} {r.name}\n"
        f"  severity: {r.severity.label}    versions: {r.versions_label}    scope: {r.scope}\n"
        f"  source:   {r.spec}\n\n"
        + "\n".join("  " + line if line else "" for line in r.doc.splitlines())
        + "\n"
    )
