"""Property: no input crashes a reader (issue 12). Mutated real mini-sessions and arbitrary JSON go
through the capture reader, the analyser, every report format (text, json, sarif, junit, github:
each a complete document, in strict UTF-8) and the viewer's row/preview code; a few through the
viewer's background analysis; arbitrary HAR entries through the HAR reader. Bounded: a few seconds.
The big run (100,000 inputs) is tests/bench/fuzz_lint.py."""

from __future__ import annotations

import functools
import io
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz_support import capture_bytes, mutate, run_annotator, run_pipeline, seed_sessions

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)


@functools.cache
def _seeds():
    return seed_sessions()


def _json_values():
    # lone surrogates included (legal as JSON escapes), as are controls and non-characters
    text = st.text(
        alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=12
    )
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**70), max_value=2**70)
        | st.floats(allow_nan=False, allow_infinity=False)
        | text
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
        max_leaves=12,
    )


@SETTINGS
@given(st.randoms(use_true_random=False))
def test_mutated_real_sessions_never_crash_reader_analyser_reports_or_rows(rnd):
    data = capture_bytes(mutate(rnd, rnd.choice(_seeds())))
    assert run_pipeline(data) is None


@settings(SETTINGS, max_examples=25)
@given(st.randoms(use_true_random=False))
def test_mutated_real_sessions_never_stop_the_viewers_background_analysis(rnd):
    data = capture_bytes(mutate(rnd, rnd.choice(_seeds())))
    assert run_annotator(data) is None


@SETTINGS
@given(st.randoms(use_true_random=False), _json_values(), st.integers(min_value=0, max_value=2))
def test_any_json_value_as_a_message_or_a_record_member_never_crashes(rnd, value, where):
    session = rnd.choice(_seeds())
    recs = json.loads(json.dumps(session))
    rec = rnd.choice(recs) if recs else {}
    if where == 0 and rec:
        rec["text"] = json.dumps(value)  # (escapes lone surrogates, writes big integers exactly)
    elif where == 1 and rec:
        rec[rnd.choice(["transport", "conn", "offset", "http", "sse", "data", "seq", "t_ns", "eol"])] = value
    else:
        recs.append(
            {
                "type": "message",
                "seq": 99,
                "t_ns": 1,
                "dir": "s2c",
                "transport": "http",
                "conn": "c",
                "text": json.dumps({"jsonrpc": "2.0", "id": value, "result": value}),
            }
        )
    assert run_pipeline(capture_bytes(recs)) is None


@SETTINGS
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["request", "response", "time", "timings", "startedDateTime"]),
            _json_values(),
            max_size=5,
        ),
        max_size=4,
    )
)
def test_any_har_entries_are_read_without_a_crash(entries):
    from tracer.inputs.har import read

    good = {
        "request": {
            "method": "POST",
            "url": "http://h/mcp",
            "postData": {"text": '{"jsonrpc":"2.0","method":"x"}'},
        },
        "response": {"status": 202},
        "startedDateTime": "2026-01-01T00:00:00Z",
        "time": 1,
    }
    doc = {"log": {"entries": [{**good, **e} for e in entries]}}
    items = list(read(io.BytesIO(json.dumps(doc).encode()), "f.har"))
    assert all(-(1 << 63) <= getattr(x, "t_ns", 0) < 1 << 63 for x in items)
