"""Latency per method for the summary, in bounded memory however long a session runs.

Every answer's latency is kept exactly (nearest-rank percentiles of all values) up to EXACT_MAX
answers of a method, which covers any capture a person reads answer by answer. Past that, the
method's values move into a histogram of log-scale buckets 1% wide: count, min and max stay exact,
p50 and p95 come within 1% of the exact figure, and memory stays a few hundred buckets whatever the
session's length. Distinct method names are capped as well (a peer may invent a new one per
request): past METHODS_MAX, the others are counted together under OTHER_METHODS.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter

EXACT_MAX = 8192  # answers per method kept exactly (64 KB)
METHODS_MAX = 256
OTHER_METHODS = "(other methods)"
_STEP = math.log1p(0.01)  # a bucket spans 1%


def percentile(sorted_values, q: float) -> int:
    """Nearest-rank percentile (q in 0..100) of an already sorted, non-empty sequence."""
    n = len(sorted_values)
    rank = max(1, min(n, math.ceil(q * n / 100)))
    return sorted_values[rank - 1]


def _bucket(v: int) -> int:
    """A key that sorts as the values do: 0 for zero, +k for positive, -k for negative values."""
    if v == 0:
        return 0
    k = int(math.log(abs(v)) / _STEP) + 1
    return k if v > 0 else -k


def _middle(key: int) -> float:
    if key == 0:
        return 0.0
    mid = math.exp((abs(key) - 0.5) * _STEP)
    return mid if key > 0 else -mid


class _Method:
    __slots__ = ("count", "high", "hist", "low", "values")

    def __init__(self) -> None:
        self.values: array | None = array("q")
        self.hist: dict[int, int] | None = None
        self.count = 0
        self.low = 0
        self.high = 0

    def add(self, ns: int) -> None:
        if self.count == 0 or ns < self.low:
            self.low = ns
        if self.count == 0 or ns > self.high:
            self.high = ns
        self.count += 1
        values = self.values
        if values is not None:
            values.append(ns)
            if len(values) > EXACT_MAX:
                self.hist = {}
                for v in values:
                    self._count(v)
                self.values = None
        else:
            self._count(ns)

    def extend(self, values: list[int]) -> None:
        """add() of each of VALUES (ints within 64 bits) in turn, done at once: the same state after
        (a histogram is a count per bucket, whatever the order its values came in)."""
        if not values:
            return
        lo, hi = min(values), max(values)
        if self.count == 0 or lo < self.low:
            self.low = lo
        if self.count == 0 or hi > self.high:
            self.high = hi
        self.count += len(values)
        exact = self.values
        if exact is not None:
            exact.extend(values)
            if len(exact) <= EXACT_MAX:
                return
            self.hist = {}
            self.values = None
            values = exact  # (add() moves every value kept so far into the histogram, then counts on)
            lo = min(values)
        hist = self.hist
        assert hist is not None
        if lo > 0:  # every value positive: the keys of _bucket(), a log each, no call per value
            log, step = math.log, _STEP
            for k, n in Counter([int(log(v) / step) + 1 for v in values]).items():
                hist[k] = hist.get(k, 0) + n
        else:
            for v in values:
                self._count(v)

    def _count(self, v: int) -> None:
        hist = self.hist
        assert hist is not None
        k = _bucket(v)
        hist[k] = hist.get(k, 0) + 1

    def quantile(self, q: float) -> int:
        if self.values is not None:
            return percentile(sorted(self.values), q)
        rank = max(1, min(self.count, math.ceil(q * self.count / 100)))
        seen = 0
        assert self.hist is not None
        for key in sorted(self.hist):
            seen += self.hist[key]
            if seen >= rank:
                return round(min(max(_middle(key), self.low), self.high))
        return self.high

    def row(self) -> dict[str, int]:
        return {"count": self.count, "p50": self.quantile(50), "p95": self.quantile(95), "max": self.high}


class Latencies:
    """Answer latencies by the method they answer."""

    def __init__(self) -> None:
        self._by: dict[str, _Method] = {}

    def add(self, method: str, ns: int) -> None:
        entry = self._by.get(method)
        (entry if entry is not None else self._new(method)).add(ns)

    def add_many(self, method: str, values: list[int]) -> None:
        """add(method, v) for each of VALUES in turn (the viewer's summary adds them in batches)."""
        entry = self._by.get(method)
        (entry if entry is not None else self._new(method)).extend(values)

    def _new(self, method: str) -> _Method:
        """The entry of a method not seen yet: its own, or past METHODS_MAX names the shared one."""
        if len(self._by) >= METHODS_MAX:
            method = OTHER_METHODS
            entry = self._by.get(method)
            if entry is not None:
                return entry
        entry = self._by[method] = _Method()
        return entry

    def table(self) -> dict[str, dict[str, int]]:
        return {method: entry.row() for method, entry in sorted(self._by.items())}

    def buckets(self) -> int:
        """How many values and buckets are held (what the memory bound is about)."""
        return sum(len(e.values) if e.values is not None else len(e.hist or ()) for e in self._by.values())
