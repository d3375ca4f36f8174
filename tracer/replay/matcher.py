"""Find the recorded request that an incoming request stands for.

Three modes:

- `params` (default): same method and same params, ignoring the JSON-RPC id and `params._meta`, in any
  order. For an MRTR retry, `inputResponses` is compared by its keys only (the host's answers may be
  worded differently), `requestState` exactly. `initialize` matches by method alone (every host
  describes itself differently). Identical requests get their recorded answers in recorded order;
  once used up, the last one answers again.
- `sequential`: the recorded order, by method only: the n-th request gets the n-th recorded answer.
- `strict`: the recorded order, with the same params including `_meta` (ids and progress tokens
  excepted: the caller picks those).

The mock answers a host with it; the replayer uses it the other way round, to answer a server's
requests from the capture. (It lives in replay, beside the recordings it matches against, so mock
builds on replay and never the reverse.)
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tracer.replay.diff import Difference, Ignores, diff
from tracer.replay.recording import Exchange, is_modern
from tracer.safejson import Unserializable, wire_exact

METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


class MatchMode(StrEnum):
    PARAMS = "params"
    SEQUENTIAL = "sequential"
    STRICT = "strict"


def normalise(method: str, params: Any, mode: MatchMode) -> Any:
    """The part of the params a mode compares."""
    if type(params) is not dict:
        return params
    out = dict(params)
    meta = out.get("_meta")
    if mode is MatchMode.STRICT:
        if type(meta) is dict and "progressToken" in meta:
            meta = {k: v for k, v in meta.items() if k != "progressToken"}
            out["_meta"] = meta
            if not meta:
                del out["_meta"]
        return out
    out.pop("_meta", None)
    responses = out.get("inputResponses")
    if type(responses) is dict:
        out["inputResponses"] = sorted(responses)
    return out


def _key(value: Any) -> bytes | None:
    try:
        return wire_exact.dumps(value, sort_keys=True)
    except Unserializable:  # too deep to write down: it matches nothing (and the miss says so)
        return None


@dataclass(slots=True)
class Match:
    exchange: Exchange | None
    code: int = 0
    message: str = ""
    data: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.exchange is not None

    def error(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


@dataclass
class Matcher:
    """Matches incoming requests against recorded ones. One matcher per served session."""

    exchanges: Sequence[Exchange]
    mode: MatchMode = MatchMode.PARAMS
    what: str = "request"  # how errors name the recorded side ("request", "server request")
    _index: dict[tuple[str, bytes], list[Exchange]] = field(default_factory=dict, init=False)
    _by_method: dict[str, list[Exchange]] = field(default_factory=dict, init=False)
    _used: dict[int, int] = field(default_factory=dict, init=False)
    _pos: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.exchanges = sorted(self.exchanges, key=lambda e: e.seq)
        for ex in self.exchanges:
            self._by_method.setdefault(ex.method, []).append(ex)
            key = _key(normalise(ex.method, ex.params, self.mode)) if self.mode is MatchMode.PARAMS else None
            if key is not None:
                self._index.setdefault((ex.method, key), []).append(ex)

    def known_method(self, method: str) -> bool:
        return method in self._by_method

    def match(self, method: str, params: Any) -> Match:
        if self.mode is MatchMode.PARAMS:
            return self._match_params(method, params)
        return self._match_ordered(method, params)

    # -- modes -------------------------------------------------------------------------------

    def _pick(self, candidates: list[Exchange]) -> Exchange:
        for ex in candidates:
            if not self._used.get(id(ex)):
                self._used[id(ex)] = 1
                return ex
        ex = candidates[-1]
        self._used[id(ex)] += 1
        return ex

    def _match_params(self, method: str, params: Any) -> Match:
        key = _key(normalise(method, params, self.mode))
        hits = self._index.get((method, key)) if key is not None else None
        if not hits and method == "initialize":
            hits = self._by_method.get(method)
        if hits:
            # A capture may hold both eras (a dual-era host, several sessions): a modern request gets a
            # modern answer (it has resultType, _meta...), a legacy one a legacy answer, when there is one.
            modern = is_modern(params)
            same_era = [ex for ex in hits if is_modern(ex.params) == modern]
            return Match(self._pick(same_era or hits))
        return self._miss(method, params)

    def _match_ordered(self, method: str, params: Any) -> Match:
        if self._pos >= len(self.exchanges):
            return self._miss(
                method,
                params,
                note=f"the recording has no more requests (all {len(self.exchanges)} were served in order)",
            )
        expected = self.exchanges[self._pos]
        if expected.method != method:
            return self._expected(expected, method, params, [])
        if self.mode is MatchMode.STRICT:
            diffs = diff(
                {"params": normalise(method, expected.params, self.mode)},
                {"params": normalise(method, params, self.mode)},
                Ignores(defaults=False),
            )
            if diffs:
                return self._expected(expected, method, params, diffs)
        self._pos += 1
        return Match(expected)

    # -- errors that name the closest recorded request ------------------------------------------

    def _expected(self, expected: Exchange, method: str, params: Any, diffs: list[Difference]) -> Match:
        where = f" (differs at {_paths(diffs)})" if diffs else ""
        msg = (
            f"{method_text(method)} does not match the next recorded {self.what} in {self.mode.value} mode: expected "
            f"{_show(expected)}{where}"
        )
        return Match(
            None,
            INVALID_PARAMS if expected.method == method else METHOD_NOT_FOUND,
            msg,
            _data(expected, diffs),
        )

    def _miss(self, method: str, params: Any, note: str = "") -> Match:
        best = self.closest(method, params)
        code = INVALID_PARAMS if method in self._by_method else METHOD_NOT_FOUND
        if code == METHOD_NOT_FOUND:
            head = f"Method not found: the recording has no {method_text(method)} {self.what}"
        else:
            head = f"no recorded {method_text(method)} {self.what} matches these params"
        if note:
            head += f"; {note}"
        if best is None:
            return Match(None, code, head + " (the recording has none at all)", None)
        ex, diffs = best
        where = f", which differs at {_paths(diffs)}" if diffs and ex.method == method else ""
        return Match(
            None, code, f"{head}; closest recorded {self.what}: {_show(ex)}{where}", _data(ex, diffs)
        )

    def closest(self, method: str, params: Any) -> tuple[Exchange, list[Difference]] | None:
        """The recorded request most like this one, and where their params differ."""
        best: tuple[float, int, Exchange, list[Difference]] | None = None
        mine = {"params": normalise(method, params, MatchMode.PARAMS)}
        for ex in self.exchanges:
            theirs = {"params": normalise(ex.method, ex.params, MatchMode.PARAMS)}
            diffs = diff(theirs, mine, Ignores(defaults=False))
            size = max(_leaves(theirs), _leaves(mine), 1)
            sim = max(0.0, 1.0 - len(diffs) / size)
            if ex.method == method:
                score = 2.0 + sim
            else:
                score = difflib.SequenceMatcher(None, ex.method, method).ratio() + 0.5 * sim
            if best is None or score > best[0]:
                best = (score, ex.seq, ex, diffs)
        return (best[2], best[3]) if best else None


def _leaves(v: Any) -> int:
    if type(v) is dict:
        return sum(_leaves(x) for x in v.values()) or 1
    if type(v) is list:
        return sum(_leaves(x) for x in v) or 1
    return 1


def _paths(diffs: list[Difference], limit: int = 3) -> str:
    parts = []
    for d in diffs[:limit]:
        if d.change == "changed":
            parts.append(
                f"{d.path} (recorded {wire_exact.compact(d.recorded, 40)}, got {wire_exact.compact(d.new, 40)})"
            )
        elif d.change == "added":
            parts.append(f"{d.path} (not recorded)")
        elif d.change == "removed":
            parts.append(f"{d.path} (missing)")
        else:
            parts.append(f"{d.path} (other type)")
    more = f" and {len(diffs) - limit} more" if len(diffs) > limit else ""
    return ", ".join(parts) + more


METHOD_SHOWN = 200  # characters of a method name an answer or a log line repeats


def method_text(method: str) -> str:
    """A request's method as an error message or a log line names it: a hostile one of megabytes is
    not sent back whole (one bad request costs one short error answer)."""
    if type(method) is not str:  # (a classified request's is a str; any other caller's may not be)
        return wire_exact.compact(method, METHOD_SHOWN)
    if len(method) <= METHOD_SHOWN:
        return method
    return f"{method[:METHOD_SHOWN]}… ({len(method) - METHOD_SHOWN:,} more characters)"


def _show(ex: Exchange) -> str:
    params = normalise(ex.method, ex.params, MatchMode.PARAMS)
    shown = f" {wire_exact.compact(params)}" if params else ""
    where = f" (capture line {ex.line})" if ex.line else f" (seq {ex.seq})"
    return f"{ex.method}{shown}{where}"


def _data(ex: Exchange, diffs: list[Difference]) -> dict[str, Any]:
    closest: dict[str, Any] = {"method": ex.method, "seq": ex.seq}
    params = normalise(ex.method, ex.params, MatchMode.PARAMS)
    if params is not None:
        closest["params"] = params
    if ex.line:
        closest["line"] = ex.line
    out: dict[str, Any] = {"closest": closest}
    if diffs:
        out["differences"] = [d.to_dict() for d in diffs[:20]]
    return out
