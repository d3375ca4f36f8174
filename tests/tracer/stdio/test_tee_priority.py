"""The capture process stays out of the relay's way (tracer.stdio.priority, tracer.stdio.ring): its
session's autogroup waits in the background, unprivileged too, and a flood that fits in half the
ring is relayed without hurrying it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.tracer.stdio.test_tee_relay import BOUND_S, stream_of
from tests.tracer.stdio.test_tee_ring_memory import BUDGET, LINE, _Tee, _until
from tracer.model import Direction, RecordType
from tracer.stdio import splice as tee_splice
from tracer.stdio.ring import MIN_SIZE, Ring

ROOT = Path(__file__).resolve().parents[3]

# A real capture process, in a process of its own (the test runner's priority stays as it is): its
# session's autogroup nice at rest, once hurried (asked again as the relay does, as long as an
# unprivileged change is refused for being too soon after the last), and once it caught up.
_AUTOGROUP = textwrap.dedent("""
    import os, signal, sys, time
    from tracer.capture import CaptureWriter, header_record
    from tracer.stdio.process import CaptureProcess

    def nice(pid):
        with open(f"/proc/{pid}/autogroup") as fh:
            return int(fh.read().rsplit("nice", 1)[1])

    def until(cond):
        deadline = time.monotonic() + float(sys.argv[2])
        while not cond() and time.monotonic() < deadline:
            time.sleep(0.01)
        return cond()

    writer = CaptureWriter(sys.argv[1], header_record("stdio"))
    feed = CaptureProcess(writer, live_lint=False)
    feed.start()
    seen = [until(lambda: nice(feed.pid) == 19)]
    os.kill(feed.pid, signal.SIGSTOP)  # (it would step back to the background while we look)
    seen.append(until(lambda: feed.hurry(True) or nice(feed.pid) == 0))
    os.kill(feed.pid, signal.SIGCONT)
    feed.event("note")  # work for it; once done and quiet, it steps back by itself
    seen.append(until(lambda: nice(feed.pid) == 19))
    print(*seen)
    feed.close(float(sys.argv[2]))
    writer.close()
""")


def _unprivileged() -> list[str]:
    """A command prefix that runs without any capability (root's included), or [] when this user
    has none to drop."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv is needed to drop root's capabilities")
    return [setpriv, "--securebits=+noroot,+noroot_locked", "--bounding-set=-all", "--inh-caps=-all"]


@pytest.mark.skipif(
    not tee_splice.available() or not os.path.exists("/proc/self/autogroup"),
    reason="autogroups are Linux's (CONFIG_SCHED_AUTOGROUP)",
)
@pytest.mark.parametrize("privileges", ["as they are", "none"])
def test_the_capture_process_session_waits_in_the_background_and_is_hurried_with_any_users_rights(
    tmp_path, privileges
):
    # The capture process leads a session of its own; where the kernel groups tasks by session its
    # threads' SCHED_IDLE counted only against each other, and it took as much CPU as the tee's
    # whole session. Its autogroup now waits at nice 19, and goes to 0 and back, unprivileged too
    # (where its threads' priority cannot come back up).
    prefix = _unprivileged() if privileges == "none" else []
    p = subprocess.run(
        [*prefix, sys.executable, "-c", _AUTOGROUP, str(tmp_path / "cap.jsonl"), str(BOUND_S)],
        capture_output=True,
        text=True,
        timeout=4 * BOUND_S,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert p.stdout.split() == ["True", "True", "True"], p.stderr


def _record_hurries(feed) -> list[bool]:
    asked: list[bool] = []
    hurry = feed.hurry

    def on_hurry(at_once: bool = False) -> None:
        asked.append(at_once)
        hurry(*([True] if at_once else []))

    feed.hurry = on_hurry
    return asked


@pytest.mark.skipif(
    not tee_splice.available() or Ring.create(MIN_SIZE) is None,
    reason="memfd, eventfd and splice are Linux's",
)
def test_a_flood_within_half_the_ring_is_relayed_first_and_only_more_hurries_the_capture(tmp_path):
    # The capture process stopped (it gets no CPU while the relay works): the first flood waits in
    # the capture pipe and under half the ring, and the relay leaves the capture process on idle
    # CPU; past half the ring it asks for normal scheduling, without waiting for it.
    tee = _Tee(tmp_path, stopped=True)
    asked = _record_hurries(tee.feed)
    half = tee.feed.ring.size // 2
    first = LINE * (half // len(LINE))
    more = LINE * (BUDGET // len(LINE))
    try:
        tee.send(first)
        _until(lambda: tee.got == len(first), "the first flood relayed")
        assert asked == []  # (before: hurried from the first copy the capture pipe had no room for)
        tee.send(more)
        _until(lambda: False in asked, "the capture process hurried past half the ring")
        _until(lambda: tee.got == len(first) + len(more), "the second flood relayed")
        assert True not in asked  # the relay never waited: the ring had room
    finally:
        records = tee.finish()
    assert not [r for r in records if r.type is RecordType.EVENT]  # nothing dropped
    assert stream_of(records, Direction.S2C) == first + more


@pytest.mark.skipif(not tee_splice.available(), reason="the capture process needs Linux pipes")
def test_the_session_end_keeps_hurrying_the_capture_process_until_it_has_finished(tmp_path):
    # One hurry at the end was not enough: an unprivileged autogroup change is refused 0.1 s after
    # the last (the capture process's own step back), and the capture then finished at nice 19 (12 s
    # for a 50 MB flood on a busy machine). Stopped here, it cannot finish while the tee asks.
    import signal
    import threading

    from tracer.capture import CaptureWriter, header_record
    from tracer.stdio.process import CaptureProcess

    writer = CaptureWriter(tmp_path / "cap.jsonl", header_record("stdio"))
    feed = CaptureProcess(writer, live_lint=False)
    feed.start()
    asked = _record_hurries(feed)
    os.kill(feed.pid, signal.SIGSTOP)
    closed: list[bool] = []
    closing = threading.Thread(target=lambda: closed.append(feed.close(BOUND_S)))
    try:
        closing.start()
        _until(lambda: len(asked) >= 3, "hurried again while the capture process had not finished")
    finally:
        os.kill(feed.pid, signal.SIGCONT)
        closing.join(BOUND_S)
        writer.close()
    assert closed == [True]
