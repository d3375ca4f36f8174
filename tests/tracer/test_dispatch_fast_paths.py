"""Each of dispatch's savings has a general twin and finds exactly what the twin finds, on every rule
case (run with all rules) and on a fuzzed set of real sessions: the compiled runners (against one
plain loop over the rules), the key prefilters (`needs=`), the gates (`gate=`) and the plan
predicates (`possible=`). A saving that changed a finding would fail here (tracer/dispatch.py)."""

from __future__ import annotations

import io
import random
from dataclasses import replace
from functools import cache

import pytest

from tests.cases import build_records, load_rule_cases
from tests.fuzz_support import capture_bytes, mutate, seed_sessions
from tracer.analyser import Analyser, RuleSet, analyse_all
from tracer.capture import ReadProblem, read_capture
from tracer.events import all_findings
from tracer.rules import all_rules

RULES = list(all_rules().values())
FUZZED_CAPTURES = 300


@cache
def rule_cases() -> list[list]:
    return [build_records(c["messages"], c.get("transport", "stdio")) for _, c in load_rule_cases()]


@cache
def fuzzed() -> list[list]:
    rng = random.Random(1414)
    seeds = seed_sessions()
    out = []
    for _ in range(FUZZED_CAPTURES):
        data = capture_bytes(mutate(rng, rng.choice(seeds)))
        out.append(
            [r for r in read_capture(io.BytesIO(data), "fuzz.jsonl") if not isinstance(r, ReadProblem)]
        )
    return out


def findings(records, ruleset: RuleSet) -> list[tuple]:
    out = []
    analyser = Analyser(ruleset)
    for ev in analyser.run(records):
        for f in all_findings(ev):
            out.append((f.rule, f.severity, f.message, f.seq, f.path, f.related_seq, f.offset))
    return out


def same_findings(fast: RuleSet, general: RuleSet) -> None:
    for i, records in enumerate(rule_cases() + fuzzed()):
        assert findings(records, fast) == findings(records, general), f"input {i}"


TWINS = {
    "compiled runners": lambda: RuleSet(RULES, fast=False),
    "key prefilters (needs=)": lambda: RuleSet([replace(r, needs=None) for r in RULES]),
    "gates (gate=)": lambda: RuleSet([replace(r, gate=None) for r in RULES]),
    "plan predicates (possible=)": lambda: RuleSet([replace(r, possible=None) for r in RULES]),
}


@pytest.mark.parametrize("saving", list(TWINS))
def test_a_saving_finds_what_its_general_twin_finds_on_rule_cases_and_fuzzed_sessions(saving):
    same_findings(RuleSet(RULES), TWINS[saving]())


def test_each_saving_is_in_use():
    assert any(r.needs is not None for r in RULES)
    assert any(r.gate is not None for r in RULES)
    assert any(r.possible is not None for r in RULES)
    fast, general = RuleSet(RULES), RuleSet(RULES, fast=False)
    records = rule_cases()[0]
    analyse_all(records, fast)
    analyse_all(records, general)
    assert all(run.__name__ == "run" for run in fast.runners.values() if run is not None)
    assert all(run == general._general for run in general.runners.values())


def test_the_fuzzed_set_exercises_the_rules():
    fired = {f[0] for records in fuzzed() for f in findings(records, RuleSet(RULES))}
    assert len(fired) > 60
