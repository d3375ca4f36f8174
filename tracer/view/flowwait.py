"""The stashed requests each HTTP exchange carried (tracer.view.rowfill.RowFiller.stash). A failed
exchange answers them at the HTTP level (tracer.update.pairing.answered_at_http_level) without a
response message of its own; their rows are settled again at its row (RowFiller.http_answered), as
an answer's request's are, not only when the next flush happens to come after it."""

from __future__ import annotations

from typing import Any

from tracer.model import Record
from tracer.pairing import may_answer_at_http_level


class FlowWaiting:
    def __init__(self) -> None:
        self.flows: dict[tuple, list[tuple]] = {}  # (connection, exchange) -> [(stash key, row)]

    def __bool__(self) -> bool:
        return bool(self.flows)

    def answered_by(self, rec: Record) -> bool:
        """REC may answer requests at the HTTP level (a failed exchange), and some were carried."""
        return bool(self.flows) and rec.http is not None and may_answer_at_http_level(rec)

    def add(self, rec: Record, key: tuple, row: int) -> None:
        """The request stashed under KEY, of row ROW, was sent on REC's exchange."""
        fid = rec.http.get("flow")
        if type(fid) is str or type(fid) is int:
            carried = self.flows.setdefault((rec.conn, fid), [])
            if not carried or carried[-1] != (key, row):  # (a batch's requests: its row once)
                carried.append((key, row))

    def take(self, rec: Record) -> list[tuple]:
        """The requests REC's exchange carried (it has answered them: forgotten here)."""
        return self.flows.pop((rec.conn, rec.http.get("flow")), None) or []

    def prune(self, stash: dict[tuple, Any]) -> None:
        """At a flush: an exchange can answer only the requests the stash still holds."""
        self.flows = {
            flow: kept
            for flow, carried in self.flows.items()
            if (kept := [(k, r) for k, r in carried if (hit := stash.get(k)) is not None and hit[1] == r])
        }
