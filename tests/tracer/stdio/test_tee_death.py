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


def test_a_host_that_kills_the_tees_process_group_leaves_the_capture_process_to_finish(tmp_path):
    # The official SDK's stdio client starts its server in a session of its own and ends it with
    # killpg: SIGTERM to the group, SIGKILL to whatever is left 2 s later. The capture process,
    # still writing a backlog on a busy machine, must not be in that group.
    from tests.tracer.stdio.test_tee_servers import request

    cap = tmp_path / "cap.jsonl"
    with subprocess.Popen(
        [*TEE, "-o", str(cap), "--", *server("echo")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as tee:
        tee.stdin.write(request(1))
        tee.stdin.flush()
        answers = [read_until(tee, tee.stdout, b"\n")]  # (both children exist now)
        children = [int(c) for c in Path(f"/proc/{tee.pid}/task/{tee.pid}/children").read_text().split()]
        tee_cmd = Path(f"/proc/{tee.pid}/cmdline").read_bytes()
        capture = [c for c in children if Path(f"/proc/{c}/cmdline").read_bytes() == tee_cmd]
        assert len(capture) == 1, children
        os.kill(capture[0], signal.SIGSTOP)  # the capture falls behind, as under load
        try:
            tee.stdin.write(request(2))
            tee.stdin.flush()
            answers.append(read_until(tee, tee.stdout, b"\n"))  # relayed while the capture waits
            os.killpg(tee.pid, signal.SIGTERM)  # as the SDK ends its server: the group, ...
            try:
                tee.wait(2)  # (the tee waits for its capture, stopped here: this runs out)
            except subprocess.TimeoutExpired:
                pass
            os.killpg(tee.pid, signal.SIGKILL)  # ... and what is left of it 2 s later
            tee.wait(BOUND_S)
        finally:
            try:
                os.kill(capture[0], signal.SIGCONT)
            except ProcessLookupError:
                pass
        assert _wait_gone(capture) == []
    messages = [r for r in read_records(cap) if r.type is RecordType.MESSAGE]
    assert [(r.dir.value, r.raw) for r in messages] == [
        ("c2s", request(1).rstrip(b"\n")),
        ("s2c", answers[0].rstrip(b"\n")),
        ("c2s", request(2).rstrip(b"\n")),
        ("s2c", answers[1].rstrip(b"\n")),
    ]
