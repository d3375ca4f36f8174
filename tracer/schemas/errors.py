"""Turn jsonschema-rs errors into short, specific problems: a JSON path, the keyword, one sentence.

A schema error on a union (`anyOf`, e.g. a content block) says only "not valid under any of the
schemas". That helps nobody, so we descend into the branch the sender evidently meant: branches whose
discriminator (`const`, e.g. `type: "image"`) or JSON type does not match are set aside, and of the
rest the one with the fewest errors wins. The most specific problem (the deepest path) comes first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tracer.jsonpath import json_path
from tracer.safejson import dumps_text

_UNIONS = frozenset({"anyOf", "oneOf"})
_MAX_DETAIL = 160


@dataclass(frozen=True, slots=True)
class SchemaProblem:
    segments: tuple[str | int, ...]  # where in the message (for `required`: the missing member)
    keyword: str  # the JSON Schema keyword that failed: required, type, const, anyOf...
    detail: str  # one short sentence naming the member: "`text` is required but missing"
    definition: str | None  # the schema definition that holds the failing keyword

    @property
    def path(self) -> str:
        return json_path(self.segments)


_BRACKET = re.compile(r"""\[(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|(\d+))\]""")


def loose_path(path: str) -> str:
    """A JSON path in one loose spelling, for comparing paths written by different rules: quoted
    members become dotted (`$['a/b']` and `$.a/b` both read `.a/b`), indexes stay `[i]`."""

    def sub(m: re.Match) -> str:
        sq, dq, index = m.groups()
        if index is not None:
            return f"[{index}]"
        return "." + re.sub(r"\\(.)", r"\1", sq if sq is not None else dq)

    return _BRACKET.sub(sub, path)


def explained_by(problem: SchemaProblem, finding_path: str) -> bool:
    """Whether a finding another rule made at `finding_path` (already loose) explains this problem:
    same place; the object holding it (a rule says "params lacks name" at `$.params`); or somewhere
    inside it (the schema rejects `content[0]` as a whole, the rule says which member is wrong). A
    finding further up (`$.result`, about a missing `_meta`) does not hide a problem deep inside."""
    here = loose_path(problem.path)
    if finding_path == here:
        return True
    if problem.segments and finding_path == loose_path(json_path(problem.segments[:-1])):
        return True
    return finding_path.startswith(here) and finding_path[len(here)] in ".["


def _brief(value: Any) -> str:
    text = dumps_text(value)  # (any value a peer sent: 65-bit integers, lone surrogates, 1,000 deep)
    return text if len(text) <= 40 else text[:37] + "..."


def _json_type(value: Any) -> str:
    t = type(value)
    if value is None:
        return "null"
    if t is bool:
        return "a boolean"
    if t is int:
        return "an integer"
    if t is float:
        return "a number" if not value.is_integer() else "an integer"
    if t is str:
        return "a string"
    if t is list:
        return "an array"
    if t is dict:
        return "an object"
    return t.__name__


def _definition(schema_path: list) -> str | None:
    """The innermost named definition on the schema path (`$defs/TextContent/required` -> TextContent)."""
    name = None
    for i, seg in enumerate(schema_path[:-1]):
        if seg in ("$defs", "definitions"):
            name = schema_path[i + 1]
    return name if isinstance(name, str) else None


def subject(segments: tuple[str | int, ...]) -> str:
    """How a sentence names the member: `text`, `content[0]`, or the message itself."""
    if not segments:
        return "the message"
    last = segments[-1]
    if type(last) is int:
        parent = segments[-2] if len(segments) > 1 and type(segments[-2]) is str else ""
        return f"`{parent}[{last}]`"
    return f"`{last}`"


def _detail(err: Any, segments: tuple[str | int, ...]) -> str:
    kind = err.kind
    k = kind.name
    who = subject(segments)
    if k == "required":
        return f"{who} is required but missing"
    if k == "type":
        want = " or ".join(kind.types)
        return f"{who} is {_json_type(err.instance)}, expected {want}"
    if k == "const":
        return f"{who} must be {_brief(kind.expected_value)}, got {_brief(err.instance)}"
    if k == "enum":
        return (
            f"{who} must be one of {', '.join(_brief(o) for o in kind.options)}; got {_brief(err.instance)}"
        )
    if k in _UNIONS:
        return f"{who} is {_json_type(err.instance)} that matches none of the allowed shapes"
    if k in ("minimum", "maximum", "maxItems", "minItems", "maxLength", "minLength"):
        return f"{who}: {k} {kind.limit} not met (got {_brief(err.instance)})"
    msg = err.message
    msg = msg if len(msg) <= _MAX_DETAIL else msg[: _MAX_DETAIL - 3] + "..."
    return f"{who}: {msg}"


def _depth(err: Any) -> int:
    return len(err.instance_path)


def _wrong_shape(branch: list, at: list) -> bool:
    """The branch is for another variant: a discriminator `const` failed, or the value is not even
    of the branch's JSON type."""
    for e in branch:
        name = e.kind.name
        if name == "const" or (name == "type" and e.instance_path == at):
            return True
    return False


def _leaves(err: Any) -> list[Any]:
    if err.kind.name not in _UNIONS:
        return [err]
    branches = [b for b in err.kind.context if b]
    plausible = [b for b in branches if not _wrong_shape(b, err.instance_path)]
    if not plausible:
        return [err]
    best = min(plausible, key=lambda b: (len(b), -max(_depth(e) for e in b)))
    out: list[Any] = []
    for e in best:
        out.extend(_leaves(e))
    return out


def problems(errors: Any) -> list[SchemaProblem]:
    """Every problem jsonschema-rs reports, unions resolved, deduplicated, most specific first."""
    seen: set[tuple] = set()
    found: list[SchemaProblem] = []
    for err in errors:
        for leaf in _leaves(err):
            segs = tuple(leaf.instance_path)
            keyword = leaf.kind.name
            if keyword == "required":
                segs = (*segs, leaf.kind.property)
            key = (segs, keyword)
            if key in seen:  # the envelope and the method definition often say the same thing
                continue
            seen.add(key)
            found.append(SchemaProblem(segs, keyword, _detail(leaf, segs), _definition(leaf.schema_path)))
    found.sort(key=lambda p: -len(p.segments))  # stable: equal depths keep the validator's order
    return found


__all__ = ["SchemaProblem", "explained_by", "json_path", "loose_path", "problems"]
