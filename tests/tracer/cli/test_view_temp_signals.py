"""A viewer of a HAR (converted to a temporary capture, `mcptrace-view-*.jsonl`, and analysed in a
folder of the same name) leaves nothing in $TMPDIR however it ends: by q, and by a signal, SIGTERM
(a `kill`), SIGHUP (its terminal closed) or SIGINT, which used to leave the conversion behind (the
default action of the first two runs no cleanup). Run as a user runs it: a real terminal (a pty)."""

from __future__ import annotations

import json
import os
import signal

import pytest

from tests.tracer.cli.test_view_pipe import ANALYSED, Screen
from tests.tracer.cli.test_view_pipe_signals import _exited
from tests.tracer.inputs.test_har_import import _session, har


def _temporaries(tmp_path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("mcptrace-"))


def _viewing(tmp_path) -> Screen:
    path = tmp_path / "session.har"
    path.write_text(json.dumps(har(_session())))
    screen = Screen([str(path)], tmp_path)
    screen.wait_for(rb"tools/list")
    screen.wait_for(ANALYSED)
    kept = _temporaries(tmp_path)
    assert any(n.endswith(".jsonl") for n in kept), kept  # (the conversion, while the viewer runs)
    return screen


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_har_viewer_ended_by_a_signal_leaves_no_temporary_file(tmp_path, how):
    screen = _viewing(tmp_path)
    sig = getattr(signal, how)
    os.kill(screen.pid, sig)
    status = _exited(screen.pid, screen)
    os.close(screen.master)
    assert _temporaries(tmp_path) == []
    if sig != signal.SIGINT:  # (ended by that signal, as before; SIGINT is a KeyboardInterrupt)
        assert os.waitstatus_to_exitcode(status) == -sig
    assert b"Traceback" not in screen.out


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_har_viewer_quit_with_q_leaves_no_temporary_file(tmp_path):
    screen = _viewing(tmp_path)
    assert screen.quit() == 0
    assert _temporaries(tmp_path) == []
