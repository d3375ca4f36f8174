"""The types of what the stdio framing rules (MCP8xx) know beyond a single line (in `Session.stdio`):
open multi-line groups, the verdict on the line being analysed, stderr and process events, a
dual-era client's probe on a sibling process. tracer.update.stdio writes them; rules read them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tracer.classify import Classified, classify_raw, parse_json
from tracer.model import DIR_S2C as _DIR_S2C  # (enum members as globals: tracer.model)
from tracer.model import Analysed, Direction, Era, Record

# Problems of a line that is no JSON-RPC message at all (tracer.classify.REASONS): not JSON, a bare
# scalar, nesting too deep for any parser. (Invalid UTF-8 counts too unless the line is JSON apart
# from its encoding: then it is MCP803's.)
NOT_A_MESSAGE = frozenset({"not-json", "not-object", "too-deep"})

# A multi-line group is given up past these sizes (a stream of junk must not grow memory).
MAX_GROUP_BYTES = 8 * 1024 * 1024
MAX_GROUP_LINES = 100_000
MAX_STDERR_SAMPLES = 5

_SPECIAL = re.compile(rb'["\\{}\[\]]')


def scan(line: bytes, depth: int, in_str: bool) -> tuple[int, bool]:
    """Bracket depth and whether we are inside a JSON string after `line`, starting from the state
    after the previous line. Only quotes, backslashes and brackets matter, so a regex finds them."""
    escaped_at = -2
    for mt in _SPECIAL.finditer(line):
        i = mt.start()
        c = line[i]
        if in_str:
            if i == escaped_at:  # this character is escaped by the backslash before it
                continue
            if c == 0x5C:  # backslash
                escaped_at = i + 1
            elif c == 0x22:  # closing quote
                in_str = False
        elif c == 0x22:
            in_str = True
        elif c in (0x7B, 0x5B):  # { [
            depth += 1
        elif c in (0x7D, 0x5D):  # } ]
            depth -= 1
    return depth, in_str


@dataclass(slots=True)
class At:
    """Where an end-of-session finding points: a line of the input. It answers what the analyser
    reads of a `PendingRequest` for that purpose (seq, line, source, era, version)."""

    seq: int
    line: int
    source: str
    era: Era = Era.UNKNOWN
    version: str | None = None


@dataclass(slots=True, eq=False)
class Group:
    """Consecutive lines of one direction that may be one message spread over several lines."""

    dir: Direction
    first_seq: int
    offset: int | None
    at: At | None = None  # the first line, where an end-of-session finding points
    parts: list[bytes] = field(default_factory=list)  # lines, with the separators between them
    lines: int = 0
    size: int = 0
    depth: int = 0
    in_str: bool = False
    raw_newline_in_string: bool = False
    last_seq: int = 0
    end_offset: int | None = None  # offset just past the last line (its "\n" included)
    joined: Classified | None = None  # the classification of the joined text, once closed

    def add(self, rec: Record) -> None:
        if self.lines:
            # A newline inside a string is a raw control character JSON forbids: join it escaped,
            # so "a message with an embedded raw newline" parses, as the rule describes it.
            self.parts.append(b"\\n" if self.in_str else b"\n")
            self.raw_newline_in_string |= self.in_str
        self.parts.append(rec.raw)
        self.lines += 1
        self.size += len(rec.raw) + 1
        self.last_seq = rec.seq
        if rec.offset is not None:
            self.end_offset = rec.offset + len(rec.raw) + 1
        self.depth, self.in_str = scan(rec.raw, self.depth, self.in_str)

    @property
    def complete(self) -> bool:
        return self.depth <= 0 and not self.in_str

    @property
    def too_big(self) -> bool:
        return self.size > MAX_GROUP_BYTES or self.lines > MAX_GROUP_LINES

    def join(self) -> Classified:
        self.joined = classify_raw(b"".join(self.parts))
        self.parts = []  # the verdict is kept; the bytes are in the capture
        return self.joined

    @property
    def parses(self) -> bool:
        j = self.joined
        return j is not None and j.problem not in ("not-json", "not-utf8", "too-deep")

    @property
    def first_line(self) -> bytes:
        return self.parts[0] if self.parts else b""


@dataclass(slots=True, eq=False)
class Verdict:
    """The framing facts about the message being analysed (seq), for the rules to read."""

    seq: int
    frame: str = ""  # "" (a line that parsed) | stray | blank | open | joined | unjoinable
    not_utf8: bool = False  # a stray line that is not UTF-8 either
    group: Group | None = None  # the group this line opened, extended or closed
    abandoned: Group | None = None  # an open group this line interrupted without closing it
    first_line: str = ""  # preview of a closed group's first line (kept after its bytes are dropped)
    crlf_first: bool = False  # the first line of this direction that ends with "\r"
    first_client_request: bool = False  # no client request was seen before this one
    # (first client requests only) the client probed this server on a sibling process just before
    probed_on_sibling: bool = False


@dataclass(slots=True, eq=False)
class Probe:
    """A stdio connection that opened with `server/discover`. When that probe is all its client
    sent and it got a DiscoverResult, it is a dual-era client's disposable probe process: the
    TypeScript SDK v2 (auto and pinned modes) probes a sibling process spawned from the same
    command, discards it, and starts the session on a fresh one, which rightly sends no probe."""

    conn: str
    answered: bool = False  # a result answered server/discover
    requests: int = 1  # client requests on the connection


@dataclass(slots=True, eq=False)
class StdioState:
    groups: dict[Direction, Group] = field(default_factory=dict)
    current: Verdict | None = None
    crlf_seen: set[Direction] = field(default_factory=set)
    client_requests: int = 0
    stdin_eof: tuple[int, int] | None = None  # (seq, t_ns) of the "stdin-eof" event
    terminated: list[tuple[int, dict]] = field(default_factory=list)  # "terminate" events
    writes_after_eof: int = 0  # server notifications and requests after stdin EOF
    stderr_bad: list[tuple[int, int | None, bytes]] = field(default_factory=list)  # (seq, offset, line)
    stderr_bad_count: int = 0
    probe: Probe | None = None  # this connection opened with server/discover

    def verdict(self, m: Analysed) -> Verdict | None:
        """The verdict for this message, or None (not a stdio frame, or a batch member)."""
        v = self.current
        if v is None or v.seq != m.rec.seq or m.batch_seq is not None:
            return None
        return v


# -- read-only queries --------------------------------------------------------------------------


def unusual_line(m: Analysed, s) -> bool:
    """The gate of MCP801-MCP802 (tracer.rules.mcp8_stdio, which run on every stdio message): a
    whole line that parsed, ended by "\n", with no multi-line message around it (nearly all)
    concerns neither. (StdioState.verdict, inlined: this runs on every stdio message.)"""
    rec = m.rec
    st = s.stdio if rec.transport == "stdio" else None
    v = st.current if st is not None else None
    if v is None or v.seq != rec.seq or m.batch_seq is not None:
        return False
    return v.abandoned is not None or bool(v.frame) or not rec.eol or v.crlf_first


def json_apart_from_encoding(raw: bytes) -> bool:
    """Whether a line that is not UTF-8 would parse as JSON with its bad bytes replaced: a message
    with an encoding problem (MCP803), as opposed to binary junk (a stray line, MCP801)."""
    _, problem, _ = parse_json(raw.decode("utf-8", "replace"))
    return problem is None


# -- showing bytes -------------------------------------------------------------------------------

_ESCAPES = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x5C: "\\\\", 0x22: '\\"'}


def show_bytes(raw: bytes, limit: int = 100) -> str:
    """The bytes as a quoted, escaped string a user can match to what their code printed:
    printable text as is, control characters and invalid UTF-8 as escapes, long lines cut."""
    cut = raw[:limit]
    text = cut.decode("utf-8", "backslashreplace")
    out = []
    for ch in text:
        o = ord(ch)
        if o in _ESCAPES and ch != "\\":
            out.append(_ESCAPES[o])
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\x{o:02x}")
        else:
            out.append(ch)
    more = f"… ({len(raw):,} bytes)" if len(raw) > limit else ""
    return '"' + "".join(out) + '"' + more


def where(rec: Record) -> str:
    """`server stdout byte 1234` / `client stdin byte 0`: the stream and offset of a frame."""
    stream = "server stdout" if rec.dir is _DIR_S2C else "client → server stdin"
    return f"{stream} byte {rec.offset}" if rec.offset is not None else stream
