"""The tee's records keep cause before effect when a signal it sent ends the server."""

from __future__ import annotations

import os
import select
import sys
from pathlib import Path

from tests.tracer.stdio.test_tee_relay import BOUND_S, read_records
from tracer.capture import CaptureWriter, header_record
from tracer.model import RecordType
from tracer.stdio.capture import CaptureSink
from tracer.stdio.notes import Notes
from tracer.stdio.tee import Tee, spawn

ROOT = Path(__file__).resolve().parents[3]


def test_the_terminate_record_comes_before_the_exit_it_caused_however_slow_its_writing(tmp_path):
    # The escalation thread records `terminate` after its signal; the server may be gone by then
    # and the main thread record `exit` first (then the session closed without the terminate).
    # Here recording `terminate` waits until the server has surely exited: the widest that window gets.
    class SlowTerminate(CaptureSink):
        def event(self, name: str, **data) -> None:
            if name == "terminate":
                select.select([exited], [], [], BOUND_S)  # the server has exited (its pidfd is readable)
            super().event(name, **data)

    child = spawn([sys.executable, str(ROOT / "tests" / "servers" / "ignores_eof.py")])
    exited = os.pidfd_open(child.pid)
    assert child.stderr.readline() == b"ready\n"
    stdin_r, stdin_w = os.pipe()
    os.close(stdin_w)  # the host's stdin at EOF: escalation starts at once
    out_r, out_w = os.pipe()
    writer = CaptureWriter(tmp_path / "cap.jsonl", header_record("stdio"))
    sink = SlowTerminate(writer, "t")
    sink.start()
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        result = Tee(
            child,
            sink,
            Notes(devnull, quiet=True),
            in_fd=stdin_r,
            out_fd=out_w,
            grace=0.05,
            kill_after=BOUND_S,
        ).run()
    finally:
        for fd in (devnull, stdin_r, out_r, exited):
            os.close(fd)
        for f in (child.stdin, child.stdout, child.stderr):
            f.close()
    assert sink.close(BOUND_S)
    writer.close()
    names = [r.data["event"] for r in read_records(tmp_path / "cap.jsonl") if r.type is RecordType.EVENT]
    assert result.exit_code == 143
    assert names.index("terminate") < names.index("exit") == len(names) - 1
