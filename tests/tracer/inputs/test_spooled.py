"""Closing a view of a HAR while its background conversion still reports (tracer.inputs.spooled):
the thread that watches the converting process owns its pipes, so closing waits for it instead of
closing them under it (a watcher descheduled on a busy machine used to read a closed pipe, an
unhandled error in a thread that failed whichever test was running)."""

from __future__ import annotations

import threading

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
