"""Which of many known byte strings occur in a text, found in one pass over the text.

tracer.redact_echo's EchoGuard looks for every credential and session id a recorder has seen in
every body, header and SSE field it stores. One `form in raw` per known value costs about a
microsecond even in a short message (CPython's search prepares a long needle anew on each call),
so 64 session ids cost some 70 us per body, and a proxy in front of thousands of sessions could
not remember them all. `KnownForms` makes the cost follow the text's length, not the number of
values.

How: a form of at least B bytes is indexed under each of its Q-byte slices that start in its first
S = B - Q + 1 bytes; the text is cut into Q-byte slices at every S-th byte (by `struct`, in C) and
those slices are looked up all at once (a set intersection). Any occurrence of the form spans one
of the cut positions, whose slice is one the form was indexed under: a form that occurs is always
a candidate (nothing is missed), and each candidate is confirmed with one substring search
(nothing is hidden that is not there). Forms are grouped by length, B = 64, 32, 16 and 8 with
Q = B / 2, so one short value does not make the text be cut at every few bytes for all the long
ones. Forms under 8 bytes (the tee's short command-line secrets; EchoGuard learns none) are
searched one by one.

Memory: S slices per form (17 for a 32- to 63-byte session id: about 1.8 KB with its dict
entries, 7.4 MB for 4,096 uuid4().hex ids, tracemalloc), bounded by the caller's cap on values.
A few forms in a short text are searched one by one (cheaper; see _SEARCH_FIXED). Total: any
bytes give an answer, never an exception.
"""

from __future__ import annotations

import struct
from itertools import chain

# (B, Q): forms of at least B bytes are indexed by Q-byte slices; the text is cut every B-Q+1 bytes
_TIERS = ((64, 32), (32, 16), (16, 8), (8, 4))
# The start of a form a cut record may end with is looked for from this many bytes (MIN_CUT_TAIL)
_HEAD = 4
# Searching a text for one form costs about 4,000 + 2 per byte (instructions, callgrind; the same
# order in time), cutting it about 10,000 + 72 per byte whatever the number of forms (its slices
# are objects): so up to 4 forms in a 112-byte message, 19 in 2,000 bytes or 35 in 56,000 bytes
# are searched one by one (tests/bench/bench_recorder_echo.py measures the whole recorder).
_SEARCH_FIXED, _SEARCH_BYTES = 4000, 2
_CUT_FIXED, _CUT_BYTES = 10000, 72


class _Tier:
    __slots__ = ("b", "block", "grams", "q", "stride")

    def __init__(self, b: int, q: int):
        self.b = b  # (its shortest form: a shorter text holds none)
        self.q = q
        self.stride = b - q + 1
        # 64 slices at once, cut in C: Q bytes kept, the rest of each stride skipped
        self.block = struct.Struct(f"{q}s{self.stride - q}x" * 64)
        self.grams: dict[bytes, bytes | list[bytes]] = {}

    def cut(self, raw: bytes) -> list:
        """RAW's Q-byte slices at every stride-th byte: whole blocks of them, then the rest."""
        size, block = len(raw), self.block.size
        whole = size - size % block
        q = self.q
        out = [raw[p : p + q] for p in range(whole, size - q + 1, self.stride)]
        if whole:
            out += chain.from_iterable(self.block.iter_unpack(memoryview(raw)[:whole]))
        return out

    def slices(self, form: bytes) -> set[bytes]:
        return {form[j : j + self.q] for j in range(self.stride)}


class KnownForms:
    """A bag of byte strings ("forms": tracer.redact_echo.secret_forms' output), each added and
    removed as often as the values having it come and go; `found` says which occur in a text."""

    __slots__ = ("_count", "_heads", "_lengths", "_short", "_sorted", "_tiers")

    def __init__(self) -> None:
        self._count: dict[bytes, int] = {}  # form -> how many added values have it
        self._tiers = [_Tier(b, q) for b, q in _TIERS]
        self._short: list[bytes] = []  # forms under 8 bytes: looked for one by one
        self._heads: dict[bytes, list[bytes]] = {}  # first 4 bytes -> forms (cut tails)
        self._lengths: dict[int, int] = {}  # length -> indexed forms of it (how far back a tail starts)
        self._sorted: tuple[bytes, ...] | None = ()

    def __bool__(self) -> bool:
        return bool(self._count)

    def __len__(self) -> int:
        return len(self._count)

    def add(self, forms: tuple[bytes, ...]) -> None:
        for form in forms:
            n = self._count.get(form, 0)
            self._count[form] = n + 1
            if n == 0 and form:
                self._index(form)

    def remove(self, forms: tuple[bytes, ...]) -> None:
        for form in forms:
            n = self._count.get(form, 0)
            if n > 1:
                self._count[form] = n - 1
            elif n == 1:
                del self._count[form]
                self._unindex(form)

    def all(self) -> tuple[bytes, ...]:
        """Every form, longest first."""
        if self._sorted is None:
            self._sorted = tuple(sorted(self._count, key=len, reverse=True))
        return self._sorted

    def found(self, raw: bytes) -> tuple[bytes, ...]:
        """The forms that occur in RAW, longest first (so one holding another is hidden whole)."""
        size = len(raw)
        if len(self._count) * (_SEARCH_FIXED + _SEARCH_BYTES * size) <= _CUT_FIXED + _CUT_BYTES * size:
            return tuple([f for f in self.all() if f in raw])
        hits: set[bytes] = set()
        for tier in self._tiers:
            if size < tier.b or not tier.grams:
                continue
            keys = tier.grams.keys()
            cut = tier.cut(raw)
            if keys.isdisjoint(cut):  # (most texts: no slice is known, no set is built)
                continue
            for gram in keys & cut:
                held = tier.grams[gram]
                for form in (held,) if type(held) is bytes else held:
                    if form not in hits and form in raw:
                        hits.add(form)
        if self._short:
            hits.update(f for f in self._short if f in raw)
        return tuple(sorted(hits, key=len, reverse=True)) if hits else ()

    def tail_candidates(self, raw: bytes) -> tuple[bytes, ...]:
        """The forms whose start RAW may end with (a record cut short): those whose first 4 bytes
        are in RAW's last bytes, and the short ones (for tracer.redact_echo.hide_cut_tail)."""
        size = len(raw)
        found: dict[bytes, None] = {}
        longest = max(self._lengths, default=0)
        for p in range(max(0, size - longest + 1), size - _HEAD + 1):
            for form in self._heads.get(raw[p : p + _HEAD], ()):
                found[form] = None
        return tuple(sorted([*found, *self._short], key=len, reverse=True))

    def _index(self, form: bytes) -> None:
        self._sorted = None
        if len(form) < _TIERS[-1][0]:
            self._short.append(form)
            return
        self._lengths[len(form)] = self._lengths.get(len(form), 0) + 1
        self._heads.setdefault(form[:_HEAD], []).append(form)
        tier = next(t for (b, _q), t in zip(_TIERS, self._tiers, strict=True) if len(form) >= b)
        grams = tier.grams
        for gram in tier.slices(form):
            held = grams.get(gram)
            if held is None:
                grams[gram] = form  # (most slices name one form: no list for it)
            elif type(held) is bytes:
                grams[gram] = [held, form]
            else:
                held.append(form)

    def _unindex(self, form: bytes) -> None:
        self._sorted = None
        if len(form) < _TIERS[-1][0]:
            self._short.remove(form)
            return
        heads = self._heads[form[:_HEAD]]
        heads.remove(form)
        if not heads:
            del self._heads[form[:_HEAD]]
        tier = next(t for (b, _q), t in zip(_TIERS, self._tiers, strict=True) if len(form) >= b)
        grams = tier.grams
        for gram in tier.slices(form):
            held = grams.get(gram)
            if held is form or held == form:
                del grams[gram]
            elif type(held) is list and form in held:
                held.remove(form)
                if len(held) == 1:
                    grams[gram] = held[0]
        left = self._lengths[len(form)] - 1
        if left:
            self._lengths[len(form)] = left
        else:
            del self._lengths[len(form)]
