"""Request/response pairing, read-only: the statuses pairing gives a message and the queries rules
and consumers ask of it. The pairing itself (keyed on connection, requester direction and id with
its JSON type) is tracer.update.pairing's, the one writer of the pending table.
"""

from __future__ import annotations

from tracer.classify import id_key
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import KIND_ERROR as _KIND_ERROR
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed
from tracer.session import PendingRequest, Session


class PairStatus:
    PAIRED = "paired"
    AFTER_CANCEL = "after-cancel"  # answered although the requester had cancelled it
    UNKNOWN_ID = "unknown-id"  # MCP203
    WRONG_DIRECTION = "wrong-direction"  # MCP203: the id is pending, but from the same side
    TYPE_MISMATCH = "type-mismatch"  # MCP203: 1 vs "1"
    DUPLICATE = "duplicate"  # MCP204
    ANSWERS_NOTIFICATION = "answers-notification"  # MCP205
    NO_ID = "no-id"  # an error without id: nothing to pair
    REUSE_PENDING = "reuse-pending"  # a request id still awaiting its answer is used again
    REUSE_SESSION = "reuse-session"  # legacy: an id used earlier in the session is used again
    NEW = "new"  # a request, waiting for its answer


def fmt_id(idkey: tuple) -> str:
    return repr(idkey[1]) if idkey[0] == "s" else str(idkey[1])


def cancelled_target(m: Analysed, s: Session) -> tuple[PendingRequest | None, bool]:
    """(the request a cancel names, whether it is still pending), looked up without changing state."""
    params = m.params
    if params is None:
        return None, False
    key = id_key(params.get("requestId"))
    if key is None:
        return None, False
    req = s.pending.get((m.rec.dir, key))
    if req is not None:
        return req, True
    req = s.cancelled.get((m.rec.dir, key)) if s.cancelled else None
    if req is not None:  # cancelled long ago and never answered: as good as pending
        return req, True
    return s.answered.get((m.rec.dir, key)), False


def operation_latency_ns(m: Analysed) -> int | None:
    """For a response: the time since the first round of its operation was sent. For the final
    response of an MRTR operation (a call that took several rounds) that is the operation's true
    total latency; for a plain request/response it equals `latency_ns`. None when unpaired."""
    req = m.request
    if req is None or m.pair_status not in (PairStatus.PAIRED, PairStatus.AFTER_CANCEL):
        return None
    rnd = req.retry_of
    start = rnd.op_t_ns if rnd is not None else req.t_ns
    return m.rec.t_ns - start if m.rec.t_ns and start else None


def operation_rounds(m: Analysed) -> int:
    """How many rounds (requests) the operation of this request or response has had so far."""
    req = m.request if m.kind in (_KIND_RESULT, _KIND_ERROR) else None
    rnd = req.retry_of if req is not None else None
    return rnd.number + 1 if rnd is not None else 1


def may_answer_at_http_level(rec) -> bool:
    """Whether REC (a record with HTTP facts) can answer requests at the HTTP level: an error
    status, not the client's, on an exchange with an id. The writer's first test
    (tracer.update.pairing.answered_at_http_level) and the viewer's row writer (tracer.view.pipeline,
    flowwait) both ask it here: the viewer never imports the session writer."""
    http = rec.http
    status = http.get("status")
    fid = http.get("flow")
    return (
        type(status) is int
        and status >= 400
        and rec.dir is not _DIR_C2S
        and (type(fid) is str or type(fid) is int)
    )
