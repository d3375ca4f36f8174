"""Put a response after its request when an input logged them the other way round.

Hosts and recorders that log each direction from its own thread (host logs, other tools' NDJSON,
HAR, mitmproxy flow files) can write an answer a millisecond before the request it answers. Only
mcptrace's own captures have an authoritative order (`InputFormat.exact_order`); for the others,
`settle` holds a response whose request has not been seen for up to WINDOW_NS of log time (and at
most MAX_HELD records), and if the request turns up in that window, yields the response right after
it. Nothing is dropped, every record keeps its seq and line, and nothing else moves: the records
after a held response wait with it, so when no request turns up the original order is kept.
Pairing notes the swap (a response with a smaller seq than its request, see tracer.pairing).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from tracer.classify import id_key, parse_json
from tracer.model import Direction, Record, RecordType
from tracer.session import BoundedMap

WINDOW_NS = 50_000_000  # 50 ms: two logging threads' skew, not a real ordering
MAX_HELD = 256  # records held behind one response at most (memory stays bounded)
UNTIMED_WINDOW = 16  # inputs without timestamps (bare NDJSON): the request must follow this closely
_PENDING_CAP = 10_000


def _shape(rec: Record) -> tuple[str, tuple] | None:
    """("req", idkey) for a request, ("resp", idkey) for a response with an id, else None."""
    raw = rec.raw
    if not raw or raw[:1] not in (b"{", b" ", b"\t"):
        return None
    obj = parse_json(raw)[0]  # (big integers and lone surrogates are JSON too)
    if type(obj) is not dict:
        return None
    key = id_key(obj.get("id"))
    if key is None:
        return None
    if type(obj.get("method")) is str:
        return "req", key
    if "result" in obj or "error" in obj:
        return "resp", key
    return None


class _Held:
    __slots__ = ("gone", "key", "rec", "since")

    def __init__(self, rec: Record, key: tuple, since: int):
        self.rec = rec
        self.key = key
        self.since = since  # how many records had been read when it was held
        self.gone = False  # moved after its request: its place in the buffer is empty


def _within(held: _Held, now: int, n: int) -> bool:
    """Whether a record read as the Nth, at log time NOW, is still in HELD's window."""
    t0 = held.rec.t_ns
    if n - held.since >= MAX_HELD:
        return False
    if now and t0:
        return now - t0 <= WINDOW_NS
    return n - held.since < UNTIMED_WINDOW


def _matches(held: _Held, req: Record, n: int) -> bool:
    resp = held.rec
    if held.gone or not _within(held, req.t_ns, n):
        return False
    if resp.dir_inferred or req.dir_inferred or resp.dir is None or req.dir is None:
        return True
    return resp.dir is not req.dir


# An item a followed input's reader gives when the file has stopped growing for a while (tracer.inputs
# .follow): what is held goes out in its order, as at the end of the input (a request logged after
# that pause would have come within the window), so a live view does not wait for the next line.
FLUSH = object()


def settle(items: Iterable) -> Iterator:
    """`items` (Records and read problems) with each early response moved after its request."""
    buf: deque = deque()  # records read but not yet yielded; _Held marks a response waiting
    waiting: dict[tuple, list[_Held]] = {}  # (conn, idkey) -> the held responses with that id
    pending = BoundedMap(_PENDING_CAP)  # (conn, dir, idkey) of requests seen and not yet answered
    for n, item in enumerate(items, 1):
        if item is FLUSH:
            for rest in buf:
                if type(rest) is not _Held:
                    yield rest
                elif not rest.gone:
                    yield rest.rec
            buf.clear()
            waiting.clear()
            continue
        is_rec = type(item) is Record
        now = item.t_ns if is_rec else 0
        shape = _shape(item) if is_rec and item.type is RecordType.MESSAGE else None
        if shape is not None:
            what, key = shape
            if what == "req":
                if not (waiting and _release(buf, waiting, item, key, n)):
                    pending.put((item.conn, item.dir, key), True)
                    buf.append(item)
            elif not _answers_pending(pending, item, key):
                h = _Held(item, key, n)
                buf.append(h)
                waiting.setdefault((item.conn, key), []).append(h)
            else:
                buf.append(item)
        else:
            buf.append(item)
        if not waiting:  # nothing held: everything read goes out (a moved answer's old place stays empty)
            while buf:
                x = buf.popleft()
                if type(x) is not _Held:
                    yield x
            continue
        while buf:
            head = buf[0]
            if type(head) is _Held:
                if head.gone:
                    buf.popleft()
                    continue
                if _within(head, now, n):
                    break
                buf.popleft()
                _forget(waiting, head)
                yield head.rec
            else:
                yield buf.popleft()
    for rest in buf:
        if type(rest) is not _Held:
            yield rest
        elif not rest.gone:
            yield rest.rec


def _forget(waiting: dict[tuple, list[_Held]], h: _Held) -> None:
    k = (h.rec.conn, h.key)
    lst = waiting.get(k)
    if lst is not None:
        if h in lst:
            lst.remove(h)
        if not lst:
            del waiting[k]


_OTHER = {Direction.C2S: Direction.S2C, Direction.S2C: Direction.C2S}


def _answers_pending(pending: BoundedMap, resp: Record, key: tuple) -> bool:
    """Whether RESP answers a request already seen (which then is no longer pending)."""
    if resp.dir is not None and not resp.dir_inferred:
        return pending.pop((resp.conn, _OTHER[resp.dir], key), None) is not None
    return any(
        pending.pop((resp.conn, d, key), None) is not None for d in (Direction.C2S, Direction.S2C, None)
    )


def _release(buf: deque, waiting: dict[tuple, list[_Held]], req: Record, key: tuple, n: int) -> bool:
    """If a held response answers REQ, put REQ then that response at the end of BUF (the response
    leaves its place; the records between keep theirs, before the request). Returns whether."""
    for h in waiting.get((req.conn, key), ()):
        if _matches(h, req, n):
            h.gone = True
            _forget(waiting, h)
            resp = h.rec
            if resp.dir_inferred and req.dir is not None:
                resp.dir = _OTHER[req.dir]
            buf.append(req)
            buf.append(resp)
            return True
    return False
