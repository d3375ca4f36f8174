"""The dispatch plans: which rules a message shape runs, in which order, behind which prefilter.
(That the prefilters never change a finding: tests/tracer/test_dispatch_fast_paths.py.)"""

from __future__ import annotations

from tracer.analyser import RuleSet
from tracer.model import Direction, Kind
from tracer.protocol import ALL, MODERN
from tracer.rules import all_rules

RULES = list(all_rules().values())
PREFILTERED = [r for r in RULES if r.needs is not None]


def test_some_rules_are_prefiltered_by_a_key():
    assert PREFILTERED, "no rule uses needs= any more: remove the prefilter from the analyser"
    assert all(type(r.needs) is str for r in PREFILTERED)


def test_a_plan_leaves_out_the_rules_that_cannot_fire_on_its_shape():
    rs = RuleSet(RULES)
    client = {r.id for r in rs.for_message(Kind.REQUEST, "tools/call", MODERN, Direction.C2S)}
    server = {r.id for r in rs.for_message(Kind.REQUEST, "tools/call", MODERN, Direction.S2C)}
    assert "MCP207" in server and "MCP207" not in client  # a modern server sending a request
    assert "MCP310" in client and "MCP310" not in server  # a client request without _meta
    assert "MCP106" not in client  # tools/call does not start with "rpc."
    odd = {r.id for r in rs.for_message(Kind.REQUEST, "rpc.discover", MODERN, Direction.C2S)}
    assert {"MCP106", "MCP209"} <= odd  # an unknown method keeps every rule that may fire on it


def test_the_plan_keeps_every_rule_in_dispatch_order():
    rs = RuleSet(RULES)
    for kind in (Kind.REQUEST, Kind.RESULT, Kind.NOTIFICATION, Kind.ERROR):
        for method in ("tools/call", "sampling/createMessage", "initialize", None):
            for versions in (ALL, MODERN):
                flat = tuple(r for _, rules in rs.plan(kind, method, versions) for r in rules)
                assert flat == rs.for_message(kind, method, versions)


def test_a_prefiltered_rule_runs_when_its_key_is_there_and_is_skipped_when_it_is_not():
    rs = RuleSet(RULES)
    plan = rs.plan(Kind.RESULT, "tools/call", MODERN)
    gated = {r.id: needs for needs, rules in plan for r in rules}
    assert gated["MCP627"] == "inputRequests"  # sampling params inside an InputRequiredResult
    # a legacy sampling/createMessage request carries no inputRequests: the rule always runs there
    legacy = {
        r.id: needs for needs, rules in rs.plan(Kind.REQUEST, "sampling/createMessage", ALL) for r in rules
    }
    assert legacy.get("MCP627", "absent") is None
