"""`mcptrace stdio` leaves its own process by os._exit once the session is over (tearing an
interpreter down costs a host waiting for its server 50-140 ms), but a Python program that calls
`tracer.cli.main(["stdio", ...])` gets control back: its code after the call, its atexit handlers
and its buffered writes are not cut off under it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BOUND_S = 60
REPO = Path(__file__).resolve().parents[3]

CALLER = """
import atexit, sys
from tracer.cli import main
log = open(sys.argv[1], "w")
log.write("written before the tee\\n")  # (still in the file's buffer while the tee runs)
atexit.register(lambda: sys.stderr.write("atexit ran\\n"))
code = main(["stdio", "-q", "-o", sys.argv[2], "--", "true"])
sys.stderr.write(f"main returned {code}\\n")
log.write("after\\n")
log.close()
"""


def test_a_python_caller_of_the_stdio_command_gets_control_back_with_its_writes_kept(tmp_path):
    log, cap = tmp_path / "log.txt", tmp_path / "cap.jsonl"
    run = subprocess.run(
        [sys.executable, "-c", CALLER, str(log), str(cap)],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=BOUND_S,
    )
    assert run.returncode == 0, run.stderr
    assert "main returned 0" in run.stderr and "atexit ran" in run.stderr, run.stderr
    assert log.read_text() == "written before the tee\nafter\n"
    assert cap.read_bytes().startswith(b'{"type":"header"')


def test_the_command_in_its_own_process_still_ends_with_the_servers_exit_code(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "tracer", "stdio", "-q", "-o", str(tmp_path / "c.jsonl"), "--", "false"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=BOUND_S,
    )
    assert run.returncode == 1, run.stderr
