"""What the viewer's analysis process (tracer.view.pipeline.Analysis) knows of the row writer's stash
(tracer.view.rowfill.RowFiller.stash: the requests whose rows learn their answer) and of the
requests pairing changes after their row, so that the writer reads each request's `Analysed` as
the one-process analysis reads it, when its answer comes and at the flush.

Only tracer.update.pairing changes a request's `Analysed` after its row: when its answer comes (its
partner, latency and first round become the answer's own: the writer derives them from the answer)
and when an HTTP exchange answers it (answered_at_http_level). The request an answer changed is
the one of its PendingRequest's line (lines are unique). What is kept per request is its message,
as long as lint's own pending table keeps it; requests whose change no answer row can tell (a
batch's, one a later request took the stash place of) are kept until the flush, when the writer
settles their rows. A failed HTTP exchange's requests are told at its row, after a flush too
(flow_open): the writer settles their rows again there (RowFiller.http_answered).
"""

from __future__ import annotations

from typing import Any

from tracer.model import Analysed as _Analysed


class StashMirror:
    """The requests the writer's stash holds, and those whose change it must still learn."""

    def __init__(self) -> None:
        # requests fed since the last flush (the writer's waiting rows) that are no batch's and not
        # plain (encode): [message, line, partner, latency, first round, pairing note as last sent]
        self.fresh: list[list] = []
        # plain requests fed since the last flush on an HTTP exchange (one answered at the HTTP level
        # changes without an answer row): their messages, None once their change was sent
        self.fresh_http: list[Any] = []
        # plain requests fed since the last flush that the writer's stash no longer holds (a later
        # request took their (seq, connection, id), or an answer that was not theirs popped them) but
        # whose rows still wait for the flush: line -> message, so their answer can tell their change
        self.shadowed: dict[int, Any] = {}
        # a batch's requests fed since the last flush: [message, line, place in its batch, what was
        # last sent of it]
        self.fresh_members: list[list] = []
        # (seq, connection, id) -> a request awaiting its answer, as the writer's stash keeps them
        # (RowFiller.remember): a plain request's message itself (what was sent of it is what it
        # had when fed: no partner, latency or pairing note), another's entry in `fresh`, or, for
        # each request of a batch, the batch's [[message, line, place in its batch, what was last
        # sent of it]...] (the writer reads every request of the batch again when one is
        # answered); pairing changes their messages when the answer comes. Nothing else is kept
        # per request: lint's own pending table holds the same messages as long.
        self.open: dict[tuple, Any] = {}
        self.batch_open: list = []  # the last batch's requests, as `open` holds them (encode)
        # pairing may have changed a request no answer row told the writer of (an HTTP exchange
        # answered it, or a batch's request was answered): changed() looks
        self.dirty = False
        # (connection, HTTP exchange) -> the requests it carried, as `open` holds them (its plain
        # request's message, or its entry in `fresh` or `fresh_members`): a failed exchange answers
        # them at the HTTP level, after a flush too, and the writer settles their rows again then
        # (tracer.view.rowfill.RowFiller.http_answered)
        self.flow_open: dict[tuple, list] = {}

    def carried(self, rec: Any, held: Any) -> None:
        """Request HELD (as `open` holds it) was sent on REC's HTTP exchange."""
        fid = rec.http.get("flow")
        if type(fid) is str or type(fid) is int:
            self.flow_open.setdefault((rec.conn, fid), []).append(held)

    def http_answered(self, rec: Any) -> list[tuple]:
        """The requests the failed exchange REC carried, as pairing has left them (update_of's)."""
        out: list[tuple] = []
        for held in self.flow_open.pop((rec.conn, rec.http.get("flow")), ()):
            if held.__class__ is _Analysed:
                out.append(
                    (held.rec.line, -1, held.partner_seq, held.latency_ns, held.op_seq, held.pair_note)
                )
            elif len(held) == 6:  # (its entry in `fresh`: what was sent of it is kept up to date)
                a = held[0]
                held[2], held[3], held[4], held[5] = a.partner_seq, a.latency_ns, a.op_seq, a.pair_note
                out.append((held[1], -1, *held[2:]))
            else:
                out.append(self.update_of(held))
        return out

    def prune_flows(self) -> None:
        """At a flush: only the requests the writer's stash still holds (`open`) are kept."""
        opened = self.open

        def held_still(held: Any) -> bool:
            a = held if held.__class__ is _Analysed else held[0]
            now = opened.get((a.rec.seq, a.rec.conn, a.idkey))
            return now is held or (type(now) is list and now and type(now[0]) is list and held in now)

        self.flow_open = {
            flow: kept
            for flow, carried in self.flow_open.items()
            if (kept := [h for h in carried if held_still(h)])
        }

    def answer(self, a: Any, req: Any, derive: bool = True) -> int | list | None:
        """The answered request's message as pairing has just changed it, for the writer to read
        again with the answer's row: its line when it is what the writer derives from the answer
        (partner: the answer's seq, its latency and first round; tracer.update.pairing sets the
        request's from the answer's own values), else [update_of...]; None when nothing changed."""
        return self.answered(a, req, self.open.pop((req.seq, a.rec.conn, req.idkey), None), derive)

    def answered(self, a: Any, req: Any, hit: Any, derive: bool) -> int | list | None:
        """answer() once the entry of `open` for the answered request's (seq, connection, id) is popped
        (HIT, as the writer's stash pops its own). The request pairing changed is the one of REQ's
        line (lines are unique): HIT when it is that one, else one `shadowed` holds (its row waits for
        the flush), else one whose change changed() finds, or one the writer reads no more."""
        line = req.line
        if hit is not None and hit.__class__ is not _Analysed:
            if type(hit[0]) is list:  # a batch's: every request of its batch, as the writer's stash holds it
                self.dirty = True
                return [self.update_of(held) for held in hit]
            msg = hit[0]  # (a request sent with its whole `Analysed`: its entry in `fresh`)
            partner, lat, op = hit[2], hit[3], hit[4] = msg.partner_seq, msg.latency_ns, msg.op_seq
            if (
                derive
                and partner is a.rec.seq
                and lat is a.latency_ns
                and op is a.op_seq
                and msg.pair_note is hit[5]
            ):
                return hit[1]
            self.dirty = True  # (not the request pairing answered: seqs restarted, say)
            note = hit[5] = msg.pair_note
            out = [(hit[1], -1, partner, lat, op, note)]
            if hit[1] != line:
                mine = self.shadowed.pop(line, None)
                if mine is not None:
                    out.append((line, -1, mine.partner_seq, mine.latency_ns, mine.op_seq, mine.pair_note))
            return out
        if hit is not None and hit.rec.line != line:
            self.shadowed[hit.rec.line] = hit  # (popped from the writer's stash too: its row still waits)
            hit = None
        if hit is None:
            hit = self.shadowed.pop(line, None)
            if hit is None:
                self.dirty = True  # (a request sent whole, or a batch's, that another took the place of)
                return None
        partner, lat, op, note = hit.partner_seq, hit.latency_ns, hit.op_seq, hit.pair_note
        if derive and partner is a.rec.seq and lat is a.latency_ns and op is a.op_seq and note is None:
            return line
        return [(line, -1, partner, lat, op, note)]

    @staticmethod
    def update_of(held: list) -> tuple:
        """A batch's request's message as pairing left it: (its row's line, its place in its batch,
        partner, latency, first round, pairing note)."""
        a = held[0]
        state = held[3] = (a.partner_seq, a.latency_ns, a.op_seq, a.pair_note)
        return (held[1], held[2], *state)

    def changed(self) -> list[tuple]:
        """The requests fed since the last flush that pairing changed since they were last sent
        (an HTTP exchange answers the requests it carried without a response message)."""
        out: list[tuple] = []
        if not self.dirty:
            return out
        self.dirty = False
        fresh_http = self.fresh_http
        for i, a in enumerate(fresh_http):
            if a is not None and (
                a.partner_seq is not None or a.latency_ns is not None or a.pair_note is not None
            ):
                fresh_http[i] = None  # (sent: answered, it changes no more)
                out.append((a.rec.line, -1, a.partner_seq, a.latency_ns, a.op_seq, a.pair_note))
        for held in self.fresh:
            a = held[0]
            partner, lat, op, note = a.partner_seq, a.latency_ns, a.op_seq, a.pair_note
            if partner is not held[2] or lat is not held[3] or op is not held[4] or note is not held[5]:
                held[2], held[3], held[4], held[5] = partner, lat, op, note
                out.append((held[1], -1, partner, lat, op, note))
        for held in self.fresh_members:
            a = held[0]
            if (a.partner_seq, a.latency_ns, a.op_seq, a.pair_note) != held[3]:
                out.append(self.update_of(held))
        return out
