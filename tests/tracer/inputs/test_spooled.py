"""Closing a view of a HAR while its background conversion still reports (tracer.inputs.spooled):
the thread that watches the converting process owns its pipes, so closing waits for it instead of
closing them under it (a watcher descheduled on a busy machine used to read a closed pipe, an
unhandled error in a thread that failed whichever test was running)."""

from __future__ import annotations

import threading
from pathlib import Path

from tests.gencapture import generate
from tests.geninputs import generate as generate_input
from tracer.inputs.spooled import SpoolIndex
from tracer.view.viewdata import open_view

BOUND_S = 120  # generous: the machine is shared
HELD_S = 3  # how long the watcher is kept from running while the view closes


def test_closing_a_har_view_while_its_watcher_is_held_leaves_no_error_in_a_thread(tmp_path, monkeypatch):
    errors: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    capture = tmp_path / "big.jsonl"
    generate(capture, 12_000, 120)
    path = tmp_path / "big.har"
    generate_input(str(capture), path, "har")
    view = open_view(str(path))
    index = view.index
    assert isinstance(index, SpoolIndex)
    index.update(max_bytes=index.FIRST_STEP)  # the first screenful: more reports are on their way
    closer = threading.Thread(target=view.close)
    with index._cond:  # the watcher stops at its next report, as a descheduled thread would
        # the conversion ends meanwhile (its reports wait in the pipe), then the view closes
        assert index.proc.wait(timeout=BOUND_S) == 0
        closer.start()
        closer.join(HELD_S)
        closed_under_it = not closer.is_alive()
    closer.join(BOUND_S)
    index._thread.join(BOUND_S)
    assert not closer.is_alive() and not index._thread.is_alive()
    assert errors == [] and not closed_under_it, "closing waited for the watcher"
    assert index.proc.stdout.closed and index.proc.stderr.closed


def test_a_conversion_started_early_that_no_viewer_takes_is_stopped_and_removed_at_exit(tmp_path):
    # (`mcptrace view` starts it before the screen opens; a viewer that never opens the file
    # must not leave a converter running or a temporary capture behind)
    import os
    import subprocess
    import sys

    capture = tmp_path / "big.jsonl"
    generate(capture, 12_000, 120)
    path = tmp_path / "big.har"
    generate_input(str(capture), path, "har")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    code = (
        "import sys\n"
        "from tracer.inputs import spooled\n"
        "spooled.start_early(sys.argv[1], 'har')\n"
        "(capture, _, proc), = spooled._early.values()\n"
        "print(proc.pid, capture, flush=True)\n"
    )
    env = {**os.environ, "TMPDIR": str(scratch)}
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, timeout=BOUND_S
    )
    assert out.returncode == 0, out.stderr
    pid, early_capture = out.stdout.split()
    assert early_capture.startswith(str(scratch))
    assert list(scratch.iterdir()) == [], "the temporary capture is removed"
    status = Path(f"/proc/{pid}/status")
    assert not status.exists() or "zombie" in status.read_text().lower(), "the converter was stopped"


def test_a_flow_files_converter_reads_its_end_ahead_for_g_so_the_viewer_does_not(tmp_path, monkeypatch):
    # (G on a .mitm used to import mitmproxy into the viewer to read the last flows: 1-3 s)
    import os
    import time
    from dataclasses import replace

    from addons.mitm_stream import read_tail
    from tracer.cli.inputs import register_optional_inputs
    from tracer.inputs.spooled import TAIL_SUFFIX, prepared_tail

    register_optional_inputs()
    capture = tmp_path / "c.jsonl"
    generate(capture, 1_200, 120)
    path = tmp_path / "flows.mitm"
    generate_input(str(capture), path, "mitm")
    view = open_view(str(path))
    try:
        index = view.index
        assert isinstance(index, SpoolIndex)
        index.update(max_bytes=index.FIRST_STEP)
        deadline = time.monotonic() + BOUND_S
        while prepared_tail(index.path) is None and not index.complete:
            assert time.monotonic() < deadline, "the converter to read the end ahead"
            time.sleep(0.02)
        expected = read_tail(str(path))
        assert expected and prepared_tail(index.path) == expected
        assert os.stat(index.path + TAIL_SUFFIX).st_mode & 0o777 == 0o600
        if index.complete:  # (a fast machine: the conversion ended first, so there is nothing ahead)
            return
        monkeypatch.setattr(index, "fmt", replace(index.fmt, tail=lambda source: 1 / 0))
        assert view.read_ahead() or index.complete
        assert view.tail is None or view.tail.lines == expected
    finally:
        view.close()
    assert not os.path.exists(index.path + TAIL_SUFFIX), "removed with the view"
