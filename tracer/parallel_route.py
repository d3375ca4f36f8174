"""The router of `mcptrace lint --jobs N` (run by the parent, tracer.parallel_pool): it reads a
sharded capture once, decides which worker owns each connection, and sends each worker only what
it needs: its own lines, and what every analyser needs (headers, the time the sessions end at).
Before this, every worker read every line (a prefix match of the others' lines), a cost per line of
the file paid once per worker however cheap the analysis; now it is paid once (tests/bench/README.md,
"Lint on every core").

A message line of a connection whose owner and session are settled is routed on a guess: the
bytes of its "t_ns" and "conn" members, found where the writer's layout has them, with no parse.
The owner reads the line in full (tracer.parallel_worker) and checks the guess: a line whose
record is not that message of that connection at that time (a crafted line, members out of
order) makes the file re-linted in the parent from that line (tracer.parallel): slower, never
different; a broken line is the owner's to report, and counted off the records. Every other line
(a header, an event, a connection's first records, a line not in the writer's layout) is read in
full here, and the decisions made on it are the ones every worker used to make alike.

The one fact a guess gives beyond its own line is its time: sessions still open at a recording's
end close at the time of its latest record. There, the one line the latest time was guessed from
is read in full here; if it is not the message it seemed (broken after all, or crafted), the file
is re-linted from that point.

What a worker gets, as length-framed pickles on its stdin (tracer.parallel.Channel), in batches of
ROUTE_LINES lines of the file: (last line routed, entries), an entry being
- ("L", lines, numbers, times, ids): a run of its own guessed message lines, joined (each ends in
  a newline), with their line numbers, guessed times and connection ids as packed int64 arrays;
- ("o", id, conn): a connection it now owns, and the id its guessed lines give;
- ("r", number, line): a record read here, of a connection it owns;
- ("h", number, line, t): a recording's header (every worker; t: its sessions end at t, None for
  the file's first header);
- ("p", number, problem): a read problem to report (worker 0);
- ("end", t, records), ("redo", number), ("error", text), ("crash", text): the file's end.
"""

from __future__ import annotations

import traceback
from array import array
from collections.abc import Iterator

import orjson

from tracer.analyser import _CLOSE_EVENTS, tee_session
from tracer.capture import ReadProblem, read_capture, read_record
from tracer.classify import classify_common, classify_raw
from tracer.gaps import gap_problem
from tracer.inputs import InputError
from tracer.lines import EVIDENCE_BYTES, LINE_MAX, LongLine
from tracer.model import REC_MESSAGE as _MESSAGE
from tracer.model import Direction, Kind, RecordType
from tracer.parallel import _BOM, END, HTTP_TRANSPORTS, Channel, Task

ROUTE_LINES = 1024  # lines of the file per batch: each worker hears of the file's progress this often
BLOCK_BYTES = 1 << 20

# (a server's start ends what was left open on its connection: Analyser.feed)
ENDING_EVENTS = _CLOSE_EVENTS | {"started"}

_HEAD = b'{"type":"message","seq":'  # how the writers begin a message line (record_to_dict, the tee)
_T_NS = b',"t_ns":'
_CONN = b',"conn":"'


def _first_stdio_request(rec, opened: set[str]) -> bool | None:
    """Whether this record is the first client request of its stdio session (the framing observer's
    `first_client_request`), and then whether it is server/discover; None when it is not one."""
    if (
        rec.type is not RecordType.MESSAGE
        or rec.transport != "stdio"
        or rec.dir is not Direction.C2S
        or rec.conn in opened
    ):
        return None
    common = classify_common(rec.raw)
    if common is not None:
        kind, method = common[0], common[2]
    else:
        c = classify_raw(rec.raw)
        kind, method = c.kind, c.method
    if kind is not Kind.REQUEST:
        return None
    opened.add(rec.conn)
    return method == "server/discover"


def _key(conn: str) -> bytes:
    """A connection name as the writer's layout spells it between the quotes of its "conn" member."""
    return orjson.dumps(conn)[1:-1]


class _Sink:
    """What goes to one worker: entries in line order, a run of guessed lines at a time. The run's
    lists are cleared in place, so the router's table of settled connections holds them."""

    def __init__(self, chan: Channel):
        self.chan = chan
        self.entries: list[tuple] = []
        self.lines: list[bytes] = []
        self.numbers = array("q")
        self.guessed = 0  # lines routed on a guess before the current run (its share of the load)

    def _run(self) -> None:
        if self.lines:
            self.entries.append(("L", b"\n".join(self.lines), self.numbers.tobytes()))
            self.guessed += len(self.lines)
            self.lines.clear()
            del self.numbers[:]

    def add(self, entry: tuple) -> None:
        self._run()
        self.entries.append(entry)

    def flush(self, upto: int) -> None:
        self._run()
        self.chan.send((upto, self.entries))
        self.entries = []


class _Redo(Exception):
    """The file cannot be sharded from this line on: every worker says so to the merge."""

    def __init__(self, line: int):
        self.line = line


def route(task: Task, chans: list[Channel]) -> bool:
    """Route one sharded file to its workers (one channel each); False when it ended in a redo or
    an error, after which the pool is closed (tracer.lint). A worker gone (OSError) is the merge's
    to tell."""
    sinks = [_Sink(c) for c in chans]
    try:
        _route(task, sinks)
    except _Redo as redo:
        for s in sinks:
            s.add(("redo", redo.line))
            s.flush(redo.line)
        return False
    except InputError as exc:
        for s in sinks:
            s.add(("error", str(exc)))
            s.flush(END)
        return False
    except OSError:
        raise
    except Exception:
        text = traceback.format_exc()
        for s in sinks:
            s.add(("crash", text))
            s.flush(END)
        return False
    return True


def _lines(path: str, size: int) -> Iterator[tuple[list, bytes]]:
    """The file's first `size` bytes (past a BOM, as tracer.inputs.open_input reads it) a block at a
    time: (its whole lines without their newline, what comes after the last newline of the file's
    end: a line without newline, or b""). A line past the cap comes as a batch of its own, `[LongLine]`."""
    try:
        fh = open(path, "rb", buffering=0)  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    with fh:
        try:
            bom = len(_BOM) if fh.read(len(_BOM)) == _BOM else 0
            fh.seek(bom)
            left = size - bom
            pending: list[bytes] = []  # the start of a line not ended yet (a long one: many blocks)
            held = 0  # its bytes
            long = None  # a line past the cap (tracer.lines): its start only, the rest not kept
            while left > 0:
                block = fh.read(min(BLOCK_BYTES, left))
                if not block:
                    break
                left -= len(block)
                lines = block.split(b"\n")
                ends = len(lines) > 1
                if long is None and held + len(lines[0]) > LINE_MAX:
                    start = b"".join(p[:EVIDENCE_BYTES] for p in [*pending[:EVIDENCE_BYTES], lines[0]])
                    long, pending = LongLine(start, LINE_MAX), []
                held += len(lines[0])
                if not ends:
                    if long is None:
                        pending.append(block)
                    continue
                if long is not None:
                    yield [long], b""  # (a batch of its own, read in full by `_route`)
                    del lines[0]
                elif pending:
                    pending.append(lines[0])
                    lines[0] = b"".join(pending)
                # (the lines inside a block are shorter than the cap: no cap is below a block)
                last = lines.pop()
                pending, held, long = ([last] if last else []), len(last), None
                yield lines, b""
            if long is not None:
                yield [long], b""
            else:
                yield [], b"".join(pending)
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}") from None


def _route(task: Task, sinks: list[_Sink]) -> None:
    n = len(sinks)
    path = task.path
    owner: dict[str, int] = {}
    fast: dict[bytes, tuple] = {}  # settled conns by _key: (owner, its sink's run lists)
    load = [0] * n  # lines routed to each worker after a full read (the guessed: its sink's count)
    # The stdio sibling probe (tracer.state.shared): a session whose first client request is
    # no server/discover may count the newest connection that opened with one as its probe, so it
    # goes to the worker of that connection (`probe`); which sessions have had their first request
    # (`opened`) is followed from the records themselves.
    probe: str | None = None
    opened: set[str] = set()
    records = 0  # records read here (the guessed are counted by their sinks)
    last_t = 0  # the latest time of a record read here, or verified (one analyser's last_t_ns)
    guessed = b""  # the last line routed on a guess since the time was last settled
    header = None  # the data of the last header
    number = 0
    next_flush = ROUTE_LINES
    head, conn_at = _HEAD, _CONN

    def end_time(at: int) -> int:
        """The time open sessions end at, as one analyser has it: the latest of the records read
        here and of the last line routed on a guess (read in full now). Each worker checks that
        none of its own lines is later (tracer.parallel_worker): in a file written in time order
        none is; else the file is re-linted in the parent from there."""
        nonlocal last_t, guessed
        if guessed:
            rec = read_record(guessed)
            if rec is None or rec.type is not _MESSAGE:  # (broken: a worker's check fails)
                raise _Redo(at)
            if rec.t_ns > last_t:
                last_t = rec.t_ns
            guessed = b""
        return last_t

    def full(line: bytes) -> None:
        """A line read in full here: the decisions every worker used to make alike."""
        nonlocal records, last_t, header, probe
        if type(line) is LongLine:  # (not read: its number and its start are the problem)
            sinks[0].add(("p", number, ReadProblem(path, number, line.message())))
            return
        for item in read_capture((line,), path, number - 1):
            if type(item) is ReadProblem:
                sinks[0].add(("p", number, item))
                continue
            records += 1
            gap = gap_problem(item, path)
            if gap is not None:  # (a recorded gap: reported by worker 0, as the read problems)
                sinks[0].add(("p", number, gap))
            if item.t_ns > last_t:  # (what Analyser.feed does first: the end time of open sessions)
                last_t = item.t_ns
            if item.type is RecordType.HEADER:  # every worker: it ends every session but a tee's own
                t = None
                if header is not None:
                    t = end_time(number)
                    if any(tee_session(c) for c in opened):
                        # (a tee's session may go on past this header: which one does, and so whose
                        # next request is a first one, only its owner knows; the parent's re-lint
                        # decides)
                        raise _Redo(number)
                    opened.clear()
                    fast.clear()
                header = item.data
                for s in sinks:
                    s.add(("h", number, line, t))
                continue
            conn = item.conn
            w = owner.get(conn)
            http = item.transport in HTTP_TRANSPORTS
            if w is not None and conn in opened and item.type is _MESSAGE:  # (nothing to decide)
                if http and w != 0:
                    raise _Redo(number)  # its session would miss the HTTP endpoint facts worker 0 holds
                load[w] += 1
                sinks[w].add(("r", number, line))
                continue
            first = _first_stdio_request(item, opened)  # None, or whether it is a server/discover probe
            follows = owner[probe] if probe is not None and first is not True and probe != conn else None
            if w is None:
                if http:
                    w = 0
                elif follows is not None:
                    w = follows
                else:
                    w = min(range(n), key=lambda k: load[k] + sinks[k].guessed + len(sinks[k].lines))
                owner[conn] = w
            elif (http and w != 0) or (first is False and follows is not None and follows != w):
                # its session would miss the HTTP endpoint facts worker 0 holds, or the sibling probe
                # another worker holds
                raise _Redo(number)
            if first is True:
                probe = conn
            elif item.type is RecordType.EVENT and item.data and item.data.get("event") in ENDING_EVENTS:
                opened.discard(conn)  # its next session has a first request of its own
                if fast.pop(_key(conn), None) is not None:
                    sinks[w].add(("u", conn))
            load[w] += 1
            s = sinks[w]
            s.add(("r", number, line))
            if conn in opened and _key(conn) not in fast:
                # its session has begun: its lines in the writer's layout go straight to its owner
                fast[_key(conn)] = (s.lines, s.numbers)
                s.add(("s", conn))

    for lines, rest in _lines(path, task.size):
        if lines and type(lines[0]) is LongLine:  # (a line past the cap: a batch of its own)
            number += 1
            full(lines[0])
            continue
        for line in lines:
            number += 1
            # (a message line in the writer's layout, of a settled connection: routed on the guess
            # of its "conn" member, checked by its owner; the hot loop, so no call it can spare)
            if line[:24] == head:
                c = line.find(conn_at, 40)
                if c > 0:
                    hit = fast.get(line[c + 9 : line.find(b'"', c + 9)])
                    if hit is not None:
                        hit[0].append(line)
                        hit[1].append(number)
                        guessed = line
                        continue
            if number >= next_flush:
                next_flush = number + ROUTE_LINES
                for s in sinks:
                    s.flush(number - 1)
            full(line + b"\n")
        if number >= next_flush:
            next_flush = number + ROUTE_LINES
            for s in sinks:
                s.flush(number)
        if rest:  # a last line without its newline (torn, or a file still being written)
            number += 1
            full(rest)
    t = end_time(END)
    records += sum(s.guessed + len(s.lines) for s in sinks)
    for s in sinks:
        s.add(("end", t, records))
        s.flush(END)
