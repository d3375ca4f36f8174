"""The structural JSON diff replay reports with: paths, volatile fields, --ignore patterns."""

from __future__ import annotations

import pytest

from tracer.replay.diff import Ignores, PatternError, diff, format_path, parse_pattern


def paths(a, b, ignores=None):
    return [(d.path, d.change) for d in diff(a, b, ignores)]


def test_equal_answers_have_no_differences():
    answer = {
        "jsonrpc": "2.0",
        "id": 3,
        "result": {"content": [{"type": "text", "text": "5"}], "isError": False},
    }
    assert diff(answer, dict(answer)) == []


def test_a_changed_leaf_is_named_by_its_path_with_both_values():
    rec = {
        "id": 1,
        "result": {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}},
    }
    new = {
        "id": 1,
        "result": {"content": [{"type": "text", "text": "6"}], "structuredContent": {"result": 6}},
    }
    ds = diff(rec, new)
    assert [(d.path, d.recorded, d.new) for d in ds] == [
        ("$.result.content[0].text", "5", "6"),
        ("$.result.structuredContent.result", 5, 6),
    ]


def test_added_removed_and_retyped_members_are_told_apart():
    rec = {"result": {"a": 1, "gone": True, "items": [1, 2], "n": "1"}}
    new = {"result": {"a": 1, "extra": None, "items": [1], "n": 1}}
    assert paths(rec, new) == [
        ("$.result.gone", "removed"),
        ("$.result.items[1]", "removed"),
        ("$.result.n", "type"),
        ("$.result.extra", "added"),
    ]


def test_true_and_one_are_different_json_types():
    assert paths({"result": {"ok": True}}, {"result": {"ok": 1}}) == [("$.result.ok", "type")]


def test_the_jsonrpc_id_and_mrtr_request_state_are_always_ignored():
    rec = {"id": 7, "result": {"resultType": "input_required", "requestState": "sealed-A"}}
    new = {"id": 8, "result": {"resultType": "input_required", "requestState": "sealed-B"}}
    assert diff(rec, new) == []


def test_timestamps_are_ignored_by_key_name_and_by_iso_8601_values():
    rec = {"result": {"createdAt": 1700000000, "when": "2026-11-29T20:03:26Z", "text": "2026-01-01"}}
    new = {"result": {"createdAt": 1800000000, "when": "2026-11-30T08:00:00.123+01:00", "text": "2026-01-02"}}
    # "text" holds a date but not a date-time: a real difference.
    assert paths(rec, new) == [("$.result.text", "changed")]


def test_ignore_patterns_skip_whole_subtrees_with_wildcards_and_recursive_descent():
    rec = {
        "result": {
            "_meta": {"v": 1},
            "content": [{"text": "a", "n": 1}, {"text": "b", "n": 2}],
            "deep": {"x": {"seed": 1}},
        }
    }
    new = {
        "result": {
            "_meta": {"v": 2},
            "content": [{"text": "c", "n": 1}, {"text": "d", "n": 3}],
            "deep": {"x": {"seed": 2}},
        }
    }
    ign = Ignores(["$.result._meta", "$.result.content[*].text", "$..seed"])
    assert paths(rec, new, ign) == [("$.result.content[1].n", "changed")]


def test_ignore_paths_may_leave_out_the_dollar_and_quote_odd_keys():
    ign = Ignores(['result["io.modelcontextprotocol/serverInfo"]'])
    rec = {"result": {"io.modelcontextprotocol/serverInfo": {"version": "1"}}}
    new = {"result": {"io.modelcontextprotocol/serverInfo": {"version": "2"}}}
    assert diff(rec, new, ign) == []


def test_paths_quote_keys_that_are_not_identifiers():
    assert format_path(("result", "_meta", "io.modelcontextprotocol/serverInfo", 0)) == (
        '$.result._meta["io.modelcontextprotocol/serverInfo"][0]'
    )


@pytest.mark.parametrize("bad", ["", "$.a[", "$.a[x]", "$..", "$.a..", "$.a.[0", "$a b"])
def test_malformed_ignore_paths_are_refused_with_a_reason(bad):
    with pytest.raises(PatternError):
        parse_pattern(bad)


def test_a_diff_stops_at_its_limit():
    rec = {"result": {str(i): i for i in range(50)}}
    new = {"result": {str(i): i + 1 for i in range(50)}}
    assert len(diff(rec, new, limit=10)) == 10
