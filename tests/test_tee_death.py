"""The server dies with the tee, even when the tee is SIGKILLed and the server ignores its pipes."""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess

from tests.test_tee_lifecycle import read_until
from tests.test_tee_servers import TEE, server

BOUND_S = 60


def test_a_server_that_ignores_its_pipes_ends_when_the_tee_is_killed_with_sigkill(tmp_path):
    with subprocess.Popen([*TEE, "-o", str(tmp_path / "cap.jsonl"), "--", *server("deaf")], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as tee:
        pid = int(re.search(rb"ready (\d+)", read_until(tee, tee.stderr, b"\n")).group(1))
        watch = os.pidfd_open(pid)  # readable once the server has exited (no polling, no sleeps)
        try:
            tee.kill()
            tee.wait(BOUND_S)
            ended, _, _ = select.select([watch], [], [], BOUND_S)
            if not ended:
                os.kill(pid, signal.SIGKILL)  # do not leave it behind
            assert ended, "the server outlived the SIGKILLed tee"
        finally:
            os.close(watch)
