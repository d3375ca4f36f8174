"""The rule cases' HTTP records are ones the recorder could write: a rule judging a case sees the
facts a real capture would give it, so a finding there is one a user would get."""

from __future__ import annotations

from tests.cases import load_rule_cases
from tracer.http.headers import header

CASES = load_rule_cases()


def _http_records(case: dict):
    for i, entry in enumerate(case["messages"], 1):
        http = entry.get("http_only") or entry.get("http")
        if isinstance(http, dict):
            yield i, http


def test_a_response_head_carries_the_content_type_of_its_headers():
    """tracer.http.recorder writes `content_type` beside `resp_headers` from their Content-Type:
    a case with the header but not the field showed MCP714's '(no Content-Type)' on a GET whose
    answer had one (MCP725's GET 400)."""
    wrong = []
    for rule_id, case in CASES:
        for i, http in _http_records(case):
            if "resp_headers" not in http:
                continue
            ct = header(http["resp_headers"], "content-type")
            if http.get("content_type") != ct:
                wrong.append(f"{rule_id}: {case['name']}: entry {i}: {http.get('content_type')!r} != {ct!r}")
    assert not wrong, "\n".join(wrong)
