"""The notes of the viewer's analysis: for a message whose details tracer.view.details.derive can
build when shown (from its row, its partner's row and its own bytes), the one part it cannot: its
era reason and version, interned (a session's messages mostly share one), so that the row holds an
index instead of a stored details record."""

from __future__ import annotations

from typing import Any

from tracer.model import Analysed, Kind
from tracer.pairing import PairStatus
from tracer.view.details import PARTNER_FMTS, _plain
from tracer.view.rowformat import Q_MAX, Q_MIN

MAX_NOTES = 100_000  # era reasons beyond this: the rows' details are stored instead
_ANSWERED = (PairStatus.PAIRED, PairStatus.AFTER_CANCEL)
# (an Enum member read from its class costs a metaclass lookup each time: read once here)
_RESULT, _ERROR, _REQUEST, _NOTIFICATION = Kind.RESULT, Kind.ERROR, Kind.REQUEST, Kind.NOTIFICATION


class Notes:
    def __init__(self) -> None:
        self.table: dict[tuple, int] = {}  # (era reason, version[, mode]) -> note
        self.entries: list[list[Any]] = []  # note -> [era reason, version, mode] (what derive reads)
        self.new: list[list[Any]] = []  # entries not yet sent to the viewer
        self._last: tuple = (None, (), None, -1)  # (format, values, version, note) of the last note

    def take_new(self) -> list[Any] | None:
        """The entries made since the last call, as the progress report sends them: [first, entries]."""
        if not self.new:
            return None
        out = [len(self.entries) - len(self.new), self.new]
        self.new = []
        return out

    def of(self, midx: int, prow: int, oprow: int, a: Analysed) -> int:
        """The note of a message whose details tracer.view.details.derive can build from its row
        (its method index MIDX, partner row PROW and first-round row OPROW), its partner's and its
        bytes, exactly as compact() would store them; -1 for any other."""
        kind = a.kind
        ans = a.answers_method
        if kind is _RESULT or kind is _ERROR:
            if a.method is not None or (ans is not None and midx < 0):
                return -1
        elif kind is _REQUEST or kind is _NOTIFICATION:
            if midx < 0 or ans is not None:  # (the method is the row's, from the table)
                return -1
        else:  # invalid messages (their reason), batches (their members)
            return -1
        partner = a.partner_seq
        if partner is None:
            if prow >= 0:
                return -1
        elif prow < 0 or not Q_MIN <= partner < Q_MAX:
            return -1
        op = a.op_seq
        if op is None:
            if oprow >= 0:
                return -1
        elif oprow < 0 or not Q_MIN <= op < Q_MAX:
            return -1
        if (kind is _RESULT or kind is _ERROR) and a.pair_status in _ANSWERED:
            req = a.request  # (its pairing reason, derived from its own id)
            idkey = a.idkey
            if (
                ans is None
                or req is None
                or req.seq != partner
                or req.method != ans
                or req.dir is a.rec.dir
                or idkey is None
                or req.idkey != idkey
                or type(req.idkey[1]) is not type(idkey[1])
            ):
                return -1
        version = a.version
        if version is not None and type(version) is not str:
            return -1
        why = a._era_why
        mode = 0
        if type(why) is str:
            key: tuple = (why, version)
        else:
            fmt, values = why
            last = self._last
            if fmt is last[0] and version is last[2]:
                # a session's messages mostly give the reason the one before gave, from the same
                # objects (its handshake's seq and version): the same note, without its key
                lv = last[1]
                n = len(values)
                if n == len(lv) and 0 < n <= 2 and values[0] is lv[0] and (n == 1 or values[1] is lv[1]):
                    return last[3]
            if not values:
                key = (fmt, version)
            elif (
                fmt in PARTNER_FMTS
                and len(values) == 2
                and values[1] == partner
                and type(values[1]) is int
                and values[0] == ans
                and type(ans) is str
                and ans.isascii()
            ):
                key = (fmt, version, 1)
                mode = 1
            elif _plain(values):
                key = (fmt, values, version)
            else:
                key = (fmt.format(*values), version)
        note = self.table.get(key)
        if note is None:
            if len(self.table) >= MAX_NOTES:
                return -1
            note = self.table[key] = len(self.entries)
            entry = [key[0] if mode or len(key) == 2 else [key[0], list(key[1])], version, mode]
            self.entries.append(entry)
            self.new.append(entry)
        if mode == 0 and type(why) is tuple:
            self._last = (why[0], why[1], version, note)
        return note
