"""The live exporter process (tracer.export.follow) runs on idle CPU while the session lasts and at
normal priority once it ended, so its last spans reach the backend within the close's bound on a
busy machine. Scheduling belongs to each thread on Linux: the SDK's export and metric threads,
started while the process was in the background, must come back too (they stayed SCHED_IDLE at
nice 19: under load the final export, waiting on them, ran out of time and the connection's last
spans and metrics were dropped)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.scheduling import per_thread_scheduling, raising_priority
from tests.sdk_peers import BOUND_S, REPO


@per_thread_scheduling
@raising_priority
def test_the_exporters_threads_leave_the_background_with_it_at_the_end():
    # In a process of its own (the test runner's priority stays as it is), as the follower runs:
    # background first, then the sink (the SDK starts its threads), then the session's end.
    script = textwrap.dedent("""
        import os
        from tracer.export import follow
        from tracer.export.otel import OtelSink
        def threads():
            tids = [int(t) for t in os.listdir("/proc/self/task")]
            return (
                sorted({os.sched_getscheduler(t) for t in tids}),
                sorted({os.getpriority(os.PRIO_PROCESS, t) for t in tids}),
                len(tids),
            )
        follow._scheduling(idle=True)
        sink = OtelSink("http://127.0.0.1:9")
        during = threads()
        follow._scheduling(idle=False)
        after = threads()
        sink.close(0.1)
        print(during[:2] == ([os.SCHED_IDLE], [19]), during[2] > 1, after[:2] == ([os.SCHED_OTHER], [0]))
    """)
    p = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=BOUND_S, cwd=REPO
    )
    assert p.stdout.split() == ["True", "True", "True"], (p.stdout, p.stderr)
