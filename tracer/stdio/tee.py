"""The stdio tee: run an MCP server as a child, relay its pipes byte for byte, capture a copy.

    host stdin  ──> [relay] ──> server stdin          every chunk: handed to the capture
    host stdout <── [relay] <── server stdout         (tracer.stdio.capture / .process) in order,
    host stderr <── [relay] <── server stderr         never decoded, never split

The relay works on raw file descriptors: no line splitting, no decoding, no buffering beyond one
chunk, so it cannot alter or reorder a byte. When all four ends are pipes (Linux; what a host that
spawns us gives) one thread relays both directions (`tracer.stdio.loop`: tee(2) forwards, the
capture's copy is moved after, a short spin saves the wake-ups). Otherwise a thread per direction
relays zero-copy where its two ends allow (`tracer.stdio.splice`) or by `pump` (`os.read` of up to
1 MiB, `os.write` of all of it). The server's stderr always has its own thread. The capture holds
the relay up only when a whole budget of copies waits for it, and only while it keeps taking them
(see `tracer.stdio.loop`, `tracer.stdio.process`).

Life cycle: EOF on our stdin closes the server's stdin; if the server has not exited after a grace
period it gets SIGTERM, then SIGKILL. SIGINT, SIGTERM and SIGHUP sent to us are forwarded to the
server's process group (it runs in its own group, so a terminal's Ctrl-C reaches it once, through
us). Our exit code is the server's (128+N when a signal N ended it).
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass

from tracer.capture import CaptureWriter
from tracer.stdio import loop as relay_loop
from tracer.stdio import splice as tee_splice
from tracer.stdio.capture import STDERR, STDIN, STDOUT, CaptureSink
from tracer.stdio.notes import Notes, write_all

CHUNK = 1024 * 1024
PIPE_SIZE = 1024 * 1024  # bigger kernel pipe buffers: fewer wake-ups under load (best effort)
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
DRAIN_TIMEOUT = 5.0  # after the server exits, how long its pipes may stay open (held by grandchildren)


class SpawnError(Exception):
    """The server command could not be started. `code` is the shell's convention: 127 not found,
    126 found but not executable."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


@dataclass
class TeeResult:
    exit_code: int
    signal: str | None = None  # the signal that ended the server, if any


def exit_code_of(returncode: int) -> int:
    """The shell's convention: a child killed by signal N exits with 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


_PR_SET_PDEATHSIG = 1
DEATH_SIGNAL = (
    signal.SIGTERM
)  # what the server gets when the tee dies (SIGTERM: a wrapper like npx passes it on)


def _death_signal_setter():
    """A preexec function that ties the server's life to the tee's (Linux `PR_SET_PDEATHSIG`), or None.

    The server runs in its own process group, so nothing else ends it when the tee is SIGKILLed: a
    server that neither reads stdin nor writes stdout would never notice and run forever. The kernel
    sends the signal when the *thread* that forked the child ends: `spawn` runs on the main thread,
    which lives as long as the tee."""
    if not hasattr(os, "sched_getaffinity"):  # not Linux: no prctl
        return None
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before the fork, not in the child
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(DEATH_SIGNAL), 0, 0, 0)
        if os.getppid() != parent:  # the tee died before prctl took effect: the signal never comes
            os.kill(os.getpid(), DEATH_SIGNAL)

    return preexec


def spawn(command: list[str]) -> subprocess.Popen:
    """Start the server with three pipes, in its own process group, dying with the tee (Linux).
    Raises SpawnError."""
    try:
        child = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            process_group=0,
            preexec_fn=_death_signal_setter(),
        )
    except FileNotFoundError:
        raise SpawnError(f"cannot start {command[0]!r}: command not found", 127) from None
    except PermissionError:
        raise SpawnError(
            f"cannot start {command[0]!r}: permission denied (not an executable file?)", 126
        ) from None
    except OSError as exc:
        why = "not an executable format" if exc.errno == errno.ENOEXEC else (exc.strerror or str(exc))
        raise SpawnError(f"cannot start {command[0]!r}: {why}", 126) from None
    for f in (child.stdin, child.stdout, child.stderr):
        try:
            fcntl.fcntl(f.fileno(), _F_SETPIPE_SZ, PIPE_SIZE)
        except OSError:
            pass  # capped by /proc/sys/fs/pipe-max-size: the default size works too
    return child


def relay_stream(
    src: int, dst: int, stream: int, sink: CaptureSink, *, on_broken=None, zero_copy: bool = True
) -> int:
    """Relay one direction by the fastest way its two ends allow (same contract as `pump`)."""
    if zero_copy and tee_splice.applies(src, dst):
        try:
            return tee_splice.pump_spliced(src, dst, stream, sink, on_broken=on_broken)
        except tee_splice.SpliceFailed as failed:  # splice(2) refused dst: forward by hand from here
            first = tee_splice.read_exactly(src, failed.pending)  # (already tee'd to the capture)
            try:
                write_all(dst, first)
            except OSError:
                if on_broken is not None:
                    on_broken(0)
                return len(first) + pump(src, -1, stream, sink, relay=lambda data: None)
            return len(first) + pump(src, dst, stream, sink, on_broken=on_broken, start=len(first))
    return pump(src, dst, stream, sink, on_broken=on_broken)


def pump(
    src: int,
    dst: int,
    stream: int,
    sink: CaptureSink,
    *,
    relay=None,
    on_broken=None,
    read=os.read,
    chunk: int = CHUNK,
    start: int = 0,
) -> int:
    """Copy `src` to `dst` until EOF, offering each chunk to the capture first. Returns the number
    of bytes read. When `dst` breaks (the reader went away), keep reading and capturing so the
    writer on the other side never blocks; `on_broken(offset)` is told once."""
    forward = relay if relay is not None else (lambda data: write_all(dst, data))
    offer = sink.offer
    now = time.time_ns
    total = start
    dst_ok = True
    while True:
        try:
            data = read(src, chunk)
        except OSError:  # EIO and the like: the stream is over
            data = b""
        if not data:
            break
        offer(stream, now(), data)
        if dst_ok:
            try:
                forward(data)
            except OSError:
                dst_ok = False
                if on_broken is not None:
                    on_broken(total)
        total += len(data)
    sink.eof(stream)
    return total - start


class Tee:
    """One tee session: a spawned server, three relays, a capture sink, notes on stderr."""

    def __init__(
        self,
        child: subprocess.Popen,
        sink: CaptureSink,
        notes: Notes,
        *,
        in_fd: int = 0,
        out_fd: int = 1,
        grace: float = 3.0,
        kill_after: float = 3.0,
        zero_copy: bool = True,
        room_wait_ns: int = relay_loop.ROOM_WAIT_NS,
    ):
        self.child = child
        self.room_wait_ns = room_wait_ns  # how long the loop waits for a capture a budget behind
        self.sink = sink
        self.notes = notes
        self.in_fd = in_fd
        self.out_fd = out_fd
        self.grace = grace
        self.kill_after = kill_after
        self.zero_copy = zero_copy  # False: always read/write (tests compare both paths)
        self.exited = threading.Event()
        self.server_stopped_reading = False  # its stdin broke: host bytes after that were not delivered
        self.stdout_done = threading.Event()  # the server's stdout reached EOF and was passed on
        self.caught_up = threading.Event()  # no copy waits in the relay for the capture (relay_loop)
        self.caught_up.set()
        self._threads: list[threading.Thread] = []
        # held while a signal is sent and recorded: the `exit` record waits for a `terminate` whose
        # signal ended the server (else the session could close before that record was written)
        self._signalling = threading.Lock()

    def run(self) -> TeeResult:
        child, sink = self.child, self.sink
        sink.event("started", pid=child.pid)
        previous = self._install_signal_handlers()
        pairs = [(self.in_fd, child.stdin.fileno()), (child.stdout.fileno(), self.out_fd)]
        if self.zero_copy and relay_loop.applies(pairs):
            self._thread(self._both_relay, "loop")  # the usual case: a host spawned us with pipes
        else:
            self._thread(self._stdin_relay, "stdin")
            self._thread(self._stdout_relay, "stdout")
        err = self._thread(
            lambda: pump(
                child.stderr.fileno(),
                2,
                STDERR,
                sink,
                relay=self.notes.relay,
                on_broken=lambda at: sink.event("host-stderr-closed", offset=at),
            ),
            "stderr",
        )
        try:
            returncode = child.wait()
        finally:
            self.exited.set()
            self._restore_signal_handlers(previous)
        with self._signalling:
            pass  # (a terminate being recorded is in the capture before the exit)
        deadline = time.monotonic() + DRAIN_TIMEOUT
        self.stdout_done.wait(DRAIN_TIMEOUT)
        self.caught_up.wait(max(0.0, deadline - time.monotonic()))  # copies the relay still holds
        err.join(max(0.0, deadline - time.monotonic()))
        if not self.stdout_done.is_set() or err.is_alive():
            sink.event(
                "pipes-held-open",
                note="the server exited but a process it started still holds "
                "its stdout/stderr; mcptrace stops relaying them",
            )
        sig = signal_name(-returncode) if returncode < 0 else None
        sink.event("exit", code=exit_code_of(returncode), **({"signal": sig} if sig else {}))
        return TeeResult(exit_code_of(returncode), sig)

    def _thread(self, target, name: str) -> threading.Thread:
        t = threading.Thread(target=target, name=f"mcptrace-relay-{name}", daemon=True)
        t.start()
        self._threads.append(t)
        return t

    def _both_relay(self) -> None:
        child, sink = self.child, self.sink
        # The host's pipes as big as the server's: under a flood each chunk then carries up to 1 MiB,
        # not 64 KiB, and the per-chunk work of the relay and of the capture shrinks 16-fold.
        for fd in (self.in_fd, self.out_fd):
            try:
                fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_SIZE)
            except OSError:
                pass  # (capped by /proc/sys/fs/pipe-max-size, or not ours to resize: as it is)
        relay_loop.relay_ways(
            [
                relay_loop.Way(
                    self.in_fd,
                    child.stdin.fileno(),
                    STDIN,
                    on_end=self._stdin_ended,
                    on_broken=self._server_stdin_closed,
                ),
                relay_loop.Way(
                    child.stdout.fileno(),
                    self.out_fd,
                    STDOUT,
                    on_end=self._stdout_ended,
                    on_broken=lambda at: sink.event("host-stdout-closed", offset=at),
                ),
            ],
            sink,
            caught_up=self.caught_up,
            room_wait_ns=self.room_wait_ns,
        )

    def _stdout_relay(self) -> None:
        sink = self.sink
        relay_stream(
            self.child.stdout.fileno(),
            self.out_fd,
            STDOUT,
            sink,
            zero_copy=self.zero_copy,
            on_broken=lambda at: sink.event("host-stdout-closed", offset=at),
        )
        self._stdout_ended()

    def _stdout_ended(self) -> None:
        # The server closed its stdout: the host sees EOF now, not when the capture is done.
        try:
            os.close(self.out_fd)
        except OSError:
            pass
        self.stdout_done.set()

    def _stdin_relay(self) -> None:
        relay_stream(
            self.in_fd,
            self.child.stdin.fileno(),
            STDIN,
            self.sink,
            zero_copy=self.zero_copy,
            on_broken=self._server_stdin_closed,
        )
        self._stdin_ended(escalate_here=True)

    def _server_stdin_closed(self, at: int) -> None:
        self.server_stopped_reading = True
        self.sink.event(
            "server-stdin-closed",
            offset=at,
            note="the server stopped reading; later bytes were not delivered",
        )

    def _stdin_ended(self, escalate_here: bool = False) -> None:
        # EOF from the host: record it first (so the capture keeps cause before effect: the server
        # may exit the moment its stdin closes), pass it on, then give the server a grace period
        # (in a thread of its own when called from the loop, which relays the other way meanwhile).
        self.sink.event("stdin-eof")
        try:
            self.child.stdin.close()
        except OSError:
            pass
        if self.exited.is_set():
            return
        if escalate_here:
            self._escalate()
        else:
            self._thread(self._escalate, "escalate")

    def _escalate(self) -> None:
        started = time.monotonic()
        for sig, wait in ((signal.SIGTERM, self.grace), (signal.SIGKILL, self.kill_after)):
            if self.exited.wait(wait):
                return
            after_ms = round((time.monotonic() - started) * 1000)
            with self._signalling:
                sent = self._signal_group(sig)
                if sent:
                    self.sink.event(
                        "terminate",
                        signal=sig.name,
                        after_ms=after_ms,
                        reason="the server had not exited after its stdin reached EOF",
                    )
            if sent:
                self.notes.say(
                    f"the server did not exit {after_ms / 1000:.1f} s after its stdin closed; sent {sig.name}"
                )

    def _signal_group(self, sig: int) -> bool:
        if self.exited.is_set() or self.child.returncode is not None:
            return False
        try:
            os.killpg(self.child.pid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:  # a setuid child, or it left its group: at least the child itself
            try:
                os.kill(self.child.pid, sig)
            except OSError:
                return False
        return True

    # -- signals -------------------------------------------------------------------------------

    def _on_signal(self, signum: int, frame) -> None:
        if self._signal_group(signum):
            self.sink.event("signal", signal=signal_name(signum), forwarded=True)

    def _install_signal_handlers(self) -> dict:
        if threading.current_thread() is not threading.main_thread():
            return {}
        previous = {}
        for sig in FORWARDED_SIGNALS:
            try:
                previous[sig] = signal.signal(sig, self._on_signal)
            except (OSError, ValueError):
                pass
        return previous

    @staticmethod
    def _restore_signal_handlers(previous: dict) -> None:
        for sig, handler in previous.items():
            try:
                signal.signal(sig, handler)
            except (OSError, ValueError, TypeError):
                pass


def open_capture(
    path: str, command: list[str], label: str, *, redact: bool, overwrite: bool = False
) -> CaptureWriter:
    """Open the capture file (before the server starts: an unwritable path fails first); an
    existing capture gets this session appended unless `overwrite`."""
    from tracer.capture import header_record
    from tracer.redact import process_secrets, redact_argv

    shown = redact_argv(command) if redact else list(command)
    writer = CaptureWriter(
        path, header_record("stdio", command=shown, label=label), redact=redact, overwrite=overwrite
    )
    if redact:  # (the server inherits this environment: its keys are what it may print)
        writer.stderr_secrets = process_secrets(command, os.environ)
    return writer
