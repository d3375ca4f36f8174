"""The depth behind the README, shipped in the package: topic pages (tracer/help/topics/*.md,
package data) that `mcptrace help TOPIC` prints, and `mcptrace help` lists.

A page's first line is `# TOPIC: one line on what it covers` (the listing shows that line). A line
that is exactly `{{table:NAME}}` is replaced by a table rendered from the code that owns it (the
viewer's keys, the filter language), so a page cannot drift from what the program does.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from importlib import resources

# Other names a reader may try, so `mcptrace help COMMAND` works for every command.
ALIASES = {
    "demo": "view",
    "tee": "stdio",
    "wrap": "hosts",
    "unwrap": "hosts",
    "doctor": "hosts",
    "http": "proxy",
    "mitmproxy": "proxy",
    "addon": "proxy",
    "baseline": "ci",
    "sarif": "ci",
    "junit": "ci",
    "github": "ci",
    "otel": "export",
    "otlp": "export",
    "har": "export",
    "capture": "capture-format",
    "format": "capture-format",
    "plugin": "pytest",
    "fixtures": "develop",
    "bench": "develop",
}


def resolve(name: str) -> str | None:
    """The topic a name means (a topic, or an alias of one), or None."""
    name = name.strip().lower()
    topic = ALIASES.get(name, name)
    return topic if topic in names() else None


def _files():
    return resources.files("tracer.help").joinpath("topics")  # package data (pyproject.toml)


def names() -> list[str]:
    """Every topic, in the listing's order (the ORDER file, then any other page)."""
    pages = sorted(f.name[:-3] for f in _files().iterdir() if f.name.endswith(".md"))
    order = [n for n in _files().joinpath("ORDER").read_text(encoding="utf-8").split() if n in pages]
    return order + [n for n in pages if n not in order]


def raw(name: str) -> str:
    return _files().joinpath(f"{name}.md").read_text(encoding="utf-8")


def summary(name: str) -> str:
    """The page's one line: its title after `# TOPIC: `."""
    first = raw(name).split("\n", 1)[0]
    return first.lstrip("# ").split(": ", 1)[-1].strip()


def render(name: str, tables: Mapping[str, Callable[[], str]]) -> str:
    """The page with its generated tables filled in (inside a fenced block, so they stay aligned).
    `tables` maps a table's name to its renderer: the CLI passes them, since one belongs to the UI
    (the viewer's keys) and the core never imports the UI."""
    out = []
    for line in raw(name).splitlines():
        if line.startswith("{{table:") and line.endswith("}}"):
            table = tables[line[len("{{table:") : -2]]()
            out.append("```\n" + table.rstrip("\n") + "\n```")
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def listing() -> str:
    width = max(len(n) for n in names()) + 2
    lines = ["mcptrace help TOPIC prints one of these pages (the rule catalog is `mcptrace rules`):", ""]
    lines += [f"  {n:<{width}}{summary(n)}" for n in names()]
    lines += [
        "",
        "A command's name works too (mcptrace help wrap), and a rule id (mcptrace help MCP310).",
        "Examples write `mcptrace`: from a checkout set up as the README says, that is .venv/bin/mcptrace.",
    ]
    return "\n".join(lines) + "\n"


def close_matches(name: str) -> list[str]:
    close = difflib.get_close_matches(name.lower(), names() + list(ALIASES), n=3, cutoff=0.5)
    return list(dict.fromkeys(resolve(c) or c for c in close))
