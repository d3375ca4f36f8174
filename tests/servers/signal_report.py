"""Reports on stderr the signals it receives, and exits 0 on SIGINT/SIGTERM (to show forwarding)."""

import os
import signal
import sys

from _common import err


def on_signal(num, frame):
    err(b"got %s\n" % signal.Signals(num).name.encode())
    sys.stderr.flush()
    os._exit(0 if num == signal.SIGTERM else 130)


signal.signal(signal.SIGINT, on_signal)
signal.signal(signal.SIGTERM, on_signal)
err(b"ready\n")
while True:
    signal.pause()
