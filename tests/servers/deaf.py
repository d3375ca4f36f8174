"""Neither reads stdin nor writes stdout: sleeps until a signal ends it (so it never sees the tee
go away by itself); with --ignore-term it also ignores SIGTERM. Prints "ready PID" on stderr once
it runs."""

import os
import signal
import sys
import time

from _common import err

if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
err(f"ready {os.getpid()}\n".encode())
while True:
    time.sleep(3600)
