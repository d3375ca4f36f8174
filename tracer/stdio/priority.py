"""The capture process's scheduling (Linux): in the background while a session runs, normal while
a flood needs it and at the end. See tracer.stdio.process for why.

Scheduling policy and nice value belong to each thread on Linux, not to the process: every thread
of the process is set (the capture's writer thread does the heavy work), not only the caller.
"""

from __future__ import annotations

import os

BACKGROUND_NICE = 19


def background(on: bool, pid: int = 0) -> None:
    """Only idle CPU for every thread of process `pid` (on), or normal scheduling back (off). Nice 19
    first: an unprivileged process may go back from SCHED_IDLE to SCHED_OTHER only at a nice value
    its RLIMIT_NICE allows (usually none: then it stays in the background); root gets nice 0 back."""
    idle = getattr(os, "SCHED_IDLE", None)
    try:
        threads = [int(t) for t in os.listdir(f"/proc/{pid or os.getpid()}/task")]
    except (OSError, ValueError):
        threads = [pid]  # (no /proc: the calling thread, or the process's main thread)
    for tid in threads:
        try:
            if on:
                os.setpriority(os.PRIO_PROCESS, tid, BACKGROUND_NICE)
                if idle is not None:
                    os.sched_setscheduler(tid, idle, os.sched_param(0))
            elif idle is not None:
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
                os.setpriority(os.PRIO_PROCESS, tid, 0)
        except OSError:
            pass  # (refused, or the thread is gone: it stays as it was)


def hurried() -> bool:
    """Whether this thread runs at normal priority though the session is not over (a flood)."""
    idle = getattr(os, "SCHED_IDLE", None)
    try:
        return idle is not None and os.sched_getscheduler(0) != idle
    except OSError:
        return False
