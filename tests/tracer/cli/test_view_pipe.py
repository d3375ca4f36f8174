"""`cmd | mcptrace view -` and `mcptrace view <(cmd)`: the stream is spooled to a temporary file
the viewer follows (a HAR: read to its end first), its keys come from the terminal, and the file is
gone when the viewer exits. Run as a user runs it: a real terminal (a pty), a real pipe or FIFO."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.sdk_peers import CAPTURES, REPO

BOUND_S = 120
CAPTURE = CAPTURES / "sdk-stdio-legacy.jsonl"
CSI = re.compile(rb"\x1b\[[0-9;?<>=$]*[a-zA-Z~]")


class Screen:
    """`mcptrace view ARGS` in a terminal of its own (40x120), standard input from STDIN_FD."""

    def __init__(self, args: list[str], tmp: Path, stdin_fd: int | None = None):
        pid, self.master = pty.fork()
        if pid == 0:  # (the child: never returns)
            try:
                if stdin_fd is not None:
                    os.dup2(stdin_fd, 0)
                os.chdir(REPO)
                env = {**os.environ, "TERM": "xterm-256color", "TMPDIR": str(tmp)}
                env["XDG_STATE_HOME"] = str(tmp / "state")
                os.execve(sys.executable, [sys.executable, "-m", "tracer", "view", *args], env)
            finally:
                os._exit(127)
        self.pid = pid
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.out = b""

    def text(self) -> bytes:
        return CSI.sub(b"", self.out)

    def wait_for(self, pattern: bytes) -> re.Match:
        deadline = time.monotonic() + BOUND_S
        while (m := re.search(pattern, self.text())) is None:
            left = deadline - time.monotonic()
            assert left > 0, f"{pattern!r} not on screen; last: {self.text()[-2000:]!r}"
            if select.select([self.master], [], [], min(left, 1.0))[0]:
                try:
                    chunk = os.read(self.master, 1 << 16)
                except OSError:  # (EIO: the viewer exited)
                    chunk = b""
                assert chunk, f"the viewer exited before {pattern!r}: {self.text()[-2000:]!r}"
                self.out += chunk
        return m

    def quit(self) -> int:
        os.write(self.master, b"q")
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline:
            if select.select([self.master], [], [], 1.0)[0]:
                try:
                    chunk = os.read(self.master, 1 << 16)
                except OSError:
                    break
                if not chunk:
                    break
                self.out += chunk
        _, status = os.waitpid(self.pid, 0)
        os.close(self.master)
        return os.waitstatus_to_exitcode(status)


ANALYSED = rb"([0-9,]+) rows\s+analysed"


def _rows_of_the_file(tmp_path) -> bytes:
    screen = Screen([str(CAPTURE)], tmp_path)
    rows = screen.wait_for(ANALYSED).group(1)
    assert screen.quit() == 0
    return rows


def _spools(tmp_path) -> list[str]:
    return [p.name for p in tmp_path.iterdir() if p.name.startswith("mcptrace-stream-")]


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_capture_piped_into_view_dash_is_followed_as_it_comes_and_its_spool_removed(tmp_path):
    expected = _rows_of_the_file(tmp_path)  # (every row the file itself shows)
    lines = CAPTURE.read_bytes().splitlines(keepends=True)
    r, w = os.pipe()
    screen = Screen(["-"], tmp_path, stdin_fd=r)
    os.close(r)
    os.write(w, b"".join(lines[:5]))  # the stream has begun: its first rows are on screen
    screen.wait_for(rb"initialize")
    assert _spools(tmp_path)  # (the stream is kept in a file of its own while the viewer runs)
    os.write(w, b"".join(lines[5:]))  # then the rest comes, and the stream ends
    os.close(w)
    # (the first five rows may have been counted "analysed" already: wait for the whole stream's)
    screen.wait_for(re.escape(expected) + rb" rows\s+analysed")
    assert screen.quit() == 0
    assert _spools(tmp_path) == []


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_har_from_a_fifo_is_read_to_its_end_then_viewed(tmp_path):
    import json

    from tests.tracer.inputs.test_har_import import _session, har

    fifo = tmp_path / "stream.har"
    os.mkfifo(fifo)
    screen = Screen([str(fifo)], tmp_path)
    with open(fifo, "wb") as fh:  # (opens once the viewer opened its end)
        doc = json.dumps(har(_session()), indent=2).encode()
        fh.write(doc[:100])
        fh.flush()
        screen.wait_for(rb"reading .*stream\.har to its end first")
        fh.write(doc[100:])
    screen.wait_for(rb"tools/list")
    screen.wait_for(ANALYSED)
    assert screen.quit() == 0
    assert _spools(tmp_path) == []


def _piped(data: bytes, tmp_path) -> subprocess.CompletedProcess:
    # no terminal at all (a CI job): start_new_session leaves the viewer without a /dev/tty
    return subprocess.run(
        [sys.executable, "-m", "tracer", "view", "-"],
        input=data,
        capture_output=True,
        timeout=BOUND_S,
        cwd=REPO,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", b"standard input: empty input"),
        (bytes(range(256)) * 20, b"standard input: not a recognised MCP capture"),
        (CAPTURE.read_bytes(), b"the viewer needs a terminal for its keys"),
    ],
    ids=["empty", "garbage", "no terminal"],
)
def test_a_pipe_the_viewer_cannot_show_is_one_line_and_exit_2(tmp_path, data, why):
    p = _piped(data, tmp_path)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count(b"\n") == 1 and why in p.stderr and b"Traceback" not in p.stderr
    assert _spools(tmp_path) == []
