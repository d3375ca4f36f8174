"""The viewer's temporary files, removed on every way out: `q`, an error, SIGINT, and the signals
whose default action ends the process on the spot (SIGTERM from a `kill`, SIGHUP when its terminal
closes), which run no `finally` and no atexit handler.

A temporary file (a HAR's or a flow file's conversion, `mcptrace-view-*.jsonl`, and its prepared
tail; the analysis process's folder) is registered with the call that removes it, and the helper
process writing it with it: at a signal the writers are killed first (a converter still running
would write its tail again after the removal), then every file goes, then the signal takes its
default action, so the exit status still says which signal ended the viewer.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
from collections.abc import Callable

_lock = threading.Lock()
_removers: dict[int, Callable[[], None]] = {}
_writers: dict[int, subprocess.Popen] = {}  # by pid
_next = [0]
STOP_BOUND_S = 2.0  # a killed writer is waited for this long at most


def keep(remove: Callable[[], None]) -> Callable[[], None]:
    """Register REMOVE (which removes a temporary file, and may be called more than once) until it
    is called. Returns the call to use in its place: it removes the file and forgets it."""
    with _lock:
        _next[0] += 1
        key = _next[0]
        _removers[key] = remove

    def removed() -> None:
        with _lock:
            _removers.pop(key, None)
        remove()

    return removed


def writer(proc: subprocess.Popen) -> subprocess.Popen:
    """PROC writes temporary files: killed before they are removed at a signal. Returns PROC."""
    with _lock:
        _writers[proc.pid] = proc
        for pid in [pid for pid, p in _writers.items() if p.returncode is not None]:
            del _writers[pid]  # (the ones waited for already: nothing to kill)
    return proc


def remove_all() -> None:
    """Kill the writers, then remove every temporary file still registered."""
    with _lock:
        writers = list(_writers.values())
        removers = list(_removers.values())
        _writers.clear()
        _removers.clear()
    for proc in writers:
        try:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=STOP_BOUND_S)
        except (OSError, subprocess.TimeoutExpired):
            pass
    for remove in removers:
        try:
            remove()
        except OSError:
            pass


def _ended_by(signum: int, _frame: object) -> None:
    remove_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def end_by_signals() -> None:
    """From now on SIGTERM and SIGHUP remove the temporary files before their default action (in
    the main thread; elsewhere there is no handler to install and nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _ended_by)


atexit.register(remove_all)  # (SIGINT: KeyboardInterrupt, then a normal exit)
