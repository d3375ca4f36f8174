"""The capture process's side of tracer.stdio.process: notes in, records out.

Forked before the server starts (tracer.stdio.process says why), it reads the relay's notes from
the control pipe and the bytes they describe from one capture pipe per stream, frames them into
records through the same `CaptureSink` the in-process capture uses, and answers with findings and
the final counts. It also ends the server's process group when the relay died (`_Server`).
"""

from __future__ import annotations

import os
import select
import signal
import struct
import sys
import time

import orjson

from tracer.stdio.capture import CaptureSink
from tracer.stdio.heap import TRIM_AFTER_BYTES, TRIM_IDLE_FROM, keep_freed_memory
from tracer.stdio.priority import background, hurried
from tracer.stdio.ring import IDLE_TRIM_MS, RingReader
from tracer.stdio.splice import read_exactly, readable

# The notes the relay writes on the control pipe, a fixed size each:
_NOTE = struct.Struct("<BBxxxxxxqq")  # kind, stream, n, t_ns (or newline count for a gap)
_TEED, _GAP, _EOF, _EVENT, _CONN, _INLINE, _RING = range(7)  # _RING: the next n bytes of the ring
LINGER_S = 0.002
STEP_BACK_MS = 50  # a hurried capture process steps back to the background after this long quiet
ROOM_WAIT_S = 0.001
# How long the writer thread may hold the interpreter lock while this thread waits to empty the
# capture pipes (Python's default: 5 ms). A flood fills a 1 MiB pipe in about a millisecond: with the
# default the relay found the pipes full and copied chunks into its own memory (two more copies and
# fresh pages each) while the reading here waited for the lock. (In one side-by-side run of
# bench_tee.py (d): x1.10 and x1.48 the end-to-end rate, 15-20% less CPU for the whole flood.)
SWITCH_INTERVAL_S = 0.0005
ORPHAN_GRACE_S = 3.0  # after the tee died: how long the server has after SIGTERM before SIGKILL


def _close_others(keep: set[int]) -> None:
    try:
        fds = [int(x) for x in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 256))
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _child(
    ctl: int, caps: list[int], back: int, writer, budget: int, live_lint: bool, ring: RingReader | None = None
) -> int:
    """The capture process: notes in, records out, until the relay closes the control pipe. `ring`:
    where the relay keeps the copies its capture pipes had no room for (tracer.stdio.ring)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)  # the relay forwards signals; we end at EOF of the notes
    background(True)

    def tell(msg: dict) -> None:
        try:
            os.write(back, orjson.dumps(msg) + b"\n")
        except OSError:
            pass

    analyser = None
    if live_lint:
        from tracer.analyser import Analyser
        from tracer.rules import select_rules

        analyser = Analyser(select_rules(["MCP8"]))
    sink = CaptureSink(
        writer,
        "stdio",
        budget=budget,
        analyser=analyser,
        on_finding=lambda f: tell({"finding": [f.rule, f.severity.label, f.message]}),
    )
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    trim = keep_freed_memory(budget)
    sink.start()
    server = _Server()
    trimmed_at = 0

    def quiet(for_a_while: bool) -> int | None:
        """No note to read: back to the background if a flood had hurried us, once no note came for
        STEP_BACK_MS (a flood's next chunk is often a moment away: stepping back at each pause left
        the process on idle CPU only, where a busy machine gave it none, until the relay hurried it
        again 20 ms later, the relay's memory meanwhile filling up to its budget). Returns how long
        to wait for a note before asking again (ms), or None: as long as it takes."""
        nonlocal trimmed_at
        if sink.pending_bytes or (hurried() and not for_a_while):
            return STEP_BACK_MS
        if hurried():
            background(True)
            if hurried():  # (refused for now: an unprivileged autogroup change waits 0.1 s after the last)
                return STEP_BACK_MS
        seen = sink.bytes_seen - trimmed_at
        if seen >= TRIM_AFTER_BYTES or (for_a_while and seen >= TRIM_IDLE_FROM):
            trimmed_at = sink.bytes_seen
            trim()
        elif seen >= TRIM_IDLE_FROM:
            return IDLE_TRIM_MS  # (a smaller flood is over too once no note came for that long)
        return None

    _read_notes(ctl, caps, sink, server.note, quiet, ring)
    background(False)
    server.end_if_orphaned(sink)
    finished = sink.close(None)
    sink.finish_analysis()
    try:
        writer.close()
    except OSError:
        pass
    err = sink.write_error
    tell(
        {
            "report": {
                "messages": sink.messages,
                "stderr_lines": sink.stderr_lines,
                "dropped_bytes": sink.dropped_bytes,
                "dropped_chunks": sink.dropped_chunks,
                "findings": dict(sink.findings),
                "analysis_error": sink.analysis_error,
                "write_error": (err.strerror or str(err)) if err is not None else None,
            }
        }
    )
    return 0 if finished else 1


class _Server:
    """The tee's server, as the capture process learns of it from the `started` and `exit` events.

    When the control pipe closes without the server's `exit`, the tee died (SIGKILL: nothing ran in
    it). The server got SIGTERM from the kernel (PR_SET_PDEATHSIG, see tracer.stdio.tee.spawn); this
    process, which outlives the tee, finishes the job the tee's escalation would have done: SIGTERM
    to the server's process group (a launcher's children too), SIGKILL after ORPHAN_GRACE_S."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.fd: int | None = None  # a pidfd: waits for the exit, never signals a reused pid
        self.exited = False

    def note(self, data: dict) -> None:
        name = data.get("event")
        # (pid 1 or below names no server of ours: killpg(1) would signal init's whole group)
        if name == "started" and type(data.get("pid")) is int and data["pid"] > 1 and self.pid is None:
            self.pid = data["pid"]
            try:
                self.fd = os.pidfd_open(self.pid)
            except (AttributeError, OSError):
                self.fd = None
        elif name == "exit":
            self.exited = True

    def end_if_orphaned(self, sink: CaptureSink) -> None:
        if self.pid is None or self.exited or self.fd is None:
            return
        try:
            sent = []
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if readable(self.fd, 0 if sig == signal.SIGTERM else ORPHAN_GRACE_S):
                    break  # the server has exited
                try:
                    os.killpg(self.pid, sig)
                except OSError:
                    break
                sent.append(sig.name)
            if sent:
                sink.event_at(
                    time.time_ns(),
                    {
                        "event": "tee-died",
                        "signals": sent,
                        "reason": "the tee ended before its server; the capture ended it",
                    },
                )
        finally:
            os.close(self.fd)


def _wait_room(sink: CaptureSink, n: int) -> None:
    """Leave the copies in their pipes while the writer is a budget behind: the relay then keeps
    them in its own budget (and drops only over it), rather than this process dropping them."""
    while sink.pending_bytes and not sink.has_room(n):
        time.sleep(ROOM_WAIT_S)


def _read_notes(
    ctl: int, caps: list[int], sink: CaptureSink, on_event=None, on_quiet=None, ring: RingReader | None = None
) -> None:
    size = _NOTE.size
    unpack = _NOTE.unpack_from
    buf = b""
    os.set_blocking(ctl, False)
    waiter = select.poll()
    waiter.register(ctl, select.POLLIN)
    busy = False
    while True:
        # While notes keep coming, read them every few ms on a timer, never woken by each one: a
        # relay writing a note to a reader asleep in read() pays for its wake-up, on every message.
        # Only after a quiet interval does the process block until the next note.
        try:
            more = os.read(ctl, 1 << 16)
        except BlockingIOError:
            if busy:
                busy = False
                time.sleep(LINGER_S)
            else:
                for_a_while = False
                while on_quiet is not None:
                    if waiter.poll(on_quiet(for_a_while)):
                        break
                    for_a_while = True  # (no note for that long)
                else:
                    waiter.poll()
                busy = True
                time.sleep(LINGER_S)  # (the first note of a burst: gather the rest with it)
            continue
        if not more:
            return
        busy = True
        buf += more
        pos, end = 0, len(buf)
        while end - pos >= size:
            kind, stream, n, t = unpack(buf, pos)
            if kind == _TEED:
                pos += size
                _wait_room(sink, n)
                sink.offer(stream, t, read_exactly(caps[stream], n))
            elif kind == _RING:
                pos += size
                _wait_room(sink, n)
                sink.offer(stream, t, ring.take(n))
            elif kind == _GAP:
                pos += size
                sink.gap(stream, n, t)
            elif kind == _EOF:
                pos += size
                sink.eof(stream, t)
            else:  # an inline chunk, an event or the connection id: a payload follows
                if end - pos < size + n:
                    break
                payload = buf[pos + size : pos + size + n]
                pos += size + n
                if kind == _INLINE:
                    _wait_room(sink, n)
                    sink.offer(stream, t, payload)
                elif kind == _EVENT:
                    data = orjson.loads(payload)
                    if on_event is not None:
                        on_event(data)
                    sink.event_at(t, data)
                else:
                    sink.conn = payload.decode()
        buf = buf[pos:]
