"""A worker process of `mcptrace lint --jobs N` (tracer.parallel has the plan and the per-file
analysis, tracer.parallel_pool the parent): its share of each capture sharded by connection, and
the files given to it whole.

Every worker of a sharded capture reads every line, so that all make the same ownership decisions
(tracer.parallel). Of a line of a connection another worker owns, a worker needs only what the
decisions need: whose it is, that it counts as a record, its time. It gets them from a prefix
match of the writer's layout (`_plain`, a pure function of the line's bytes, so every worker sees
the same), before the capture reader would parse the line: no JSON parse, no typed record.

Such a line may still be broken further on (its text), which only its owner finds out, reading it
in full. So everything but the owner's analysis is decided from the match alone, the same way in
every worker whatever the rest of the line holds: ownership, the load counts, the count of
records (the owner tells the parent how many of its lines were broken after all). The owner
reports a broken line, with its number. The one fact taken on trust is the time: the end of a
recording closes its sessions at the time of its last record, so a worker checks, there, the one
line it took the latest time from without reading it; if that line is broken after all (or says
other than its prefix, a crafted line), the file is re-linted in the parent from that point
(tracer.parallel): slower, never different. Any line the match does not take (a header, an
event, a line of a connection not yet settled, or not in the writer's layout) is read in full by
every worker alike, as before.
"""

from __future__ import annotations

import os
import pickle
import re
import sys
import traceback

from tracer.analyser import _CLOSE_EVENTS, RuleSet, tee_session
from tracer.capture import ReadProblem, read_record
from tracer.classify import classify_common, classify_raw
from tracer.inputs import InputError
from tracer.model import Direction, Kind, RecordType
from tracer.parallel import (
    END,
    HTTP_TRANSPORTS,
    WATERMARK_LINES,
    Channel,
    Task,
    _capture_items,
    _FileWork,
    _Out,
    _whole,
)

# (a server's start ends what was left open on its connection: Analyser.feed)
ENDING_EVENTS = _CLOSE_EVENTS | {"started"}

# A message record as the writers lay it out (record_to_dict, the tee's encode_line and runs), up
# to the opening quote of its text: the members in their order, the strings of printable ASCII
# with no quote or backslash (nothing to unescape), seq and t_ns plain JSON integers.
_plain = re.compile(
    rb'\{"type":"message","seq":(?:0|[1-9][0-9]{0,17}),"t_ns":(0|[1-9][0-9]{0,18}),"dir":"(?:c2s|s2c)",'
    rb'"transport":"[ !#-\[\]-~]*","conn":"([ !#-\[\]-~]*)","text":"'
).match
_WHOLE_END = b"}\n"  # a whole line (not a torn last one) of one object


_MESSAGE = RecordType.MESSAGE


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


# What sessions share in a worker's analyser (tracer.state.shared), kept right by the routing
# below: the sibling probe anywhere (every worker follows it); the HTTP endpoints' facts only in
# worker 0, which owns every HTTP connection.


def _shard(task: Task, k: int, n: int, rules: RuleSet, digests: bool, out: _Out) -> None:
    work = _FileWork(task, rules, digests, out)
    a_ = work.analyser
    owner: dict[str, int] = {}
    load = [0] * n
    # The stdio sibling probe (tracer.state.shared): a session whose first client request is
    # no server/discover may count the newest connection that opened with one as its probe, so it
    # goes to the worker of that connection (`probe`); every worker follows which sessions have had
    # their first request (`opened`) from the records themselves.
    probe: str | None = None
    opened: set[str] = set()
    records = 0  # as the prefix match counts them: the same in every worker
    broken = 0  # of this worker's lines the match counted, those its reading found broken
    next_mark = WATERMARK_LINES
    mine = 0  # the number of the line `skip` left to the reader as this worker's own
    mine_conn, mine_t = "", 0
    taken_t, taken_line, taken_conn = 0, b"", ""  # the latest time `skip` took on trust

    def skip(line: bytes, number: int) -> bool:
        """The loop's first branch below (a message of a connection another worker owns, whose
        session has begun), taken from the prefix match alone; False: the reader reads the line."""
        nonlocal records, next_mark, mine, mine_conn, mine_t, taken_t, taken_line, taken_conn
        m = _plain(line)
        if m is None or not line.endswith(_WHOLE_END):
            return False
        conn = m[2].decode("ascii")
        w = owner.get(conn)
        if w is None or conn not in opened:
            return False
        t_ns = int(m[1])
        if t_ns >> 63:  # beyond the reader's range: a broken line, which every worker reads
            return False
        if w == k:
            mine, mine_conn, mine_t = number, conn, t_ns
            return False
        if number >= next_mark:
            next_mark = number + WATERMARK_LINES
            out.add((number, 0, 0), ("w",))
        records += 1
        load[w] += 1
        if t_ns > taken_t:
            taken_t, taken_line, taken_conn = t_ns, line, conn
        return True

    def end_time_holds() -> bool:
        """Whether the time of open sessions' end is what one analyser has: the latest time `skip`
        took on trust belongs to a record (and then it is the latest of any), or is no later than
        one this worker read."""
        nonlocal taken_t
        if taken_t > a_.last_t_ns:
            rec = read_record(taken_line)
            if rec is None or rec.type is not _MESSAGE or rec.conn != taken_conn or rec.t_ns != taken_t:
                return False
            a_.last_t_ns = taken_t
        taken_t = 0
        return True

    for item in _capture_items(task.path, task.size, skip):
        line = item.line
        if line >= next_mark:
            next_mark = line + WATERMARK_LINES
            out.add((line, 0, 0), ("w",))
        if line == mine:  # a line the others counted as a message of this worker's `mine_conn`
            if type(item) is ReadProblem:
                out.add((line, 0, 0), ("p", item))
                records += 1
                broken += 1
                load[k] += 1
                continue
            if item.type is not _MESSAGE or item.conn != mine_conn or item.t_ns != mine_t:
                out.add((line, -1, 0), ("redo", line))  # (a crafted line: its prefix says otherwise)
                return
        elif type(item) is ReadProblem:
            if k == 0:
                out.add((line, 0, 0), ("p", item))
            continue
        records += 1
        if item.type is RecordType.HEADER:  # every worker: it ends every session but a tee's own
            if a_.header is not None:
                if item.t_ns > a_.last_t_ns:
                    a_.last_t_ns = item.t_ns
                if not end_time_holds():
                    out.add((line, -1, 0), ("redo", line))
                    return
                if any(tee_session(c) for c in opened):
                    # (a tee's session may go on past this header: which one does, and so whose next
                    # request is a first one, only its owner knows; the parent's re-lint decides)
                    out.add((line, -1, 0), ("redo", line))
                    return
                work.close_all(line, header=True)
                opened.clear()
            a_.feed(item)
            continue
        conn = item.conn
        w = owner.get(conn)
        if w is not None and conn in opened and item.type is _MESSAGE:  # (most records: nothing to decide)
            if w != k:
                if item.t_ns > a_.last_t_ns:
                    a_.last_t_ns = item.t_ns
                load[w] += 1
                continue
            if item.transport not in HTTP_TRANSPORTS or w == 0:
                load[w] += 1
                work.record(item, line)
                if k != 0 and a_.shared.has_endpoint_facts():
                    # (this line is analysed and reported already: the re-lint starts after it)
                    out.add((line + 1, -1, 0), ("redo", line + 1))
                    return
                continue
        http = item.transport in HTTP_TRANSPORTS
        first = _first_stdio_request(item, opened)  # None, or whether it is a server/discover probe
        follows = owner[probe] if probe is not None and first is not True and probe != conn else None
        if w is None:
            w = owner[conn] = (
                0 if http else follows if follows is not None else min(range(n), key=load.__getitem__)
            )
        elif (http and w != 0) or (first is False and follows is not None and follows != w):
            # its session would miss the HTTP endpoint facts worker 0 holds, or the sibling probe
            # another worker holds
            out.add((line, -1, 0), ("redo", line))
            return
        if first is True:
            probe = conn
        elif item.type is RecordType.EVENT and item.data and item.data.get("event") in ENDING_EVENTS:
            opened.discard(conn)  # its next session has a first request of its own
        load[w] += 1
        if w == k:
            work.record(item, line)
            if k != 0 and a_.shared.has_endpoint_facts():
                # HTTP endpoint facts outside worker 0 would be seen by only this worker's sessions; this line
                # is analysed and reported already: the re-lint starts after it
                out.add((line + 1, -1, 0), ("redo", line + 1))
                return
        elif item.t_ns > a_.last_t_ns:  # (what Analyser.feed does first: the end time of open sessions)
            a_.last_t_ns = item.t_ns
    if not end_time_holds():
        out.add((END, -1, 0), ("redo", END))
        return
    work.end(records, broken)


def _worker(conn, tasks: list[Task], k: int, n: int, rule_ids: list[str], digests: bool) -> None:
    try:
        from tracer.rules import all_rules

        table = all_rules()
        rules = RuleSet([table[i] for i in rule_ids])
        for task in tasks:
            if not task.shard and task.owner != k:
                continue
            out = _Out(conn, task.index)
            try:
                (_shard(task, k, n, rules, digests, out) if task.shard else _whole(task, rules, digests, out))
            except InputError as exc:
                out.add((END, 10, 0), ("error", str(exc)))
                out.flush()
                return
            out.flush()
    except (BrokenPipeError, KeyboardInterrupt):
        return
    except BaseException:
        try:
            conn.send((-1, [((0, 0, 0), ("crash", traceback.format_exc()))]))
        except OSError:
            pass
    finally:
        conn.close()


def main() -> None:
    """A worker as tracer.parallel_pool starts it (`python -P -c ...`, a fresh interpreter that
    never imports the caller's main module): its job pickled on stdin, its batches sent on what was
    its stdout; fd 1 then points at stderr, so nothing else written there can reach the stream."""
    stream = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    tasks, k, n, rule_ids, digests = pickle.load(sys.stdin.buffer)
    sys.stdin.close()
    _worker(Channel(stream), tasks, k, n, rule_ids, digests)


__all__: list[str] = []
