"""The capture's bulk path: a chunk of whole, plain NDJSON lines encoded at once, not line by line.

Under a flood the capture process gets chunks of 64 KiB to 1 MiB holding dozens to hundreds of
lines. Framing each into a `Frame` and a `Record`, then checking, escaping and formatting each on
its own, costs several Python calls per line: the capture wrote ~50 MB/s and fell behind the relay.
Most lines of a flood need no decision of their own (valid UTF-8, no CR, one `{...}` object per
line), so their capture line is a fixed template around the line as a JSON string. For such a run
the checks and the split are done once over the whole chunk by C loops (decode, split, startswith),
orjson escapes each line (exactly as the general encoder, `orjson.dumps` of the record, does), and
one `map` over the template formats them: no Python code runs per line. Anything else (a partial
line at either end, CRLF, invalid UTF-8, a line that is no `{...}`, an open multi-line group in
the live check) takes the general per-line path, so the capture file is byte for byte what that
path writes (tests/tracer/stdio/test_tee_flood.py checks it)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import accumulate, chain, repeat

import orjson

from tracer.framing import LineFramer

RUN_MIN = 16 * 1024  # smaller chunks are a few messages: the per-line path costs nothing there
_HEADS = (b'{"type":"message","seq":%d,"t_ns":', b'{"type":"stderr","seq":%d,"t_ns":')
_DIR_FIELDS = (b',"dir":"c2s"', b',"dir":"s2c"', b"")
_plus_one = (1).__add__


class StreamFramer(LineFramer):
    """A LineFramer that also lets whole lines be framed elsewhere (a `LineRun`), offsets kept exact."""

    __slots__ = ()

    @property
    def at_line_start(self) -> bool:
        return not self._buf and not self._dropped and not self._resync

    def advance(self, n: int) -> None:
        """`n` bytes of whole lines were framed by a run: the next line starts after them."""
        self._start += n


class LineRun:
    """Whole lines of one stream, checked and escaped together: an item of
    `CaptureWriter.write_many` that encodes itself as `count` records from `first_seq` on."""

    __slots__ = ("count", "lines", "offsets", "template")

    def __init__(self, template: bytes, lines: Iterable[bytes], offsets: Iterable[int], count: int):
        self.template = template
        self.lines = lines  # JSON strings (quoted, escaped)
        self.offsets = offsets
        self.count = count

    def encode(self, first_seq: int) -> bytes:
        seqs = range(first_seq, first_seq + self.count)  # (zip stops there: `offsets` has one more)
        return b"".join(map(self.template.__mod__, zip(seqs, self.lines, self.offsets, strict=False)))


class EscapedRun:
    """Whole ASCII lines escaped by one orjson call over the whole block: each line's JSON string is
    a slice of that one output (`starts`/`ends`, no copy until the final join), and between two
    lines goes a short `sep`, the end of one record and the start of the next, formatted with the
    offset and the seq that differ from line to line. The same bytes as `LineRun`, with no per-line
    escaping call and no per-line formatting of the line itself (a 2 KB line is copied once, not
    three times)."""

    __slots__ = ("count", "ends", "escaped", "head", "offsets", "sep", "starts")

    def __init__(self, head: bytes, sep: bytes, escaped: bytes, starts, ends, offsets: list[int]):
        self.head = head  # the first record up to its "text": (a %d for the seq)
        self.sep = sep  # '","offset":%d}\n' + the next record up to its text's opening quote
        self.escaped = escaped
        self.starts, self.ends = starts, ends
        self.offsets = offsets
        self.count = len(offsets)

    def encode(self, first_seq: int) -> bytes:
        n = self.count
        view = memoryview(self.escaped)
        texts = map(view.__getitem__, map(slice, self.starts, self.ends))  # (the first opens with its quote)
        seps = map(self.sep.__mod__, zip(self.offsets, range(first_seq + 1, first_seq + n), strict=False))
        return b"".join(
            chain(
                (self.head % first_seq, next(texts)),
                chain.from_iterable(zip(seps, texts, strict=True)),
                (b'","offset":%d}\n' % self.offsets[n - 1],),
            )
        )


# While orjson escapes an ASCII block whole, each newline is replaced by DEL, which JSON leaves as
# it is and a block holding none of its own then has only there: one memchr finds each line's end in
# the output. (A non-ASCII marker would make orjson re-encode the block to UTF-8 first, char by char.)
_MARK, _MARK_BYTE = "\x7f", b"\x7f"
# A block whose first _PROBE bytes hold more than _PROBE_LINES lines has short lines (under about
# 128 bytes): per line, the Python loop that finds them costs more than str.split's byte loop there.
_PROBE, _PROBE_LINES = 4096, 32


def _middle(side: int, transport: str, conn: str) -> bytes:
    return (
        _DIR_FIELDS[side]
        + b',"transport":'
        + orjson.dumps(transport)
        + b',"conn":'
        + orjson.dumps(conn)
        + b',"text":'
    ).replace(b"%", b"%%")


def make_run(
    payload: bytes,
    start: int,
    end: int,
    offset: int,
    t_ns: int,
    kind: int,
    side: int,
    transport: str,
    conn: str,
) -> LineRun | EscapedRun | None:
    """The run of `payload[start:end]` (whole lines, each ending in a newline, the first at stream
    `offset`), or None when any line needs the per-line path. `kind` 0 message, 1 stderr; `side` 0
    c2s, 1 s2c."""
    if payload.find(b"\r", start, end) >= 0:
        return None  # CRLF lines: MCP805's, and the live check looks at each
    if (
        payload.count(b"\n", start, min(end, start + _PROBE)) <= _PROBE_LINES
        and payload.find(_MARK_BYTE, start, end) < 0
    ):
        try:
            text = str(memoryview(payload)[start:end], "ascii")
        except UnicodeDecodeError:
            pass
        else:
            return _escaped_run(payload, start, end, text, offset, t_ns, kind, side, transport, conn)
    return _split_run(payload[start:end], offset, t_ns, kind, side, transport, conn)


def _escaped_run(payload, start, end, text, offset, t_ns, kind, side, transport, conn) -> EscapedRun | None:
    find = payload.find
    offsets: list[int] = []
    add = offsets.append
    i = start
    while i < end:  # (one memchr and two byte checks per line)
        j = find(b"\n", i)
        if payload[i] != 0x7B or payload[j - 1] != 0x7D:
            return None  # an empty line, or one that is no {...} object: the live check looks at it
        add(offset + i - start)
        i = j + 1
    # '"' + line 0 + DEL + line 1 + DEL ... + line n-1 + DEL + '"', escaped exactly as orjson.dumps
    # of each line would be (JSON escaping is per character: the block's is the lines' joined)
    escaped = orjson.dumps(text.replace("\n", _MARK))
    ends: list[int] = []
    starts = [0]
    mark, found, begun = escaped.find, ends.append, starts.append
    j = mark(_MARK_BYTE)
    while j >= 0:
        found(j)
        begun(j + 1)
        j = mark(_MARK_BYTE, j + 1)
    head = _HEADS[kind] + b"%d" % t_ns + _middle(side, transport, conn)
    return EscapedRun(head, b'","offset":%d}\n' + head + b'"', escaped, starts, ends, offsets)


def _split_run(block, offset, t_ns, kind, side, transport, conn) -> LineRun | None:
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        return None  # stored as b64: per line
    lines = text.split("\n")
    lines.pop()  # (the empty piece after the last newline)
    if not (all(map(str.startswith, lines, repeat("{"))) and all(map(str.endswith, lines, repeat("}")))):
        return None  # an empty line, or one that is no {...} object: the live check looks at it
    # orjson escapes each line exactly as the general encoder (orjson.dumps of the record) does
    sizes = map(len, lines) if len(text) == len(block) else map(len, block.split(b"\n"))  # (bytes, not chars)
    offsets = accumulate(map(_plus_one, sizes), initial=offset)
    template = _HEADS[kind] + b"%d" % t_ns + _middle(side, transport, conn) + b'%s,"offset":%d}\n'
    return LineRun(template, map(orjson.dumps, lines), offsets, len(lines))
