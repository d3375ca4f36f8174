"""A server command line with an argument that is not UTF-8 (a Latin-1 file name in a host's config)
starts through the tee as it would without it: Python hands the argument over surrogate-escaped and
the capture header used to refuse it, so the tee stopped with "internal error" (exit 70) before the
server ever started, and the host lost its server."""

from __future__ import annotations

import json
import subprocess
import sys

BOUND_S = 60


def test_an_argument_that_is_not_utf8_reaches_the_server_and_the_capture_starts(tmp_path):
    cap = tmp_path / "cap.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "tracer", "stdio", "-q", "-o", str(cap), "--", "/bin/echo", b"caf\xe9"],
        input=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        capture_output=True,
        timeout=BOUND_S,
    )
    assert run.returncode == 0, run.stderr
    assert b"internal error" not in run.stderr
    assert run.stdout == b"caf\xe9\n"  # the argument's bytes, unchanged
    header = json.loads(cap.read_bytes().splitlines()[0])
    assert header["type"] == "header" and header["command"] == ["/bin/echo", "caf\\udce9"]
