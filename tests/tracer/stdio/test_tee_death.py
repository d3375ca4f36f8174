"""The server dies with the tee, even when the tee is SIGKILLed and the server ignores its pipes
(and, with the capture process's help, SIGTERM too)."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
from pathlib import Path

import pytest

from tests.tracer.stdio.test_tee_lifecycle import read_until
from tests.tracer.stdio.test_tee_relay import read_records
from tests.tracer.stdio.test_tee_servers import TEE, server
from tracer.model import RecordType

BOUND_S = 60


def _wait_gone(pids: list[int]) -> list[int]:
    """Wait (bounded, on pidfds: no polling, no sleeps) until each process has exited; the ones
    still running after BOUND_S are returned (and killed, so no test leaves them behind)."""
    left = []
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            if not select.select([fd], [], [], BOUND_S)[0]:
                left.append(pid)
                os.kill(pid, signal.SIGKILL)
        finally:
            os.close(fd)
    return left


@pytest.mark.parametrize(("args", "signals"), [([], None), (["--ignore-term"], ["SIGTERM", "SIGKILL"])])
def test_a_server_that_ignores_its_pipes_ends_when_the_tee_is_killed_with_sigkill(tmp_path, args, signals):
    cap = tmp_path / "cap.jsonl"
    with subprocess.Popen(
        [*TEE, "-o", str(cap), "--", *server("deaf", *args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as tee:
        pid = int(re.search(rb"ready (\d+)", read_until(tee, tee.stderr, b"\n")).group(1))
        # the tee's other child, if any: the capture process, which outlives it to finish the capture
        children = Path(f"/proc/{tee.pid}/task/{tee.pid}/children").read_text().split()
        helpers = [int(c) for c in children if int(c) != pid]
        tee.kill()
        tee.wait(BOUND_S)
        assert _wait_gone([pid]) == [], "the server outlived the SIGKILLed tee"
        assert _wait_gone(helpers) == []
    if signals is not None and helpers:  # the capture process ended a server deaf to SIGTERM, and says so
        died = [
            r.data for r in read_records(cap) if r.type is RecordType.EVENT and r.data["event"] == "tee-died"
        ]
        assert [d["signals"] for d in died] == [signals]
