"""Every rule's own cases (fixtures/rules/<ID>.yaml): it fires where it should and nowhere else."""

from __future__ import annotations

import pytest

from tests.cases import build_records, load_rule_cases
from tracer.analyser import analyse_all
from tracer.rules import select_rules

CASES = load_rule_cases()


def _findings(rule_id: str, case: dict):
    records = build_records(case["messages"], case.get("transport", "stdio"))
    msgs, ends = analyse_all(records, select_rules([rule_id]))
    found = [f for m in msgs for f in m.findings] + ends
    for m in msgs:
        for member in m.members or ():
            found.extend(member.findings)
    return [f for f in found if f.rule == rule_id]


@pytest.mark.parametrize(("rule_id", "case"), CASES, ids=[f"{r}: {c['name']}" for r, c in CASES])
def test_rule_case(rule_id, case):
    found = _findings(rule_id, case)
    fires = case["fires"]
    if fires is True:
        assert found, f"{rule_id} should fire"
    elif fires is False:
        assert not found, f"{rule_id} should not fire, got: {[f.message for f in found]}"
    else:
        assert len(found) == fires, [f.message for f in found]
    if "at" in case:
        assert sorted({f.seq for f in found}) == sorted(case["at"])
    if "path" in case:
        assert any(f.path == case["path"] for f in found), [f.path for f in found]
    if "severity" in case:
        assert {f.severity.label for f in found} == {case["severity"]}
