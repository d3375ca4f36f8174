"""The capture line of one tee record, built from its bytes (the fast path of the capture encoder).

`encode_line` writes exactly what the general encoder (`orjson.dumps(record_to_dict(rec))`) writes
for a plain tee message or stderr line, without decoding the bytes into a str and encoding them
back; `looks_suspicious` is the cheap test that decides which lines the live check looks at. Used
by the capture writer (tracer.stdio.capture) line by line; whole runs of lines take
tracer.stdio.runs."""

from __future__ import annotations

import orjson

from tracer.model import Direction, Record, RecordType

_CONTROL = bytes(range(0x20))  # bytes a JSON string must escape besides " and \
_HEADS = (b'{"type":"message","seq":', b'{"type":"stderr","seq":')
_DIR_FIELDS = (b',"dir":"c2s"', b',"dir":"s2c"', b"")


def is_utf8(raw: bytes) -> bool:
    """Whether `raw` is valid UTF-8 (ASCII first: the usual case, and the fastest check)."""
    if raw.isascii():
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# (record kind, direction, transport, conn) -> the constant middle of a line. Keys are small ints and
# strings: enum members hash through Python code, which this path cannot afford per record.
_MIDDLES: dict[tuple, bytes] = {}


def encode_line(rec: Record) -> bytes | None:
    """The capture line of a tee message or stderr record, built from its bytes without decoding
    them into a str and encoding them back: exactly `orjson.dumps(record_to_dict(rec))` plus a
    newline (a test checks it on arbitrary bytes). None for anything else (the general encoder)."""
    rtype = rec.type
    if rtype is RecordType.MESSAGE:
        kind = 0
    elif rtype is RecordType.STDERR:
        kind = 1
    else:
        return None
    if rec.data is not None or rec.http is not None or rec.sse is not None or rec.dir_inferred:
        return None
    raw = rec.raw
    if len(raw.translate(None, _CONTROL)) != len(raw) or not is_utf8(raw):
        return None  # control characters need \u escapes, invalid UTF-8 goes to b64: general path
    raw = raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"')  # (replace beats `in` + replace here)
    d = rec.dir
    side = 0 if d is Direction.C2S else 1 if d is Direction.S2C else 2
    key = (kind, side, rec.transport, rec.conn)
    mid = _MIDDLES.get(key)
    if mid is None:
        if len(_MIDDLES) > 1024:
            _MIDDLES.clear()
        mid = _MIDDLES[key] = (
            _HEADS[kind],
            _DIR_FIELDS[side]
            + b',"transport":'
            + orjson.dumps(rec.transport)
            + b',"conn":'
            + orjson.dumps(rec.conn)
            + b',"text":"',
        )
    head, middle = mid
    tail = b'"}\n' if rec.offset is None else b'","offset":%d}\n' % rec.offset
    if not rec.eol:
        tail = tail[:-2] + b',"eol":false}\n'
    return b'%s%d,"t_ns":%d%s%s%s' % (head, rec.seq, rec.t_ns, middle, raw, tail)


def looks_suspicious(rec: Record) -> bool:
    """A line that is not plainly one JSON object: empty, not starting with "{" and ending with "}",
    CRLF-terminated, unterminated, or not UTF-8. Cheap (no parsing)."""
    raw = rec.raw
    return not rec.eol or not raw or raw[0] != 0x7B or raw[-1] != 0x7D or not is_utf8(raw)
