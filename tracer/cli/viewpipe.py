"""`cmd | mcptrace view -` and `mcptrace view <(cmd)`: a stream viewed as a file.

The viewer indexes its file and reads rows again on demand, which a pipe cannot give. So the stream
is copied (spooled) into a temporary file of its own (mode 0600, removed when the viewer exits),
and the viewer follows that file while the copy goes on: a capture, host log, NDJSON or flow
(mitmproxy's) stream shows its rows as they come. A HAR document is read whole by its reader
(entries are ordered across the whole document), so such a stream is copied to its end before the
screen opens.

With `-` the stream is the viewer's standard input, where a terminal program reads its keys; the
keys then come from the controlling terminal (/dev/tty), as `less` reads them. Nothing else about
the viewer changes: the copy runs in a thread of its own, in large chunks (it holds the interpreter
lock only between system calls), and the spooled file is an input like any other.
"""

from __future__ import annotations

import os
import select
import signal
import stat
import sys
import tempfile
import threading
import time

CHUNK = 1 << 20
SAY_WAITING_S = 1.0  # a stream whose format is not told yet after this long: the terminal says so
READ_WHOLE = ("har",)  # formats whose readers need the whole file (no following)


def is_stream(path: str) -> bool:
    """Whether PATH is a pipe or socket (`<(cmd)`, a FIFO), or `-` on one (or on a file redirected
    into standard input); `-` on a terminal or a character device stays refused."""
    try:
        mode = os.fstat(0).st_mode if path == "-" else os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (path == "-" and stat.S_ISREG(mode))


class Spool:
    """A stream copied into a temporary file: first its head (enough to tell its format), then the
    rest in a thread (`start`), until its end (`done`)."""

    def __init__(self, src: int, name: str):
        self.src = src
        self.name = name
        fd, self.path = tempfile.mkstemp(prefix="mcptrace-stream-", suffix=".spool")  # (mode 0600)
        self._out = fd
        self.copied = 0
        self.error: OSError | None = None
        self.done = threading.Event()
        self._thread: threading.Thread | None = None

    def read_head(self) -> bool:
        """Copy until detection can tell the format (tracer.inputs.decidable: its head, whole lines
        detection recognises, a flow file's start) or the stream ends. A slow stream (`kubectl logs
        -f`) that has not told it after SAY_WAITING_S gets a line on the terminal saying what the
        viewer waits for (it showed nothing at all until 64 KiB had come). False: the stream ended
        (then everything is copied)."""
        from tracer.inputs import HEAD_BYTES, decidable

        head = bytearray()
        said = False
        started = time.monotonic()
        while not decidable(bytes(head)):
            if not said and not self._readable(SAY_WAITING_S - (time.monotonic() - started)):
                said = True
                sys.stderr.write(
                    f"mcptrace: waiting for {self.name}: {len(head):,} bytes so far, not enough to tell "
                    f"its format (the viewer opens once it can, at {HEAD_BYTES // 1024} KiB at most)\n"
                )
                sys.stderr.flush()
            chunk = self._read(HEAD_BYTES - len(head))
            if not chunk:
                self._ended()
                return False
            self._write(chunk)
            head += chunk
        return True

    def _readable(self, within: float) -> bool:
        """Whether the stream has bytes (or its end) to read within WITHIN seconds."""
        try:
            return bool(select.select([self.src], [], [], max(0.0, within))[0])
        except (OSError, ValueError):  # (not selectable: read it as before)
            return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._copy, name="mcptrace-view-spool", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        try:
            while chunk := self._read(CHUNK):
                self._write(chunk)
        except OSError as exc:  # (a stream that failed mid-way: what was copied stands)
            self.error = exc
        finally:
            self._ended()

    def _read(self, n: int) -> bytes:
        while True:
            try:
                return os.read(self.src, n)
            except InterruptedError:
                continue

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._out, view) :]
        self.copied += len(data)

    def _ended(self) -> None:
        if not self.done.is_set():
            for fd in (self.src, self._out):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.done.set()

    def remove(self) -> None:
        try:
            os.unlink(self.path)
        except OSError:
            pass


def spool(path: str) -> Spool:
    """Start copying the stream PATH (`-`: standard input) into a temporary file; its head is copied
    when this returns. Raises tracer.cli.UsageError for a stream that cannot be read or is empty."""
    from tracer.cli import UsageError

    name = "standard input" if path == "-" else path
    try:
        src = os.dup(0) if path == "-" else os.open(path, os.O_RDONLY)
    except OSError as exc:
        raise UsageError(f"{name}: {exc.strerror or exc}") from None
    s = Spool(src, name)
    try:
        more = s.read_head()
    except OSError as exc:
        s._ended()
        s.remove()
        raise UsageError(f"{name}: {exc.strerror or exc}") from None
    if not s.copied:
        s.remove()
        raise UsageError(f"{name}: empty input, nothing to view")
    if more:
        s.start()
    return s


def keys_from_terminal() -> None:
    """The viewer's standard input was the stream: its keys come from the controlling terminal."""
    from tracer.cli import UsageError

    try:
        tty = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        raise UsageError(
            "the viewer needs a terminal for its keys (standard input is the stream); for a report "
            "on stdout use `mcptrace lint -`"
        ) from None
    os.dup2(tty, 0)
    os.close(tty)


def _end_by(signum: int, s: Spool) -> None:
    from tracer import temps

    s.remove()
    temps.remove_all()  # (and the viewer's conversion and analysis files, tracer.temps)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def run(args) -> int:
    """`mcptrace view` on a stream (is_stream): spool it, judge it as a file, view it following."""
    import argparse

    from tracer.cli import UsageError
    from tracer.cli.inputs import register_optional_inputs
    from tracer.cli.view import _check_input, check_terminal, start_early

    register_optional_inputs()
    s = spool(args.file)
    # ended by a signal (its terminal closed, a kill) rather than by q, the viewer still removes the
    # spool: the default action alone left it in $TMPDIR (a never-ending pipe's, growing until its
    # writer stopped). Then the signal's own action: raising SystemExit inside the viewer's event
    # loop instead printed a traceback on the way out.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: _end_by(signum, s))
    try:
        try:
            fmt = _check_input(s.path, argparse.Namespace(follow=False, input_format=args.input_format))
        except UsageError as exc:  # (named as the user named it, not by the temporary file)
            raise UsageError(str(exc).replace(s.path, s.name)) from None
        if fmt in READ_WHOLE and not s.done.is_set():
            sys.stderr.write(f"mcptrace: reading {s.name} to its end first (a {fmt} input is read whole)\n")
            s.done.wait()
            start_early(s.path, fmt)
        if args.file == "-":
            keys_from_terminal()
        check_terminal()
        from ui.app import McpTraceApp

        follow = fmt not in READ_WHOLE and not s.done.is_set()
        app = McpTraceApp(s.path, follow=follow, fmt=args.input_format)
        app.stream_ended = s.done
        app.run()
        for note in app.exit_notes:  # (a flow stream ending inside a flow: never shown)
            if app.torn_end is not None and s.done.is_set():  # (the stream ended: its writer stopped)
                flow, written = app.torn_end
                note = f"{s.name} ended inside flow {flow:,} ({written:,} bytes of it): a flow cut short, never shown"
            sys.stderr.write(f"mcptrace: {note.replace(os.path.basename(s.path), s.name)}\n")
    finally:
        s.remove()
    if s.error is not None:
        sys.stderr.write(
            f"mcptrace: {s.name} failed after {s.copied:,} bytes: {s.error.strerror or s.error}\n"
        )
    return 0
