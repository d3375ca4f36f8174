"""The bounded tables session state is made of: a window of the newest entries (`BoundedMap`) and
the compact record of a legacy session's request ids (`UsedIds`). Memory stays flat however long a
session runs (tests/tracer/state/test_bounded_state.py, tests/bench/bench_memory.py)."""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracer.state.requests import PendingRequest

MEMORY_CAP = 50_000  # the default window of a BoundedMap
# HTTP exchanges whose requests a session remembers (the session's and the tracking's flow tables)
FLOW_REQUESTS_CAP = 2_048
USED_IDS_CAP = 10_000  # legacy request ids remembered with their request (older ones: UsedIds.ranges)
OLD_STRING_IDS_CAP = 200_000  # older legacy string ids, as 64-bit digests
ID_RANGES_CAP = 10_000  # runs of older legacy integer ids (a counting client needs one)


class BoundedMap(OrderedDict):
    """An insertion-ordered dict that forgets its oldest entries past `cap`."""

    def __init__(self, cap: int = MEMORY_CAP):
        super().__init__()
        self.cap = cap

    def put(self, key: Any, value: Any) -> None:
        self[key] = value
        if len(self) > self.cap:
            self.popitem(last=False)


class UsedIds:
    """The request ids of a legacy session (which must never be reused), by (direction, id key):
    the newest USED_IDS_CAP with their `PendingRequest` (a reuse names the earlier request's seq),
    older ones compactly: integer ids as runs of consecutive values per direction (a client that
    counts its ids needs one run however long the session), string ids as 64-bit digests. A reuse
    of an older id is still found; its earlier request is then unknown (`get` returns None)."""

    __slots__ = ("cap", "ranges", "recent", "strings")

    def __init__(self, cap: int | None = None):
        self.cap = cap if cap is not None else USED_IDS_CAP
        self.recent: OrderedDict = OrderedDict()  # key -> PendingRequest
        self.ranges: dict[Any, tuple[list[int], list[int]]] = {}  # direction -> (starts, ends), sorted
        self.strings: BoundedMap = BoundedMap(OLD_STRING_IDS_CAP)  # (direction, digest) -> None

    def __len__(self) -> int:
        return len(self.recent)

    def __contains__(self, key: tuple) -> bool:
        return key in self.recent or self.seen_before(key)

    def __getitem__(self, key: tuple) -> PendingRequest:
        return self.recent[key]

    def get(self, key: tuple, default: Any = None) -> Any:
        return self.recent.get(key, default)

    def put(self, key: tuple, req: PendingRequest) -> None:
        recent = self.recent
        recent[key] = req
        if len(recent) > self.cap:
            self._compact(*recent.popitem(last=False))

    def seen_before(self, key: tuple) -> bool:
        """Whether KEY is among the ids compacted out of the recent window."""
        direction, (kind, value) = key
        if kind == "n" and type(value) is int:
            runs = self.ranges.get(direction)
            if runs is None:
                return False
            i = bisect_right(runs[0], value) - 1
            return i >= 0 and value <= runs[1][i]
        return (direction, _digest(value)) in self.strings

    def _compact(self, key: tuple, req: Any) -> None:
        direction, (kind, value) = key
        if kind != "n" or type(value) is not int:
            self.strings.put((direction, _digest(value)), None)
            return
        starts, ends = self.ranges.setdefault(direction, ([], []))
        i = bisect_right(starts, value) - 1
        if i >= 0 and starts[i] <= value <= ends[i]:
            return
        if i >= 0 and ends[i] == value - 1:  # extends the run before it (the common case: counting up)
            ends[i] = value
            if i + 1 < len(starts) and starts[i + 1] == value + 1:  # and joins the next one
                ends[i] = ends.pop(i + 1)
                starts.pop(i + 1)
        elif i + 1 < len(starts) and starts[i + 1] == value + 1:
            starts[i + 1] = value
        else:
            starts.insert(i + 1, value)
            ends.insert(i + 1, value)
            if len(starts) > ID_RANGES_CAP:  # ids scattered beyond reason: the lowest runs are forgotten
                del starts[0], ends[0]


def _digest(value: Any) -> int:
    import hashlib

    return int.from_bytes(
        hashlib.blake2b(repr(value).encode("utf-8", "surrogatepass"), digest_size=8).digest()
    )
