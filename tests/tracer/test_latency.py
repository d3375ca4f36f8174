"""The summary's latency table: exact for a session a person reads, bounded for one that runs for days."""

from __future__ import annotations

import random

import pytest
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


def _batches(rng: random.Random, answers: list[tuple[str, int]]):
    """The answers cut into runs of random length, each run's values by method in the order the
    methods first came in it (as the viewer's summary hands them over)."""
    i = 0
    while i < len(answers):
        n = rng.choice([1, 7, 500, EXACT_MAX, 3 * EXACT_MAX])
        run: dict[str, list[int]] = {}
        for method, v in answers[i : i + n]:
            run.setdefault(method, []).append(v)
        yield from run.items()
        i += n


@pytest.mark.parametrize("n", [1, 60, EXACT_MAX - 50, EXACT_MAX, EXACT_MAX + 1, 3 * EXACT_MAX])
@pytest.mark.parametrize("methods", [1, METHODS_MAX + 20])
@pytest.mark.parametrize("values", ["positive", "signed", "huge"])
def test_latencies_added_in_batches_make_the_table_they_make_one_by_one(n, methods, values):
    rng = random.Random(f"{n} {methods} {values}")
    names = ["tools/call"] if methods == 1 else [f"m{i}" for i in range(methods)]

    def value() -> int:
        v = int(min(rng.lognormvariate(14, 1.5), 1e18))  # (64 bits: what two timestamps give)
        if values == "signed":
            return rng.choice([v, -v, 0])
        return rng.choice([v, 2**63 - 1]) if values == "huge" else v

    answers = [(rng.choice(names), value()) for _ in range(n)]
    one, many = Latencies(), Latencies()
    for method, v in answers:
        one.add(method, v)
    for method, batch in _batches(rng, answers):
        many.add_many(method, batch)
    assert many.table() == one.table()
    assert many.buckets() == one.buckets()
