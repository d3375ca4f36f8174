"""The pairing writer: requests enter the pending table, answers take them out and learn their
partner, cancels mark them; answered and cancelled requests are remembered in bounded windows.
Keyed on (connection, requester direction, id with its JSON type): `1` and `"1"` never pair, and a
server's request id 1 never pairs with the client's id 1. Every message is kept; pairing only
annotates (the partner's seq, the latency, why they paired, a status the correlation rules read:
tracer.pairing.PairStatus)."""

from __future__ import annotations

from tracer.classify import id_key
from tracer.model import DIR_C2S as _DIR_C2S  # (enum members as globals: tracer.model)
from tracer.model import ERA_MODERN as _ERA_MODERN
from tracer.model import KIND_ERROR as _KIND_ERROR
from tracer.model import KIND_NOTIFICATION as _KIND_NOTIFICATION
from tracer.model import KIND_RESULT as _KIND_RESULT
from tracer.model import Analysed, Direction
from tracer.pairing import PairStatus, fmt_id, may_answer_at_http_level
from tracer.session import PendingRequest, Session, find_pending_any_type
from tracer.update.tracking import link_retry

DETAIL_CAP = 1_024  # of the answered requests, the newest keep their params (MCP204 judges by them)
CANCELLED_CAP = 256  # cancelled requests that stay pending (rules scan them); older ones: `Session.cancelled`

_OTHER = {Direction.C2S: Direction.S2C, Direction.S2C: Direction.C2S}  # Direction.other, minus a call


def match_response(m: Analysed, s: Session) -> None:
    """Pair a result/error with the request it answers (before era labelling)."""
    if m.idkey is None:
        answered = (
            answered_at_http_level(m.rec, s) if m.rec.http is not None and m.kind is _KIND_ERROR else None
        )
        if not answered:
            m.pair_status = PairStatus.NO_ID
            return
        req = answered[0]
        m.request = req
        m.answers_method = req.method
        m.partner_seq = req.seq
        m.latency_ns = m.rec.t_ns - req.t_ns if m.rec.t_ns and req.t_ns else None
        m.pair_status = PairStatus.AFTER_CANCEL if req.cancelled_seq is not None else PairStatus.PAIRED
        m.pair_reason = (
            f"an error without id on the HTTP exchange of the {req.method} request (seq {req.seq}), "
            f"status {m.rec.http.get('status')}: answered at the HTTP level"
        )
        return
    direction = m.rec.dir
    requester = _OTHER[direction]
    key = (requester, m.idkey)
    req = s.pending.pop(key, None)
    if req is None and s.cancelled:  # a request cancelled long ago (CANCELLED_CAP)
        req = s.cancelled.pop(key, None)
    if req is not None:
        m.request = req
        m.answers_method = req.method
        m.partner_seq = req.seq
        # no latency where the input has no times (bare NDJSON: t_ns 0), rather than a made-up 0
        m.latency_ns = m.rec.t_ns - req.t_ns if m.rec.t_ns and req.t_ns else None
        result = m.result  # (is_input_required, inlined: this runs on every response)
        if (
            req.op_seq is None
            and m.kind is _KIND_RESULT
            and result is not None
            and result.get("resultType") == "input_required"
        ):
            # MRTR: the server asked for input, so this request opens a multi-round operation
            req.op_seq = req.seq
            if req.msg is not None:
                req.msg.op_seq = req.seq
        m.op_seq = req.op_seq
        m.pair_status = PairStatus.AFTER_CANCEL if req.cancelled_seq is not None else PairStatus.PAIRED
        if m.rec.seq < req.seq:  # an input without authoritative order logged it first (tracer.inputs.settle)
            _logged_before(m, req)
        req.response_seq = m.rec.seq
        req.response_t_ns = m.rec.t_ns
        req.response_kind = m.kind
        if req.msg is not None:
            req.msg.partner_seq = m.rec.seq
            req.msg.latency_ns = m.latency_ns
        remember_answered(s, key, req)
        if s.flow_requests and m.rec.http is not None:
            _answered_flow(m.rec.http.get("flow"), s)
        return
    first = s.answered.get(key)
    if first is not None:
        m.request = first
        m.answers_method = first.method
        m.partner_seq = first.seq
        m.pair_status = PairStatus.DUPLICATE
        m.pair_reason = f"id {fmt_id(m.idkey)} was already answered at seq {first.response_seq}"
        return
    same_side = s.pending.get((direction, m.idkey))
    if same_side is not None:
        m.pair_status = PairStatus.WRONG_DIRECTION
        m.pair_reason = (
            f"id {fmt_id(m.idkey)} is pending, but it is a request {direction.value} sent itself "
            f"(seq {same_side.seq}); a response must travel the other way"
        )
        return
    other_type = find_pending_any_type(s, requester, m.idkey)
    if other_type is not None:
        m.pair_status = PairStatus.TYPE_MISMATCH
        m.pair_reason = (
            f"id {fmt_id(m.idkey)} does not match the pending request id {fmt_id(other_type.idkey)} "
            f"(seq {other_type.seq}): ids keep their JSON type"
        )
        return
    if s.last_kind.get(requester) is _KIND_NOTIFICATION:
        m.pair_status = PairStatus.ANSWERS_NOTIFICATION
        m.partner_seq = s.last_seq.get(requester)
        m.pair_reason = (
            f"id {fmt_id(m.idkey)} matches no request; it follows the notification at seq {m.partner_seq}"
        )
        return
    m.pair_status = PairStatus.UNKNOWN_ID
    m.pair_reason = f"id {fmt_id(m.idkey)} matches no request {requester.value} sent on connection {s.conn}"


def _answered_flow(fid, s: Session) -> None:
    """An answer travelled on the exchange of its request: once every request that exchange carried
    is answered, the exchange can no longer answer one at the HTTP level, so it is forgotten."""
    known = s.flow_requests.get(fid) if type(fid) is str or type(fid) is int else None
    if known is None:
        return
    pending = s.pending
    for key, seq in known:
        req = pending.get(key)
        if req is not None and req.seq == seq:
            return
    del s.flow_requests[fid]


def _logged_before(m: Analysed, req: PendingRequest) -> None:
    if m.latency_ns is not None:
        m.latency_ns = max(0, m.latency_ns)
    when = f"{max(0, req.t_ns - m.rec.t_ns) / 1e6:.1f} ms " if req.t_ns and m.rec.t_ns else ""
    kind, value = req.idkey
    shown = repr(value) if kind == "s" else str(value)
    m.pair_reason = (
        f"id {shown} answers the {req.method} request that {req.dir.value} sent at seq {req.seq}; "
        f"the input logged this answer {when}before it (its order is not authoritative), "
        "so they are paired"
    )


def answered_at_http_level(rec, s: Session) -> list[PendingRequest]:
    """A POST answered with an HTTP error status (4xx/5xx) and no JSON-RPC response of its own (a
    non-JSON body, or an error without id) is answered by that exchange: each request the POST
    carried (one, or a batch's) leaves the pending table as answered with an error, and learns why.
    Returns them (none when REC is no such answer)."""
    if not may_answer_at_http_level(rec):
        return []
    status = rec.http["status"]
    known = s.flow_requests.pop(rec.http["flow"], None)
    out = []
    for key, seq in known or ():
        req = s.pending.get(key)
        if req is None or req.seq != seq:
            continue
        del s.pending[key]
        req.response_seq = rec.seq
        req.response_t_ns = rec.t_ns
        req.response_kind = _KIND_ERROR
        if req.msg is not None:
            req.msg.partner_seq = rec.seq
            req.msg.latency_ns = rec.t_ns - req.t_ns if rec.t_ns and req.t_ns else None
            req.msg.pair_reason = f"answered at the HTTP level, status {status} (seq {rec.seq})"
        remember_answered(s, key, req)
        out.append(req)
    return out


def register_request(m: Analysed, s: Session) -> None:
    """Record a request as pending (after era labelling, so the pending entry knows its era)."""
    direction = m.rec.dir
    key = (direction, m.idkey)
    earlier = s.pending.get(key)
    if earlier is not None:
        m.pair_status = PairStatus.REUSE_PENDING
        m.partner_seq = None
        m.pair_reason = f"id {fmt_id(m.idkey)} is still awaiting an answer to seq {earlier.seq}"
        m.request = earlier
    elif m.era is not _ERA_MODERN and key in s.used_ids:
        m.pair_status = PairStatus.REUSE_SESSION
        m.request = s.used_ids.get(key)  # (None: an id compacted out of the recent window)
        where = f"at seq {m.request.seq} " if m.request is not None else "earlier "
        m.pair_reason = f"id {fmt_id(m.idkey)} was already used {where}in this session"
    else:
        m.pair_status = PairStatus.NEW
    rec = m.rec
    # (positional: a keyword call costs a third more, on every request)
    req = PendingRequest(
        rec.seq,
        rec.line,
        rec.source,
        rec.t_ns,
        direction,
        m.idkey,
        m.id,
        m.method or "",
        m.era,
        m.version,
        m.params,
        m,
    )
    s.pending[key] = req
    http = rec.http
    if http is not None and direction is _DIR_C2S:
        fid = http.get("flow")
        if type(fid) is str or type(fid) is int:
            known = s.flow_requests.get(fid) if m.batch_seq is not None else None
            if known and known[0][1] == rec.seq:  # another request of the same batch POST
                known.append((key, rec.seq))
            else:
                s.flow_requests.put(fid, [(key, rec.seq)])
    if m.era is not _ERA_MODERN:  # only legacy forbids reuse after the answer
        s.used_ids.put(key, req)
    link_retry(m, s, req)


def note_cancel(m: Analysed, s: Session) -> PendingRequest | None:
    """`notifications/cancelled`: mark the request it names (sent by the same side) as cancelled."""
    params = m.params
    if params is None:
        return None
    key = id_key(params.get("requestId"))
    if key is None:
        return None
    req = s.pending.get((m.rec.dir, key))
    if req is not None and req.cancelled_seq is None:
        req.cancelled_seq = m.rec.seq
        req.cancelled_t_ns = m.rec.t_ns
        note_cancelled(s, (m.rec.dir, key), req)
    return req


def remember_answered(s: Session, key: tuple, req: PendingRequest) -> None:
    """REQ (KEY) left the pending table answered: remember it for duplicate answers and late
    cancels. Past DETAIL_CAP newer answers its params are dropped (and its message, if any)."""
    answered = s.answered
    answered[key] = req
    if len(answered) > answered.cap:
        answered.popitem(last=False)
    req.msg = None
    detailed = s.detailed
    detailed.append(req)
    if len(detailed) > DETAIL_CAP:
        detailed.popleft().params = None
    if s.cancelling and req.cancelled_seq is not None and s.cancelling.get(key) is req:
        del s.cancelling[key]


def note_cancelled(s: Session, key: tuple, req: PendingRequest) -> None:
    """REQ (KEY), still pending, was cancelled by its sender. Past CANCELLED_CAP such requests
    the oldest moves out of the pending table (without its message and params): the receiver
    SHOULD NOT answer it, and it no longer costs the rules that scan pending requests."""
    cancelling = s.cancelling
    cancelling[key] = req
    if len(cancelling) <= CANCELLED_CAP:
        return
    old_key, old = cancelling.popitem(last=False)
    if s.pending.get(old_key) is old:
        del s.pending[old_key]
        old.msg = None
        old.params = None
        s.cancelled.put(old_key, old)
