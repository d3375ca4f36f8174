"""The capture process's scheduling (Linux): in the background while a session runs, normal while
a flood needs it and at the end. See tracer.stdio.process for why.

Two knobs, both turned:
- Each thread's policy and nice value (SCHED_IDLE, nice 19): on Linux they belong to each thread,
  not to the process, so every thread of the process is set (the writer thread does the heavy
  work), not only the caller. An unprivileged process cannot undo them (see `background`).
- The nice value of the process's *autogroup*. The capture process leads a session of its own
  (tracer.stdio.process: a host's killpg must not end it), and where the kernel groups tasks by
  session (CONFIG_SCHED_AUTOGROUP, /proc/sys/kernel/sched_autogroup_enabled, on by default in
  most distributions) a session's tasks share one weight against every other session's: there a
  thread's SCHED_IDLE ranks it only against the other threads of its own session, and the capture
  process, alone in its session, took as much CPU as the tee's whole session (relay, server, host).
  Measured here: an idle-policy spinner in a session of its own got 50% of a CPU shared with a
  normal one, and 1-2% with its autogroup at nice 19. Any user may set the autogroup nice of their
  own session anywhere from 0 to 19, both ways: an unprivileged tee hurries its capture with it too.
"""

from __future__ import annotations

import os

BACKGROUND_NICE = 19
_groups = {"usable": False}  # (this process could set an autogroup nice: see `hurried`)


def background(on: bool, pid: int = 0) -> None:
    """Only idle CPU for every thread of process `pid` (on), or normal scheduling back (off).

    Threads: nice 19 first, then SCHED_IDLE. An unprivileged process may go back from SCHED_IDLE
    to SCHED_OTHER only at a nice value its RLIMIT_NICE allows (usually none: its threads then stay
    in the background); root gets nice 0 back. Then the autogroup, which any user may move back
    and forth (`_group_nice`), where `pid` leads its own session."""
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
    _group_nice(pid, BACKGROUND_NICE if on else 0)


def _own_session(pid: int) -> bool:
    try:
        return os.getsid(pid) == (pid or os.getpid())
    except OSError:
        return False


def _group_nice(pid: int, nice: int) -> None:
    """Set the autogroup nice of `pid`'s session, only where `pid` leads it (else the group is
    the tee's own, with the relay in it). Refused (EAGAIN) when an unprivileged user changed an
    autogroup less than 0.1 s ago: the relay asks again while the flood lasts."""
    if not _own_session(pid):
        return
    try:
        with open(f"/proc/{pid or 'self'}/autogroup", "w") as fh:
            fh.write(str(nice))
    except BlockingIOError:
        _groups["usable"] = True  # (EAGAIN: too soon after another change; asked again later)
    except OSError:
        pass  # (no autogroups in this kernel, or refused: it stays as it was)
    else:
        _groups["usable"] = True


def _group_nice_now() -> int | None:
    """This process's autogroup nice, or None where there is none to read."""
    try:
        with open("/proc/self/autogroup", "rb") as fh:
            return int(fh.read().rsplit(b"nice", 1)[1])
    except (OSError, ValueError, IndexError):
        return None


def hurried() -> bool:
    """Whether this process runs at normal priority though the session is not over (a flood): its
    thread's policy, or its autogroup where it leads its session."""
    idle = getattr(os, "SCHED_IDLE", None)
    try:
        if idle is not None and os.sched_getscheduler(0) != idle:
            return True
    except OSError:
        pass
    if not _groups["usable"] or not _own_session(0):
        return False  # (an autogroup this process cannot move counts for nothing: else forever hurried)
    nice = _group_nice_now()
    return nice is not None and nice < BACKGROUND_NICE
