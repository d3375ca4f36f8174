"""The filter language shared by the viewer (and usable by lint): parse once, match many.

    method:tools/call kind:error dir:s2c era:legacy rule:MCP310 id:5 latency>500ms "free text"

Terms separated by spaces are ANDed, `|` is OR (binding looser than AND), `!` negates the term or
group after it, and parentheses group. A bare word or a quoted string is free text: a
case-insensitive substring of the message's raw bytes. The terms are documented once, in
tracer/filter_terms.py: the help screen, the filter bar's hint and `mcptrace help filter` render
that table, the parser takes its field names from it, and tests/tracer/test_filter_terms.py holds every
documented value to this parser (and every value the parser accepts to the table).

The matcher reads a `Fields` object: anything with the attributes below. `AnalysedFields` adapts an
analysed message; the viewer adapts its compact per-row summaries the same way.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from tracer.filter_terms import field_names
from tracer.model import Analysed, Severity


class Fields(Protocol):
    kind: str  # a tracer.model.Kind value, or stderr/http/event/header/broken
    dir: str | None  # "c2s" / "s2c"
    era: str | None
    method: str | None  # method or the method answered
    id_text: str | None
    latency_ns: int | None
    rules: Iterable[str]
    severity: int  # worst finding's Severity value, 0 when none
    nfindings: int
    partner: bool
    text: str  # lower-cased raw text
    conn: str | None
    transport: str | None
    status: int | None
    seq: int


class FilterError(ValueError):
    def __init__(self, message: str, pos: int = 0):
        super().__init__(message)
        self.pos = pos


Pred = Callable[[Any], bool]

# Fields whose value needs the analyser (pairing, era, rules); the rest come from the raw record.
ANALYSED_FIELDS = frozenset({"method", "era", "rule", "sev", "has", "latency"})

KIND_ALIASES = {
    "req": ("request",),
    "request": ("request",),
    "requests": ("request",),
    "notif": ("notification",),
    "note": ("notification",),
    "notification": ("notification",),
    "notifications": ("notification",),
    "result": ("result",),
    "results": ("result",),
    "err": ("error",),
    "error": ("error",),
    "errors": ("error",),
    "response": ("result", "error"),
    "resp": ("result", "error"),
    "responses": ("result", "error"),
    "invalid": ("invalid",),
    "batch": ("batch",),
    "message": ("request", "notification", "result", "error", "invalid", "batch"),
    "msg": ("request", "notification", "result", "error", "invalid", "batch"),
    "stderr": ("stderr",),
    "http": ("http",),
    "event": ("event",),
    "header": ("header",),
    "broken": ("broken",),
}
DIR_ALIASES = {
    "c2s": "c2s",
    "→": "c2s",
    "->": "c2s",
    "h2s": "c2s",
    "up": "c2s",
    "s2c": "s2c",
    "←": "s2c",
    "<-": "s2c",
    "s2h": "s2c",
    "down": "s2c",
}
ERAS = ("modern", "legacy", "unknown")
HAS_ALIASES = {
    "findings": "findings",
    "finding": "findings",
    "partner": "partner",
    "pair": "partner",
    "paired": "partner",
    "latency": "latency",
}
UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000, "m": 60_000_000_000}
COMPARE_FIELDS = ("latency", "seq", "status")
# The fields come from the documented table, so a field cannot be added without its documentation.
FIELDS = field_names()

_OPS = {
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    "=": lambda a, b: a == b,
    "==": lambda a, b: a == b,
}
_CMP_RE = re.compile(r"^(latency|seq|status):?(>=|<=|==|>|<|=)(.+)$")
_FIELD_RE = re.compile(r"^([a-z]+):(.*)$", re.S)


@dataclass(slots=True)
class Token:
    kind: str  # "(" ")" "|" "!" "word" "text"
    value: str
    pos: int
    quoted_value: bool = False  # field:"..." (a field term whose value was quoted)


def tokenize(src: str) -> list[Token]:
    out: list[Token] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
        elif c in "()|":
            out.append(Token(c, c, i))
            i += 1
        elif c == "!" and (i + 1 < n and not src[i + 1].isspace()):
            out.append(Token("!", c, i))
            i += 1
        elif c == '"':
            text, i2 = _quoted(src, i)
            out.append(Token("text", text, i))
            i = i2
        else:
            start = i
            while i < n and not src[i].isspace() and src[i] not in '()|"':
                i += 1
            word = src[start:i]
            if i < n and src[i] == '"' and word.endswith((":", ">", "<", "=")):
                text, i = _quoted(src, i)
                out.append(Token("word", word + text, start, quoted_value=True))
            else:
                out.append(Token("word", word, start))
    return out


def _quoted(src: str, i: int) -> tuple[str, int]:
    j = i + 1
    buf: list[str] = []
    while j < len(src):
        c = src[j]
        if c == "\\" and j + 1 < len(src):
            buf.append(src[j + 1])
            j += 2
            continue
        if c == '"':
            return "".join(buf), j + 1
        buf.append(c)
        j += 1
    raise FilterError("unterminated quote", i)


@dataclass(slots=True)
class Filter:
    source: str
    match: Pred
    fields: frozenset[str]  # field names the expression reads ("text" for free text)
    needles: tuple[str, ...] = ()  # lower-cased free text every match must contain (pre-filtering)

    @property
    def needs_analysis(self) -> bool:
        return bool(self.fields & ANALYSED_FIELDS)

    def __call__(self, f: Any) -> bool:
        return self.match(f)


def compile_filter(src: str, *, rule_names: dict[str, str] | None = None) -> Filter:
    """Parse a filter expression. `rule_names` maps rule names to ids (rule:modern-request-...).
    Raises FilterError with the position of the problem."""
    p = _Parser(tokenize(src), rule_names or {})
    if not p.tokens:
        return Filter(src, lambda f: True, frozenset())
    pred = p.expr()
    if p.i < len(p.tokens):
        t = p.tokens[p.i]
        raise FilterError(f"unexpected {t.value!r}", t.pos)
    return Filter(src, pred, frozenset(p.used), _required_text(p.tokens))


def _required_text(tokens: list[Token]) -> tuple[str, ...]:
    """Free-text terms that every match must contain: only when the whole expression is a plain
    AND (no `|`, no group), and only terms not negated."""
    if any(t.kind in ("|", "(", ")") for t in tokens):
        return ()
    out = []
    for i, t in enumerate(tokens):
        negated = i > 0 and tokens[i - 1].kind == "!"
        is_text = t.kind == "text" or (
            t.kind == "word" and not _CMP_RE.match(t.value) and not _FIELD_RE.match(t.value)
        )
        if is_text and not negated:
            out.append(t.value.lower())
    return tuple(out)


class _Parser:
    def __init__(self, tokens: list[Token], rule_names: dict[str, str]):
        self.tokens = tokens
        self.i = 0
        self.used: set[str] = set()
        self.rule_names = rule_names

    def peek(self) -> Token | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def expr(self) -> Pred:
        parts = [self.conj()]
        while (t := self.peek()) is not None and t.kind == "|":
            self.i += 1
            parts.append(self.conj())
        if len(parts) == 1:
            return parts[0]
        return lambda f, ps=tuple(parts): any(p(f) for p in ps)

    def conj(self) -> Pred:
        parts: list[Pred] = []
        while (t := self.peek()) is not None and t.kind not in ("|", ")"):
            parts.append(self.unary())
        if not parts:
            t = self.peek()
            where = t.pos if t else (self.tokens[-1].pos + len(self.tokens[-1].value) if self.tokens else 0)
            raise FilterError("expected a term", where)
        if len(parts) == 1:
            return parts[0]
        return lambda f, ps=tuple(parts): all(p(f) for p in ps)

    def unary(self) -> Pred:
        t = self.tokens[self.i]
        if t.kind == "!":
            self.i += 1
            if self.peek() is None:
                raise FilterError("'!' needs a term after it", t.pos)
            inner = self.unary()
            return lambda f: not inner(f)
        if t.kind == "(":
            self.i += 1
            inner = self.expr()
            close = self.peek()
            if close is None or close.kind != ")":
                raise FilterError("missing ')'", t.pos)
            self.i += 1
            return inner
        if t.kind == ")":
            raise FilterError("unexpected ')'", t.pos)
        self.i += 1
        if t.kind == "text":
            return self.text(t.value)
        return self.word(t)

    # -- terms -------------------------------------------------------------------------------

    def text(self, needle: str) -> Pred:
        self.used.add("text")
        low = needle.lower()
        return lambda f: low in f.text

    def word(self, t: Token) -> Pred:
        w = t.value
        m = _CMP_RE.match(w)
        if m:
            return self.compare(m.group(1), m.group(2), m.group(3), t)
        m = _FIELD_RE.match(w)
        if m and m.group(1) in FIELDS:
            name, value = m.group(1), m.group(2)
            if value == "" and not t.quoted_value:
                raise FilterError(f"'{name}:' needs a value", t.pos)
            return self.field(name, value, t)
        if m and not t.quoted_value and m.group(1).isalpha() and not m.group(2).startswith("/"):
            raise FilterError(f"unknown field {m.group(1)!r} (fields: {', '.join(FIELDS)})", t.pos)
        return self.text(w)

    def compare(self, name: str, op: str, value: str, t: Token) -> Pred:
        self.used.add(name)
        cmp = _OPS[op]
        if name == "latency":
            limit = parse_duration(value, t.pos)

            def pred(f: Any) -> bool:
                lat = f.latency_ns
                return lat is not None and cmp(lat, limit)

            return pred
        try:
            number = int(value)
        except ValueError:
            raise FilterError(f"{name} needs a whole number, not {value!r}", t.pos) from None
        attr = name

        def pred_n(f: Any) -> bool:
            v = getattr(f, attr)
            return v is not None and cmp(v, number)

        return pred_n

    def field(self, name: str, value: str, t: Token) -> Pred:
        low = value.lower()
        if name == "severity":
            name = "sev"
        self.used.add(name)
        if name == "method":
            if any(c in value for c in "*?["):
                return lambda f: f.method is not None and fnmatch.fnmatchcase(f.method.lower(), low)
            return lambda f: f.method is not None and f.method.lower() == low
        if name == "kind":
            kinds = KIND_ALIASES.get(low)
            if kinds is None:
                raise FilterError(f"unknown kind {value!r} (kinds: {', '.join(sorted(KIND_ALIASES))})", t.pos)
            return lambda f: f.kind in kinds
        if name == "dir":
            d = DIR_ALIASES.get(low)
            if d is None:
                raise FilterError(f"unknown direction {value!r} (c2s or s2c)", t.pos)
            return lambda f: f.dir == d
        if name == "era":
            era = next((e for e in ERAS if e.startswith(low)), None)
            if era is None:
                raise FilterError(f"unknown era {value!r} (modern, legacy, unknown)", t.pos)
            return lambda f: f.era == era
        if name == "rule":
            return self.rule(value, t)
        if name == "sev":
            try:
                sev = int(Severity.parse(low))
            except ValueError as exc:
                raise FilterError(str(exc), t.pos) from None
            return lambda f: f.severity >= sev
        if name == "has":
            what = HAS_ALIASES.get(low)
            if what == "findings":
                return lambda f: f.nfindings > 0
            if what == "partner":
                return lambda f: f.partner
            if what == "latency":
                return lambda f: f.latency_ns is not None
            raise FilterError(f"unknown has:{value} (findings, partner, latency)", t.pos)
        if name == "id":
            return lambda f: f.id_text is not None and f.id_text == value
        if name in ("conn", "transport"):
            attr = name
            return lambda f: (getattr(f, attr) or "").lower() == low
        if name in ("status", "seq"):
            return self.compare(name, "=", value, t)
        raise FilterError(f"unknown field {name!r}", t.pos)  # pragma: no cover (FIELDS is closed)

    def rule(self, value: str, t: Token) -> Pred:
        v = value.strip()
        if v in ("*", "any"):
            return lambda f: f.nfindings > 0
        rid = self.rule_names.get(v.lower())
        if rid is not None:
            return lambda f: rid in f.rules
        up = v.upper()
        if not re.fullmatch(r"MCP\d*", up):
            raise FilterError(f"rule:{value} is not a rule id, id prefix or rule name", t.pos)
        return lambda f: any(r.startswith(up) for r in f.rules)


def parse_duration(text: str, pos: int = 0) -> int:
    """'500ms' -> 500_000_000 ns; a bare number is milliseconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(ns|us|µs|ms|s|m)?\s*", text)
    if not m:
        raise FilterError(f"not a duration: {text!r} (e.g. 500ms, 2s, 150us)", pos)
    return int(float(m.group(1)) * UNITS[m.group(2) or "ms"])


def id_text(value: Any) -> str | None:
    """An id as the filter compares it: 5 and "5" are both "5"."""
    if value is None:
        return None
    if type(value) is float and value.is_integer():
        return str(int(value))
    return str(value)


class AnalysedFields:
    """The filter's view of an analysed message (lint and tests)."""

    __slots__ = ("m",)

    def __init__(self, m: Analysed):
        self.m = m

    kind = property(lambda self: self.m.kind.value)
    dir = property(lambda self: self.m.rec.dir.value if self.m.rec.dir else None)
    era = property(lambda self: self.m.era.value)
    method = property(lambda self: self.m.label or None)
    id_text = property(lambda self: id_text(self.m.id))
    latency_ns = property(lambda self: self.m.latency_ns)
    rules = property(lambda self: [f.rule for f in self.m.findings])
    severity = property(lambda self: int(self.m.worst or 0))
    nfindings = property(lambda self: len(self.m.findings))
    partner = property(lambda self: self.m.partner_seq is not None)
    text = property(lambda self: self.m.rec.raw.decode("utf-8", "replace").lower())
    conn = property(lambda self: self.m.rec.conn)
    transport = property(lambda self: self.m.rec.transport)
    status = property(lambda self: (self.m.rec.http or {}).get("status"))
    seq = property(lambda self: self.m.rec.seq)
