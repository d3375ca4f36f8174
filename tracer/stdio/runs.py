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
from itertools import accumulate, repeat

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


def make_run(
    block: bytes, offset: int, t_ns: int, kind: int, side: int, transport: str, conn: str
) -> LineRun | None:
    """The run of `block` (whole lines, each ending in a newline, the first at stream `offset`), or
    None when any line needs the per-line path. `kind` 0 message, 1 stderr; `side` 0 c2s, 1 s2c."""
    if b"\r" in block:
        return None  # CRLF lines: MCP805's, and the live check looks at each
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
    middle = (
        _DIR_FIELDS[side]
        + b',"transport":'
        + orjson.dumps(transport)
        + b',"conn":'
        + orjson.dumps(conn)
        + b',"text":'
    ).replace(b"%", b"%%")
    template = _HEADS[kind] + b"%d" % t_ns + middle + b'%s,"offset":%d}\n'
    return LineRun(template, map(orjson.dumps, lines), offsets, len(lines))
