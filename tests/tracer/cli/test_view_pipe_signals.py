"""A viewer of a stream that is ended by a signal, not by q (its terminal closed: SIGHUP; a
`kill`: SIGTERM), still removes the stream's spool: a pipe that never ends (`kubectl logs -f`) is
otherwise left in $TMPDIR, growing until the writer stops, and stays there."""

from __future__ import annotations

import os
import select
import signal
import time

import pytest

from tests.tracer.cli.test_view_pipe import BOUND_S, CAPTURE, Screen, _spools


def _exited(pid: int, screen: Screen) -> int:
    """The viewer's wait status, once it exited (its terminal's output read meanwhile)."""
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if select.select([screen.master], [], [], 0.05)[0]:
            try:
                screen.out += os.read(screen.master, 1 << 16)
            except OSError:  # (EIO: its side of the terminal is closed)
                pass
    os.kill(pid, signal.SIGKILL)
    raise AssertionError("the viewer did not exit")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP"])
def test_a_stream_viewer_ended_by_a_signal_removes_its_spool(tmp_path, how):
    lines = CAPTURE.read_bytes().splitlines(keepends=True)
    r, w = os.pipe()
    screen = Screen(["-"], tmp_path, stdin_fd=r)
    os.close(r)
    os.write(w, b"".join(lines[:5]))  # a stream that has begun and does not end
    screen.wait_for(rb"initialize")
    assert _spools(tmp_path)
    sig = getattr(signal, how)
    os.kill(screen.pid, sig)
    status = _exited(screen.pid, screen)
    os.close(screen.master)
    os.close(w)
    assert _spools(tmp_path) == []
    assert os.waitstatus_to_exitcode(status) == -sig  # (ended by that signal, as before)
    assert b"Traceback" not in screen.out
