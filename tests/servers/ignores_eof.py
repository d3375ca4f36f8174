"""Keeps running after stdin reaches EOF; with --ignore-term it also ignores SIGTERM (so only
SIGKILL ends it). Prints "ready" on stderr once its handlers are set."""

import signal
import sys
import time

from _common import answer, err, out, requests

if "--ignore-term" in sys.argv:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
err(b"ready\n")
for req in requests():
    out(answer(req))
while True:  # stdin is closed: a well-behaved server would exit now
    time.sleep(3600)
