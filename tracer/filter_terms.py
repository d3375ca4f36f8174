"""The filter language's terms, written once: the viewer's help screen, its filter bar's hint, the
`mcptrace help filter` page and the parser's list of fields all come from this table, and a test
checks it against what the parser accepts (every documented value parses, every accepted field and
value is documented).

Pure data (no textual): the core owns the language, the UI only renders it.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Term:
    syntax: str  # what to type, as the table shows it
    matches: str  # what it matches
    fields: tuple[str, ...] = ()  # the parser's field names this term documents ("" for none)
    values: tuple[str, ...] = ()  # the values it takes, each one accepted by the parser
    aliases: tuple[str, ...] = ()  # other spellings the parser accepts for those values
    example: str = ""  # one expression with this term; the filter bar's hint shows the marked ones
    hint: bool = False  # part of the filter bar's placeholder


TERMS: tuple[Term, ...] = (
    Term(
        "method:GLOB",
        "the method, or the method a response answers (globs: method:tools/*)",
        ("method",),
        example="method:tools/call",
        hint=True,
    ),
    Term(
        "kind:K",
        "the kind: response is a result or an error, message any JSON-RPC message",
        ("kind",),
        values=(
            "request",
            "notification",
            "result",
            "error",
            "invalid",
            "batch",
            "response",
            "message",
            "stderr",
            "http",
            "event",
            "header",
            "broken",
        ),
        aliases=(
            "req",
            "requests",
            "notif",
            "note",
            "notifications",
            "results",
            "err",
            "errors",
            "resp",
            "responses",
            "msg",
        ),
        example="kind:error",
        hint=True,
    ),
    Term(
        "dir:D",
        "c2s host → server, s2c server → host",
        ("dir",),
        values=("c2s", "s2c"),
        aliases=("→", "->", "h2s", "up", "←", "<-", "s2h", "down"),
        example="dir:s2c",
        hint=True,
    ),
    Term(
        "era:E",
        "the era label (a prefix is enough: era:mod)",
        ("era",),
        values=("modern", "legacy", "unknown"),
        example="era:legacy",
        hint=True,
    ),
    Term(
        "rule:ID",
        "a finding of that rule id, id prefix (rule:MCP3) or rule name, or any finding",
        ("rule",),
        values=("*",),
        aliases=("any",),
        example="rule:MCP310",
        hint=True,
    ),
    Term(
        "sev:S",
        "a finding at least that severe (severity:S too)",
        ("sev", "severity"),
        values=("info", "warning", "error"),
        example="sev:warning",
    ),
    Term(
        "has:W",
        "has findings, a partner (the paired request or response), or a latency",
        ("has",),
        values=("findings", "partner", "latency"),
        aliases=("finding", "pair", "paired"),
        example="has:findings",
    ),
    Term("id:X", 'the JSON-RPC id as text (id:5 matches 5 and "5")', ("id",), example="id:5", hint=True),
    Term(
        "latency OP N",
        "OP is > >= < <= =; N with a unit ns us ms s m (default ms)",
        ("latency",),
        example="latency>500ms",
        hint=True,
    ),
    Term("conn:C  transport:T", "the connection id, the transport (stdio, http...)", ("conn", "transport")),
    Term("status:N  status OP N", "the HTTP status", ("status",), example="status>=400"),
    Term("seq OP N", "the record's seq (seq:N too)", ("seq",), example="seq>100"),
    Term('word  "free text"', "case-insensitive text in the raw message", example='"timeout"', hint=True),
    Term("a b", "both (terms are ANDed)", example="kind:error dir:s2c"),
    Term("a | b", "either (looser than AND)", example="kind:error | rule:MCP2"),
    Term("!a  !(a | b)", "not; parentheses group", example="!(method:ping | kind:notification)"),
)

EXAMPLES = (
    "kind:error | rule:MCP2",
    "method:tools/call latency>1s",
    '!dir:c2s "timeout"',
    "era:legacy !(method:ping | kind:notification)",
)


def field_names() -> tuple[str, ...]:
    """Every field name the parser accepts, in the table's order."""
    return tuple(f for t in TERMS for f in t.fields)


def placeholder() -> str:
    """The filter bar's hint: the marked examples, then the operators."""
    return " ".join(t.example for t in TERMS if t.hint) + "  (| or, ! not)"


def rows() -> list[tuple[str, str]]:
    """(term, what it matches) for the help screen's two columns: the values, then an example, follow
    the description."""
    out = []
    for t in TERMS:
        what = t.matches
        if t.values:
            what += ": " + " ".join(t.values)
        if t.example:
            what += f"   e.g. {t.example}"
        out.append((t.syntax, what))
    return out


def text(columns: int = 100) -> str:
    """The table as the `mcptrace help filter` page shows it: aligned plain text wrapped to
    `columns` (no Markdown table: its `|` would need escaping, and the page is read in a terminal)."""
    width = max(len(t.syntax) for t in TERMS) + 2
    lines = []
    for t in TERMS:
        what = t.matches
        if t.values:
            what += ": " + " ".join(t.values)
        if t.aliases:
            what += " (also " + " ".join(t.aliases) + ")"
        wrapped = textwrap.wrap(what, max(20, columns - width)) or [""]
        lines.append(f"{t.syntax:<{width}}{wrapped[0]}")
        lines.extend(f"{'':<{width}}{more}" for more in wrapped[1:])
        if t.example:
            lines.append(f"{'':<{width}}e.g. {t.example}")
    lines.append("")
    lines.append("more examples: " + "   ".join(EXAMPLES))
    return "\n".join(lines) + "\n"
