"""A rule that raises is named in the traceback: its own frame (its file and function) under a
runner line that names its id, never an anonymous `File "<string>"` (tracer/dispatch.py)."""

from __future__ import annotations

import traceback
from dataclasses import replace

import pytest

from tests.cases import build_records
from tracer.analyser import analyse_all
from tracer.rules import all_rules

NOT_JSON = build_records([{"c2s_raw": "{not json"}], "http")


def _traceback(rules) -> str:
    with pytest.raises(Exception) as info:
        analyse_all(NOT_JSON, rules)
    return "".join(traceback.format_exception(info.value))


def test_a_rule_that_raises_shows_its_own_file_and_function_under_a_line_naming_its_id():
    def not_json_with_a_bug(m, s):
        raise RuntimeError("a bug in the rule")

    text = _traceback([replace(all_rules()["MCP101"], fn=not_json_with_a_bug)])
    assert "a bug in the rule" in text
    assert "test_rule_tracebacks.py" in text and "in not_json_with_a_bug" in text  # the rule's frame
    # the runner's line says which rule it ran and where that rule is defined
    assert "MCP101 not-json, test_rule_tracebacks.py:" in text
    assert 'File "<string>"' not in text


def test_a_rule_returning_something_that_is_no_finding_is_named_in_the_traceback():
    def returns_a_number(m, s):
        return 5

    text = _traceback([replace(all_rules()["MCP101"], fn=returns_a_number)])
    assert "MCP101" in text and "returns_a_number" in text
    assert 'File "<string>"' not in text
