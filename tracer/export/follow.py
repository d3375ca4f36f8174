"""The live exporter's process: it follows the capture file as it is written and exports it.

    python -m tracer.export.follow [--otlp URL] --offset N CAPTURE   (stdin: closed when capture ends)

`mcptrace stdio --otlp` and `mcptrace proxy --otlp` start it. It shares nothing with the door: not
its interpreter (a thread there would take the interpreter lock from the relay, the capture writer
or mitmproxy's event loop), not its memory; it reads what the capture wrote, from the session's
header on, so the door's only cost is the capture it writes anyway. It runs on idle CPU only; when
it falls behind it reads later, from the file: nothing is lost while the session lasts. When its
stdin closes (the door finished the capture, or died) it reads to the end of the file, catching up
at normal priority for at most CATCH_UP_S, exports within a bounded wait, and says on stderr what
reached the backend and what was dropped (counted). It runs in a session of its own, so a host that
ends the server's process group does not cut its last export short, and nobody waits for it.
"""

from __future__ import annotations

import argparse
import math
import os
import select
import sys
import time
from collections.abc import Iterator

from tracer.lines import EVIDENCE_BYTES, LINE_MAX, LongLine

CATCH_UP_S = 30.0  # after the session ended: reading the rest of the file, at most this long
POLL_S = 0.05  # no new bytes: look again this often (a span reaches the exporter within this)
CHUNK = 1 << 20


class Follow:
    """Complete lines of a capture file from `offset`, as they are appended, until `stop_fd` reaches
    EOF and the file's end is read (or CATCH_UP_S after that passes). `pos`: bytes consumed."""

    def __init__(self, path: str, offset: int, stop_fd: int):
        self.path = path
        self.pos = offset
        self.stop_fd = stop_fd

    def __iter__(self) -> Iterator[bytes | LongLine]:
        stopped = False
        deadline = float("inf")
        with open(self.path, "rb") as fh:
            fh.seek(self.pos)
            # a line still being written (or a torn last one), in pieces joined once it ends: a long
            # line is not copied again at every chunk; past the line cap only its start is kept
            # (read_capture reports it, tracer.lines), so memory stays bounded whoever writes the file
            tail: list[bytes] = []
            held = 0
            while True:
                chunk = fh.read(CHUNK)
                if chunk:
                    lines = chunk.split(b"\n")
                    last = lines.pop()
                    if lines:
                        first = lines[0]
                        if held + len(first) > LINE_MAX:
                            self.pos += held + len(first) + 1
                            yield LongLine(
                                b"".join([*tail[:EVIDENCE_BYTES], first[:EVIDENCE_BYTES]]), LINE_MAX
                            )
                            del lines[0]
                        elif tail:
                            lines[0] = b"".join([*tail, first])
                        tail, held = [], 0
                        for line in lines:
                            self.pos += len(line) + 1
                            yield line + b"\n"
                    if last:
                        if held <= LINE_MAX:
                            tail.append(last)
                        held += len(last)
                    if stopped and time.monotonic() > deadline:
                        return
                    continue
                if stopped:
                    return
                # (poll, not select: select refuses a descriptor past 1023 in a busy process)
                ready = _readable(self.stop_fd, POLL_S)
                if ready and not os.read(self.stop_fd, 4096):
                    stopped = True
                    deadline = time.monotonic() + CATCH_UP_S
                    _scheduling(idle=False)


def _scheduling(idle: bool) -> None:
    """Idle CPU only while the session runs (as the tee's capture process); normal at the end, at the
    nice value an unprivileged process may return to. Every thread: scheduling is per thread on
    Linux, and the SDK's export and metric threads, started in the background, inherited it (they
    stayed idle at the end, and on a busy machine the last export ran out of time)."""
    from tracer.stdio.priority import background

    background(idle)
    _autogroup(19 if idle else 0)


def _autogroup(nice: int) -> None:
    """The follower runs in a session of its own (tracer.export.live), which Linux schedules as a
    group of its own beside the tee's: a task's own priority counts only inside its group, so the
    group's weight is lowered too, or the exporter still takes half a busy core from the relay."""
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:
        pass  # (no autogroup scheduling here, or returning to 0 is not allowed: harmless)


def _readable(fd: int, timeout_s: float) -> bool:
    """Whether FD has something to read (or its end) within TIMEOUT_S."""
    p = select.poll()
    p.register(fd, select.POLLIN)
    return bool(p.poll(max(0, math.ceil(timeout_s * 1000))))


def _own_connection(stop_fd: int) -> str | None:
    """The connection the tee names on stdin (one line) once its server runs; None: the door ended
    first (a server that could not start)."""
    got = b""
    while not got.endswith(b"\n"):
        chunk = os.read(stop_fd, 1)  # (byte by byte: what follows the line is the door's end)
        if not chunk:
            return None
        got += chunk
    return got.decode("utf-8", "replace").strip() or None


def run(
    path: str,
    offset: int,
    endpoint: str | None,
    stop_fd: int,
    *,
    include_bodies: bool = False,
    conn_from_stdin: bool = False,
) -> dict:
    from tracer.analyser import Analyser
    from tracer.capture import ReadProblem, read_capture
    from tracer.export import SpanFeed
    from tracer.export.live import CLOSE_TIMEOUT_S, FAILING_TIMEOUT_S, capture_identity
    from tracer.export.otel import OtelSink
    from tracer.model import RecordType
    from tracer.rules import select_rules

    _scheduling(idle=True)
    sink = OtelSink(endpoint, flush_every=512)
    feed = SpanFeed(
        sink,
        Analyser(select_rules(None, None)),
        source=path,
        identity=capture_identity(path),
        include_bodies=include_bodies,
    )
    # A tee exports only its own connection: another tee appending to the same file at once (a host
    # starting the server twice) writes its header and its records after this one's header, and its
    # own exporter sends those (here they were sent again, and the other tee's under this identity).
    own = _own_connection(stop_fd) if conn_from_stdin else None
    lines = Follow(path, offset, stop_fd)
    error = None
    try:
        headers = 0
        for rec in read_capture(lines, path):
            if isinstance(rec, ReadProblem):
                continue
            if conn_from_stdin:
                if rec.type is RecordType.HEADER:
                    headers += 1
                    if headers > 1:
                        continue  # (another recording's header: its sessions are not ours)
                elif rec.conn != own:
                    continue
            feed.feed(rec)
        feed.finish()
    except Exception as exc:  # a bug costs the export, never the capture (already on disk)
        error = f"{type(exc).__name__}: {exc}"
    try:
        behind = max(0, os.path.getsize(path) - lines.pos)  # not read before the catch-up time ran out
    except OSError:
        behind = 0
    finished = sink.close(FAILING_TIMEOUT_S if sink.exporter.failing() else CLOSE_TIMEOUT_S)
    return {
        "spans": sink.spans,
        "exported": sink.exporter.exported,
        "dropped": sink.dropped,
        "sampled_out": sink.sampled_out,
        "sampler": sink.sampling.description,
        "behind_bytes": behind,
        "error": error,
        "finished": finished,
    }


def main(argv: list[str] | None = None) -> int:
    from tracer.export.live import summary, where

    p = argparse.ArgumentParser(
        prog="python -m tracer.export.follow",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("capture")
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--otlp", metavar="URL", default=None)
    p.add_argument("-q", "--quiet", action="store_true")
    p.add_argument("--include-bodies", action="store_true")
    p.add_argument(
        "--conn-from-stdin",
        action="store_true",
        help="export only the connection named on stdin's first line",
    )
    args = p.parse_args(argv)
    stats = run(
        args.capture,
        args.offset,
        args.otlp or None,
        sys.stdin.fileno(),
        include_bodies=args.include_bodies,
        conn_from_stdin=args.conn_from_stdin,
    )
    line = summary(stats, where(args.otlp or None))
    lost = stats["dropped"] or stats["behind_bytes"] or stats["error"]
    if line and (lost or not args.quiet):
        try:
            sys.stderr.write(f"mcptrace: {line}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass  # (the host closed the server's stderr: nobody to tell)
    return 0


if __name__ == "__main__":
    sys.exit(main())
