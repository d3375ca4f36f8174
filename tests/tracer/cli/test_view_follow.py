"""`mcptrace view --follow` as a user runs it (a real terminal, a pty): a flow file that ends inside a
flow says so on the status line while it waits, and on the terminal when the viewer quits; a slow
stream whose format cannot be told yet says what the viewer waits for instead of a blank terminal."""

from __future__ import annotations

import os
import re

import pytest

from tests.sdk_peers import CAPTURES
from tests.tracer.cli.test_view_pipe import ANALYSED, Screen
from tests.tracer.inputs.test_follow_mitm import flow_ends, flows  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")


def test_a_followed_flow_file_ending_inside_a_flow_says_so_while_waiting_and_when_the_viewer_quits(
    tmp_path,
    flows,  # noqa: F811
):
    ends = flow_ends(flows)
    path = tmp_path / "flows.mitm"
    path.write_bytes(flows[: ends[2] + 30])  # three whole flows, then the start of the fourth
    screen = Screen(["--follow", str(path)], tmp_path)
    screen.wait_for(rb"flow 4 is being written \(30 bytes so far\)")
    assert b"cannot read" not in screen.text()
    assert screen.quit() == 0
    assert b"flows.mitm ends inside flow 4 (30 bytes of it written), never shown" in screen.text()


def test_a_slow_stream_not_yet_recognisable_says_the_viewer_waits_to_tell_its_format(tmp_path):
    lines = (CAPTURES / "sdk-stdio-legacy.jsonl").read_bytes().splitlines(keepends=True)
    r, w = os.pipe()
    screen = Screen(["-"], tmp_path, stdin_fd=r)
    os.close(r)
    os.write(w, lines[0][:20])  # the start of the capture's header line, and nothing more for now
    screen.wait_for(rb"waiting for standard input: 20 bytes so far, not enough to tell its format")
    os.write(w, lines[0][20:] + b"".join(lines[1:]))
    os.close(w)
    screen.wait_for(rb"initialize")
    screen.wait_for(ANALYSED)
    assert screen.quit() == 0


def test_a_stream_of_flows_is_followed_as_it_comes(tmp_path, flows):  # noqa: F811
    path = tmp_path / "flows.mitm"
    path.write_bytes(flows)
    whole = Screen([str(path)], tmp_path)
    expected = whole.wait_for(rb"([0-9,]+) rows\s+analysed").group(1)  # (the file read whole)
    assert whole.quit() == 0
    ends = flow_ends(flows)
    r, w = os.pipe()
    screen = Screen(["-"], tmp_path, stdin_fd=r)
    os.close(r)
    os.write(w, flows[: ends[0]])  # the stream has begun: its first flow is on screen
    screen.wait_for(rb"initialize")
    os.write(w, flows[ends[0] :])  # then the rest comes, and the stream ends
    os.close(w)
    screen.wait_for(re.escape(expected) + rb" rows\s+analysed")
    assert screen.quit() == 0


def test_a_followed_empty_log_says_the_viewer_waits_for_its_format_and_q_still_quits(tmp_path):
    path = tmp_path / "mcp-server-alpha.log"
    path.write_bytes(b"")
    screen = Screen(["--follow", str(path)], tmp_path)
    screen.wait_for(rb"waiting for mcp-server-alpha\.log to be written: 0 bytes, not enough yet")
    assert screen.quit() == 0  # (the wait ends with the screen: nothing holds the exit)


def _holds(pid: int, prefix: str) -> bool:
    """Whether process PID has a file open whose name starts with PREFIX."""
    fds = f"/proc/{pid}/fd"
    for fd in os.listdir(fds):
        try:
            if os.path.basename(os.readlink(f"{fds}/{fd}")).startswith(prefix):
                return True
        except OSError:
            continue
    return False


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_a_stream_of_flows_that_ended_inside_a_flow_says_the_flow_is_cut_short_when_the_viewer_quits(
    tmp_path,
    flows,  # noqa: F811
):
    import time

    ends = flow_ends(flows)
    r, w = os.pipe()
    screen = Screen(["-"], tmp_path, stdin_fd=r)
    os.close(r)
    os.write(w, flows[: ends[0]])
    screen.wait_for(rb"initialize")  # (followed: the stream had not ended when the screen opened)
    os.write(w, flows[ends[0] : ends[2] + 30])
    os.close(w)  # the writer stops inside the fourth flow
    deadline = time.monotonic() + 120
    while _holds(screen.pid, "mcptrace-stream-"):  # (the copy reached the stream's end: it closed it)
        assert time.monotonic() < deadline, "the stream's copy did not end"
        time.sleep(0.02)
    screen.wait_for(rb"flow 4 cut short \(30 bytes\): the stream ended in it")
    assert screen.quit() == 0
    assert (
        b"standard input ended inside flow 4 (30 bytes of it): a flow cut short, never shown" in screen.text()
    )
