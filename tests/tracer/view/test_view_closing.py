"""Stopping the viewer's background analysis (tracer.view.annotations) while the thread that reads
its reports is between two of them: that thread owns the pipe, so stopping waits for it instead of
closing the pipe under it (the reader then read a closed file, an unhandled error in a thread that
failed whichever test was running)."""

from __future__ import annotations

import threading
from pathlib import Path

from tracer.view.annotations import Annotations

DEMO = Path(__file__).resolve().parents[3] / "fixtures" / "captures" / "demo.jsonl"
BOUND_S = 120  # generous: the machine is shared
HELD_S = 3  # how long the reader is kept from running while the analysis stops


def test_stopping_the_analysis_while_its_reader_is_held_leaves_no_error_in_a_thread(monkeypatch):
    errors: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    ann = Annotations(str(DEMO))
    stopper = threading.Thread(target=ann.stop)
    with ann.cond:  # the reader stops at its first report, as a descheduled thread would
        ann.start()
        # the analysis ends meanwhile (its reports wait in the pipe), then the viewer stops it
        assert ann.proc.wait(timeout=BOUND_S) == 0
        stopper.start()
        stopper.join(HELD_S)
        closed_under_it = not stopper.is_alive()
    stopper.join(BOUND_S)
    ann._thread.join(BOUND_S)
    assert not stopper.is_alive() and not ann._thread.is_alive()
    assert errors == [] and not closed_under_it, "stopping waited for the reader"
    assert ann.proc.stdout.closed and ann.done
