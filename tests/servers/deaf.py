"""Neither reads stdin nor writes stdout: sleeps until a signal ends it (so it never sees the tee
go away by itself). Prints "ready PID" on stderr once it runs."""

import os
import time

from _common import err

err(f"ready {os.getpid()}\n".encode())
while True:
    time.sleep(3600)
