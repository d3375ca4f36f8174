"""Skip marks for tests that move a process's threads between background and normal scheduling
(tracer.stdio.priority): that is Linux's per-thread scheduling, and going back from SCHED_IDLE
needs CAP_SYS_NICE or an RLIMIT_NICE that allows nice 0."""

from __future__ import annotations

import os
import resource

import pytest


def may_raise_priority() -> bool:
    return os.geteuid() == 0 or resource.getrlimit(resource.RLIMIT_NICE)[0] >= 20


per_thread_scheduling = pytest.mark.skipif(
    not os.path.isdir("/proc/self/task") or not hasattr(os, "SCHED_IDLE"),
    reason="per-thread scheduling is Linux's",
)
raising_priority = pytest.mark.skipif(
    not may_raise_priority(), reason="raising a priority again needs CAP_SYS_NICE or RLIMIT_NICE"
)
