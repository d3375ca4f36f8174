"""Rule documentation rendered from the registry: the tables `mcptrace rules` prints (text and
Markdown), one rule explained (`mcptrace rules ID`: spec source and pages, definition site, cases,
a failing mini-session), and the spec links every report uses (`spec_links`).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterable
from pathlib import Path

from tracer.catalog.registry import Rule

# the markers of the rule table the README once held: it must hold no copy of the catalog now
# (`mcptrace rules` renders it; tests/test_readme_rules.py)
START, END = "<!-- rules:start -->", "<!-- rules:end -->"
# Per-rule cases live beside the package in a source checkout (they are not installed).
CASES_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "rules"
_EXAMPLE = re.compile(r"(?:^|\s)Example:\s*(.+?)(?=\n\s*\n|\Z)", re.S)


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


def docstring_example(r: Rule) -> str | None:
    m = _EXAMPLE.search(r.doc)
    return " ".join(m.group(1).split()) if m else None


def failing_case(rule_id: str) -> tuple[str, dict] | None:
    """(file name, case) of the first failing case in fixtures/rules/<ID>.yaml, when present."""
    path = CASES_DIR / f"{rule_id}.yaml"
    if not path.is_file():
        return None
    import yaml

    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    for case in doc.get("cases", []) if isinstance(doc, dict) else ():
        if case.get("fires") not in (False, 0, None):
            return f"fixtures/rules/{path.name}", case
    return None


def _entry_line(i: int, entry: dict, fires_at: set[int], width: int = 150) -> str:
    key = next((k for k in ("c2s", "s2c", "c2s_raw", "s2c_raw", "c2s_b64", "s2c_b64") if k in entry), None)
    if key is not None:
        arrow = "→" if key.startswith("c2s") else "←"
        value = entry[key]
        text = (
            value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        )
    else:  # an event, a stderr line...
        arrow, text = "·", json.dumps({k: v for k, v in entry.items() if k not in ("t_ms", "conn")})
    if len(text) > width:
        text = text[: width - 1] + "…"
    mark = "   ◀ fires here" if i in fires_at else ""
    return f"    {i:>2} {arrow} {text}{mark}"


def spec_links(r: Rule) -> list[str]:
    """The pages a rule's spec reference names (modelcontextprotocol.io, or JSON-RPC), in order,
    without repeats: the one rendering `mcptrace rules`, SARIF (helpUri), the text report's
    summary and the viewer's finding detail use."""
    return list(r.links)


def definition_site(r: Rule) -> str:
    """Where the rule's function is defined, as `path:line` relative to the source tree."""
    fn = inspect.unwrap(r.fn)
    try:
        path = Path(inspect.getsourcefile(fn) or "")
        line = inspect.getsourcelines(fn)[1]
    except (OSError, TypeError):
        return "(source not available)"
    root = Path(__file__).resolve().parents[2]
    try:
        path = path.resolve().relative_to(root)
    except ValueError:
        pass
    return f"{path}:{line}"


def explain(r: Rule) -> str:
    body = "\n\n".join(p for p in r.doc.split("\n\n") if not p.lstrip().startswith("Example:"))
    cases = CASES_DIR / f"{r.id}.yaml"
    out = [
        f"{r.id} {r.name}",
        f"  severity: {r.severity.label}    versions: {r.versions_label}    scope: {r.scope}",
        f"  source:   {r.spec}",
        *(f"  spec:     {url}" for url in spec_links(r)),
        f"  defined:  {definition_site(r)}",
        f"  cases:    {'fixtures/rules/' + cases.name if cases.is_file() else '(none)'}",
        "",
        "\n".join("  " + line if line else "" for line in body.splitlines()),
    ]
    example = docstring_example(r)
    if example:
        out += ["", f"  Fails on: {example}"]
    found = failing_case(r.id)
    if found is not None:
        where, case = found
        at = set(case.get("at") or ())
        out += ["", f"  Failing mini-session ({where}: {case.get('name', '')}):"]
        out += [_entry_line(i, e, at) for i, e in enumerate(case.get("messages", []), 1)]
    return "\n".join(out) + "\n"
