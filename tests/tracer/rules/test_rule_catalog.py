"""The catalog itself: ids unique and from RULES.md's numbering, docs, cases, and `rules ID` renders."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.cases import RULE_CASES
from tracer.cli import main
from tracer.rules import all_rules

RULES = all_rules()


def test_rule_ids_follow_the_catalog_numbering():
    for rule_id, r in RULES.items():
        assert re.fullmatch(r"MCP[1-9]\d\d", rule_id), rule_id
        assert r.id == rule_id
        assert re.fullmatch(r"[a-z0-9-]+", r.name), r.name


def test_rule_names_are_unique():
    names = [r.name for r in RULES.values()]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rule_has_docstring_source_and_cases(rule_id):
    r = RULES[rule_id]
    assert len(r.doc) > 30, "a rule explains itself"
    assert r.spec, "a rule names its spec source"
    path = RULE_CASES / f"{rule_id}.yaml"
    assert path.exists(), f"missing {path}"
    doc = yaml.safe_load(path.read_text())
    assert doc["rule"] == rule_id
    fires = [c["fires"] for c in doc["cases"]]
    assert any(f not in (False, 0) for f in fires), "at least one failing case"
    assert any(f in (False, 0) for f in fires), "at least one passing case"


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rules_command_explains_each_rule(rule_id, capsys):
    assert main(["rules", rule_id]) == 0
    out = capsys.readouterr().out
    assert rule_id in out and RULES[rule_id].spec in out


def test_unknown_rule_is_a_usage_error(capsys):
    assert main(["rules", "MCP999"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MCP999" in err
