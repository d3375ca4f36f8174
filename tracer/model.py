"""The data every door and consumer shares.

A `Record` is one line of a capture: what crossed the wire (a `message` envelope), a line of a
server's stderr, an HTTP exchange without a JSON-RPC body, or an event. Only raw bytes and transport
facts are stored; everything else (`Analysed`) is derived from them, so an improved rule applies to
every old capture.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any


class Direction(StrEnum):
    C2S = "c2s"  # host (client) -> server
    S2C = "s2c"  # server -> host (client)

    @property
    def other(self) -> Direction:
        return Direction.S2C if self is Direction.C2S else Direction.C2S

    @property
    def arrow(self) -> str:
        return "→" if self is Direction.C2S else "←"


# Hot code (the analyser, the session updates, the rules) reads enum members through module globals
# (KIND_REQUEST and the like, below, imported by name): `Kind.REQUEST` is an attribute lookup on an
# enum class, which CPython 3.13 does not specialise (measured under valgrind): ~200 machine
# instructions a lookup, against ~30 for a global, and a message took some 50 of them.
class Kind(StrEnum):
    REQUEST = "request"
    NOTIFICATION = "notification"
    RESULT = "result"
    ERROR = "error"
    INVALID = "invalid"
    BATCH = "batch"


class Era(StrEnum):
    MODERN = "modern"
    LEGACY = "legacy"
    UNKNOWN = "unknown"


class Severity(IntEnum):
    INFO = 1
    WARNING = 2
    ERROR = 3

    def __init__(self, value: int) -> None:
        # a plain attribute of each member, not a property: lint and its reports read it twice a
        # finding, and Enum.name is a slow descriptor
        self.label: str = self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (expected info, warning or error)") from None


class RecordType(StrEnum):
    HEADER = "header"
    MESSAGE = "message"
    STDERR = "stderr"
    HTTP = "http"
    EVENT = "event"


# the enum members as module globals, for the per-message paths (the note above `Kind`)
DIR_C2S, DIR_S2C = Direction.C2S, Direction.S2C
ERA_MODERN, ERA_LEGACY, ERA_UNKNOWN = Era.MODERN, Era.LEGACY, Era.UNKNOWN
KIND_REQUEST, KIND_NOTIFICATION, KIND_RESULT = Kind.REQUEST, Kind.NOTIFICATION, Kind.RESULT
KIND_ERROR, KIND_INVALID, KIND_BATCH = Kind.ERROR, Kind.INVALID, Kind.BATCH
REC_HEADER, REC_MESSAGE, REC_STDERR = RecordType.HEADER, RecordType.MESSAGE, RecordType.STDERR
REC_HTTP, REC_EVENT = RecordType.HTTP, RecordType.EVENT


@dataclass(slots=True)
class Record:
    """One capture record. For `message` records this is the envelope of one framed message.

    `raw` holds exactly the bytes of the frame (for stdio: one line without its final `\\n`; a
    `\\r` before it is kept, it is part of what was sent). `line` and `source` say where the record
    was read from; they are not written back.
    """

    type: RecordType
    seq: int = 0
    t_ns: int = 0
    dir: Direction | None = None
    raw: bytes = b""
    transport: str = "stdio"
    conn: str = "0"
    # stdio framing facts
    offset: int | None = None  # byte offset of the frame in its stream
    eol: bool = True  # the frame was terminated by "\n"
    # NDJSON / host logs: direction guessed from content
    dir_inferred: bool = False
    # HTTP facts: {"method","url","status","req_headers","resp_headers",...}
    http: dict[str, Any] | None = None
    # SSE facts: {"id","event","stream","retry"}
    sse: dict[str, Any] | None = None
    # event records: {"event": "exit", "code": 0, ...}; header records: the header fields
    data: dict[str, Any] | None = None
    # where it was read from (not stored)
    line: int = 0
    source: str = ""

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")


@dataclass(slots=True)
class Finding:
    rule: str
    severity: Severity
    message: str
    seq: int = 0  # the message it is about (0: the capture as a whole)
    line: int = 0  # source line of that message
    source: str = ""
    path: str | None = None  # JSON path inside the message, e.g. "$.params._meta"
    related_seq: int | None = None  # another message it refers to (the request, the first use...)
    offset: int | None = None  # stream byte offset (stdio framing)


@dataclass(slots=True)
class Hit:
    """What a rule returns: the rule's id and severity are added by the runner."""

    message: str
    path: str | None = None
    severity: Severity | None = None  # override (rules whose severity depends on the version)
    related_seq: int | None = None
    offset: int | None = None


def paired_reason(idkey: tuple, method: str | None, direction: str, seq: int, conn: str) -> str:
    """Why an answer paired with its request, in words (Analysed.pair_reason; the viewer's analysis
    keeps these parts and builds the words only for the row shown)."""
    kind, value = idkey
    shown = repr(value) if kind == "s" else str(value)
    return (
        f"id {shown} ({'string' if kind == 's' else 'number'}) answers the {method} request "
        f"that {direction} sent at seq {seq} on connection {conn}"
    )


@dataclass(slots=True, eq=False, init=False)
class Analysed:
    """Everything derived from one message record. Built by `tracer.analyser.Analyser`."""

    rec: Record
    kind: Kind
    obj: Any = None  # the parsed JSON value (None when invalid JSON)
    method: str | None = None
    id: Any = None  # the id as sent
    idkey: tuple | None = None  # id with its JSON type: ("s", "1") vs ("n", 1)
    reason: str | None = None  # why it is invalid
    problem: str | None = None  # machine code of the reason (tracer.classify.REASONS)
    era: Era = Era.UNKNOWN
    # era_reason (a property below): why that era, in words
    version: str | None = None  # protocol version label (negotiated or _meta)
    # pairing
    partner_seq: int | None = None
    latency_ns: int | None = None
    pair_note: str | None = None  # why it paired or did not (set for the unusual cases; see pair_reason)
    pair_status: str | None = None  # see tracer.pairing.PairStatus
    request: Any = None  # for responses: the PendingRequest answered (tracer.pairing)
    answers_method: str | None = None  # for responses: the method of the request answered
    findings: list[Finding] = field(default_factory=list)
    members: list[Analysed] | None = None  # batch members
    batch_seq: int | None = None  # for members: seq of the batch
    op_seq: int | None = None  # MRTR: seq of the first round of the operation
    # Parts of `obj` every rule reads, computed once (None when absent or not an object).
    params: dict | None = field(init=False, default=None)
    meta: dict | None = field(init=False, default=None)  # params._meta
    result: dict | None = field(init=False, default=None)
    error: dict | None = field(init=False, default=None)
    # era_reason, kept as (format, values) until someone reads it: most messages are never shown,
    # and formatting it for each one costs more than labelling the era
    _era_why: Any = field(init=False, default=("", ()), repr=False)

    # Written out rather than generated by dataclass (same parameters, same defaults): one Analysed
    # per message, and the generated __init__ plus a __post_init__ call cost ~10% more of it.
    def __init__(
        self,
        rec: Record,
        kind: Kind,
        obj: Any = None,
        method: str | None = None,
        id: Any = None,
        idkey: tuple | None = None,
        reason: str | None = None,
        problem: str | None = None,
        era: Era = Era.UNKNOWN,
        version: str | None = None,
        partner_seq: int | None = None,
        latency_ns: int | None = None,
        pair_note: str | None = None,
        pair_status: str | None = None,
        request: Any = None,
        answers_method: str | None = None,
        findings: list[Finding] | None = None,
        members: list[Analysed] | None = None,
        batch_seq: int | None = None,
        op_seq: int | None = None,
    ) -> None:
        self.rec = rec
        self.kind = kind
        self.obj = obj
        self.method = method
        self.id = id
        self.idkey = idkey
        self.reason = reason
        self.problem = problem
        self.era = era
        self.version = version
        self.partner_seq = partner_seq
        self.latency_ns = latency_ns
        self.pair_note = pair_note
        self.pair_status = pair_status
        self.request = request
        self.answers_method = answers_method
        self.findings = [] if findings is None else findings
        self.members = members
        self.batch_seq = batch_seq
        self.op_seq = op_seq
        self._era_why = ("", ())
        params = meta = result = error = None
        if type(obj) is dict:
            p = obj.get("params")
            if type(p) is dict:
                params = p
                m = p.get("_meta")
                if type(m) is dict:
                    meta = m
            r = obj.get("result")
            if type(r) is dict:
                result = r
            e = obj.get("error")
            if type(e) is dict:
                error = e
        self.params = params
        self.meta = meta
        self.result = result
        self.error = error

    @property
    def era_reason(self) -> str:
        """Why this message got its era label, in words (built when first read)."""
        why = self._era_why
        if type(why) is str:
            return why
        text = why[0].format(*why[1]) if why[1] else why[0]
        self._era_why = text
        return text

    @era_reason.setter
    def era_reason(self, value: str) -> None:
        self._era_why = value

    def explain_era(self, fmt: str, *args: Any) -> None:
        """Set era_reason as `fmt.format(*args)`, formatted only if somebody reads it."""
        self._era_why = (fmt, args)

    @property
    def seq(self) -> int:
        return self.rec.seq

    @property
    def dir(self) -> Direction | None:
        return self.rec.dir

    @property
    def pair_reason(self) -> str | None:
        """Why this message paired (or did not), in words. Built on demand: most messages pair
        plainly and nobody asks."""
        if self.pair_note is not None:
            return self.pair_note
        req = self.request
        if req is not None and self.pair_status in ("paired", "after-cancel"):
            return paired_reason(req.idkey, req.method, req.dir.value, req.seq, self.rec.conn)
        if self.kind is Kind.REQUEST and self.partner_seq is not None:
            return f"answered by seq {self.partner_seq}"
        return None

    @pair_reason.setter
    def pair_reason(self, value: str | None) -> None:
        self.pair_note = value

    @property
    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def __iter__(self) -> Iterator[Analysed]:
        """An Analysed is the one event a message record gives (tracer.events): `for ev in
        analyser.feed(rec)` sees it once, as it sees a tuple of events for other records."""
        return iter((self,))

    @property
    def label(self) -> str:
        """The method, or for a response the method it answers."""
        return self.method or self.answers_method or ""
