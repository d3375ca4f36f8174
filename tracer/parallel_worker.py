"""A worker process of `mcptrace lint --jobs N` (tracer.parallel has the plan and the per-file
analysis, tracer.parallel_pool the parent): its share of each capture sharded by connection, as the
parent's router sends it (tracer.parallel_route), and the files given to it whole.

Of a sharded capture a worker gets only what its analysis needs: its own lines, the headers, and
the time open sessions end at. Its lines come in runs routed on a guess of their "conn" and "t_ns"
members (no parse in the router); each is read here in full, as the capture reader reads it
(tracer.capture.read_capture's per-line step), and the guess is checked: a broken line is reported
here with its number (and counted off the file's records), a line whose record is not the message
the guess said makes the file re-linted in the parent from that line (tracer.parallel).
"""

from __future__ import annotations

import os
import sys
import traceback
from array import array

import orjson

from tracer.capture import _fast_record, _line_problem, read_record, record_from_dict
from tracer.inputs import InputError
from tracer.model import REC_MESSAGE as _MESSAGE  # (enum members as globals: tracer.model)
from tracer.parallel import END, HTTP_TRANSPORTS, Channel, Task, _FileWork, _Out, _whole


class _Stop(Exception):
    """This worker's part of the file ends here (a redo it found): it reads on to the file's end."""


def _shard(task: Task, k: int, rules, digests: bool, out: _Out, recv) -> None:
    """Worker k's share of a sharded capture: the router's batches (tracer.parallel_route), `recv`
    giving each, up to the file's end."""
    work = _FileWork(task, rules, digests, out)
    a_ = work.analyser
    source = task.path
    settled: set[str] = set()  # its connections whose lines the router routes on a guess
    broken = 0  # of the guessed lines, those read here as broken (not records after all)
    stopped = False
    while True:
        upto, entries = recv()
        if stopped:  # (a redo of its own was sent: the rest of the file is the parent's)
            if entries and entries[-1][0] in _LAST:
                return
            continue
        try:
            for entry in entries:
                what = entry[0]
                if what == "L":
                    broken += _run(work, k, entry, settled, source)
                elif what == "r":
                    line = entry[1]
                    work.record(read_record(entry[2], line, source), line)
                    _facts(work, k, line)
                elif what == "s":
                    settled.add(entry[1])
                elif what == "u":
                    settled.discard(entry[1])
                elif what == "h":
                    line, t = entry[1], entry[3]
                    if t is not None:
                        _ends_at(work, t, line)
                        work.close_all(line, header=True)
                        settled.clear()
                    a_.feed(read_record(entry[2], line, source))
                elif what == "p":
                    out.add((entry[1], 0, 0), ("p", entry[2]))
                elif what == "end":
                    _ends_at(work, entry[1], END)
                    work.end(entry[2], broken)
                    return
                elif what == "redo":
                    out.add((entry[1], -1, 0), ("redo", entry[1]))
                    return
                elif what == "error":
                    raise InputError(entry[1])
                else:
                    raise RuntimeError(f"the lint router failed:\n{entry[1]}")
        except _Stop:
            stopped = True
            if entries and entries[-1][0] in _LAST:
                return
            continue
        out.add((upto, 10, 0), ("w",))  # every later item is of a later line
        out.flush()


_LAST = frozenset({"end", "redo", "error", "crash"})  # what ends a file's batches


def _ends_at(work: _FileWork, t: int, line: int) -> None:
    """Open sessions end at `t`, the router's latest time of the file so far, which one analyser's
    last_t_ns would hold: unless a line of this worker is later (the router took the time of the
    last line it routed, in a file not written in time order), then the re-lint decides."""
    if work.analyser.last_t_ns > t:
        _redo(work, line)
    work.analyser.last_t_ns = t


def _redo(work: _FileWork, line: int) -> None:
    work.out.add((line, -1, 0), ("redo", line))
    raise _Stop


def _facts(work: _FileWork, k: int, line: int) -> None:
    if k != 0 and work.analyser.shared.has_endpoint_facts():
        # HTTP endpoint facts outside worker 0 would be seen by only this worker's sessions; this
        # line is analysed and reported already: the re-lint starts after it
        _redo(work, line + 1)


def _run(work: _FileWork, k: int, entry: tuple, settled: set[str], source: str) -> int:
    """A run of this worker's guessed lines, each read as tracer.capture.read_capture reads a line;
    how many of them were broken."""
    _, blob, packed = entry
    loads = orjson.loads
    fast = _fast_record
    record = work.record
    out = work.out
    broken = 0
    numbers = array("q")
    numbers.frombytes(packed)
    for line, number in zip(blob.split(b"\n"), numbers, strict=True):
        try:
            obj = loads(line)
            if type(obj) is not dict:
                raise ValueError("record is not a JSON object")
            rec = fast(obj, number, source) or record_from_dict(obj, line=number, source=source)
        except (orjson.JSONDecodeError, ValueError):
            broken += 1
            problem = _line_problem(line + b"\n", number, source)  # (each guessed line had one)
            if problem is not None:
                out.add((number, 0, 0), ("p", problem))
            continue
        if rec.type is not _MESSAGE or rec.conn not in settled:
            _redo(work, number)  # (a crafted line: its record is not what its "conn" member seemed)
        if k != 0 and rec.transport in HTTP_TRANSPORTS:
            _redo(work, number)  # its session would miss the HTTP endpoint facts worker 0 holds
        record(rec, number)
        if k != 0 and work.analyser.shared.has_endpoint_facts():
            _redo(work, number + 1)
    return broken


def _worker(conn, inbox: Channel, tasks: list[Task], k: int, rule_ids: list[str], digests: bool) -> None:
    try:
        from tracer.analyser import RuleSet
        from tracer.rules import all_rules

        table = all_rules()
        rules = RuleSet([table[i] for i in rule_ids])
        for task in tasks:
            if not task.shard and task.owner != k:
                continue
            out = _Out(conn, task.index)
            try:
                if task.shard:
                    _shard(task, k, rules, digests, out, inbox.recv)
                else:
                    _whole(task, rules, digests, out)
            except InputError as exc:
                out.add((END, 10, 0), ("error", str(exc)))
                out.flush()
                return
            out.flush()
    except (BrokenPipeError, EOFError, KeyboardInterrupt):  # (the parent has gone, or stopped us)
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
    never imports the caller's main module): its job and then the router's batches come on stdin,
    its own batches go out on what was its stdout; fd 1 then points at stderr, so nothing else
    written there can reach the stream."""
    stream = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inbox = Channel(sys.stdin.buffer)
    tasks, k, rule_ids, digests = inbox.recv()
    _worker(Channel(stream), inbox, tasks, k, rule_ids, digests)


__all__: list[str] = []
