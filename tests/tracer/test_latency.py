"""The summary's latency table: exact for a session a person reads, bounded for one that runs for days."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.latency import EXACT_MAX, METHODS_MAX, OTHER_METHODS, Latencies, percentile


def _exact(values: list[int]) -> dict[str, int]:
    ordered = sorted(values)
    return {
        "count": len(ordered),
        "p50": percentile(ordered, 50),
        "p95": percentile(ordered, 95),
        "max": ordered[-1],
    }


@settings(deadline=None)  # no timed assertion: the machine is shared
@given(st.lists(st.integers(min_value=-(2**62), max_value=2**62), min_size=1, max_size=200))
def test_a_short_session_gets_the_exact_nearest_rank_figures(values):
    lat = Latencies()
    for v in values:
        lat.add("tools/call", v)
    assert lat.table() == {"tools/call": _exact(values)}


def test_a_session_of_a_million_answers_keeps_a_few_hundred_buckets_and_percentiles_within_one_percent():
    rng = random.Random(7)
    values = [int(rng.lognormvariate(14, 1.2)) for _ in range(1_000_000)]  # ~1 ms, a long tail
    lat = Latencies()
    for v in values:
        lat.add("tools/call", v)
    assert lat.buckets() < 2_000  # (8 bytes a value would be 8 MB)
    got, want = lat.table()["tools/call"], _exact(values)
    assert got["count"] == want["count"] and got["max"] == want["max"]
    for q in ("p50", "p95"):
        assert abs(got[q] - want[q]) <= want[q] * 0.01, (q, got[q], want[q])


def test_values_past_the_exact_limit_still_order_negative_zero_and_positive_latencies():
    # (a foreign file's timestamps can make a latency negative)
    values = [-5_000] * 100 + [0] * (EXACT_MAX // 2) + [7_000] * (EXACT_MAX // 2 + 200)
    lat = Latencies()
    for v in values:
        lat.add("ping", v)
    row = lat.table()["ping"]
    assert row["count"] == len(values)
    assert abs(row["p50"] - 7_000) <= 70  # (rank 4,246 of 8,492: past the 4,196 at or below zero)
    assert lat.table()["ping"] == row
    assert abs(row["p95"] - 7_000) <= 70 and row["max"] == 7_000


def test_a_peer_inventing_method_names_cannot_grow_the_table_without_bound():
    lat = Latencies()
    for i in range(METHODS_MAX + 5_000):
        lat.add(f"x/{i}", 1_000)
    table = lat.table()
    assert len(table) == METHODS_MAX + 1
    assert table[OTHER_METHODS]["count"] == 5_000
