"""The filter language is documented once (tracer/filter_terms.py) and that table is the parser's:
every documented field, value, alias and example parses; every field, kind, direction, era and
`has:` word the parser accepts is documented; the help screen, the filter bar and `mcptrace help
filter` show the table."""

from __future__ import annotations

import pytest

from tracer import filter as flt
from tracer.filter import FilterError, compile_filter
from tracer.filter_terms import EXAMPLES, TERMS, field_names, placeholder, text
from tracer.model import Severity


def _term(field: str):
    return next(t for t in TERMS if field in t.fields)


@pytest.mark.parametrize(
    "expr",
    [f"{t.fields[0]}:{v}" for t in TERMS for v in t.values + t.aliases]
    + [t.example for t in TERMS if t.example]
    + list(EXAMPLES),
)
def test_every_documented_value_and_example_parses(expr):
    compile_filter(expr)


def test_the_parser_accepts_exactly_the_documented_fields():
    assert field_names() == flt.FIELDS
    for name in field_names():
        with pytest.raises(FilterError, match="needs a value"):
            compile_filter(f"{name}:")  # a known field: it asks for a value, not "unknown field"
    with pytest.raises(FilterError, match="unknown field 'colour'") as exc:
        compile_filter("colour:red")
    assert all(name in str(exc.value) for name in field_names())


def test_every_comparison_the_parser_accepts_is_documented():
    for name in flt.COMPARE_FIELDS:
        assert f"{name} OP N" in _term(name).syntax
        compile_filter(f"{name}>=1")


@pytest.mark.parametrize(
    ("field", "accepted"),
    [
        ("kind", set(flt.KIND_ALIASES)),
        ("dir", set(flt.DIR_ALIASES)),
        ("era", set(flt.ERAS)),
        ("has", set(flt.HAS_ALIASES)),
        ("sev", {s.name.lower() for s in Severity}),
    ],
)
def test_every_value_the_parser_accepts_is_documented(field, accepted):
    t = _term(field)
    assert set(t.values) | set(t.aliases) == accepted


def test_an_undocumented_value_is_refused():
    for expr in ("kind:frob", "dir:sideways", "era:ancient", "has:wings", "sev:fatal"):
        with pytest.raises(FilterError):
            compile_filter(expr)


def test_the_filter_bar_hint_and_the_topic_table_come_from_the_table():
    from ui.widgets.filter_bar import PLACEHOLDER

    assert placeholder() == PLACEHOLDER
    compile_filter(placeholder().split("  (")[0])
    page = text()
    flat = " ".join(page.split())  # descriptions wrap at 100 columns
    for t in TERMS:
        assert t.syntax in page and t.matches in flat
