"""The stdio tee's heap under a flood (glibc): freed megabyte buffers kept for the next ones.

Under a flood the relay holds copies waiting for the capture pipe and the capture process holds
copies waiting for its writer, up to a budget each, freed as fast as new ones come. glibc's default
gives a freed stretch at the top of the heap back to the kernel once it exceeds a few megabytes, a
thread's own arena maps and unmaps a 64 MiB heap as it fills and empties (whatever the threshold),
and buffers above its threshold come straight from mmap: every new buffer is then fresh memory, and
touching it costs a page fault per 4 KiB (37,000 for 100 MB captured, measured in-process; none with
the heap kept), a large part of the capture's CPU per megabyte. So one arena, buffers from the heap,
and a trim threshold above the budget; the returned function trims the heap (malloc_trim) when the
flood is over. Elsewhere than glibc: as it is.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8  # mallopt(3) parameters
MMAP_FROM = 16 * 1024 * 1024
TRIM_AFTER_BYTES = 64 * 1024 * 1024  # moved since the last trim: worth giving the memory back
TRIM_IDLE_FROM = 1024 * 1024  # ...and this much once the flood is over (an idle tee keeps no flood's heap)


def keep_freed_memory(budget: int) -> Callable[[], None]:
    """Tune this process's malloc for a flood within `budget` bytes; returns the trim."""
    try:
        libc = ctypes.CDLL(None)
        mallopt, trim = libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    mallopt(_M_ARENA_MAX, 1)
    mallopt(_M_MMAP_THRESHOLD, MMAP_FROM)
    mallopt(_M_TRIM_THRESHOLD, min(2 * budget + MMAP_FROM, 1 << 30))
    return lambda: trim(0)
