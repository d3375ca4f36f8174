"""The viewer's analysis process (tracer.view.annotate), driven from the real viewer: it never outlives
the viewer, and when it dies the viewer says so and goes on showing the capture."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.gencapture import generate
from tests.ui_support import REPO, SIZE, plain, until, viewer
from ui.app import McpTraceApp


@pytest.fixture(scope="module")
def long_capture(tmp_path_factory) -> Path:
    """A capture whose analysis takes seconds: long enough to be interrupted."""
    path = tmp_path_factory.mktemp("long") / "long.jsonl"
    generate(path, 150_000, 40)
    return path


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie waiting for its parent to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _processes_naming(text: str) -> list[int]:
    """Processes whose command line holds `text` (the analysis process names its work directory)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if text.encode() in cmd and _alive(int(entry.name)):
            out.append(int(entry.name))
    return out


def _children(pid: int) -> list[int]:
    return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


async def _analysing(pilot):
    app = pilot.app
    await until(pilot, lambda: getattr(app.screen, "view", None) is not None, "the capture to open")
    scr = viewer(app)
    await until(
        pilot,
        lambda: scr.view.ann is not None and scr.view.ann.proc is not None and scr.view.ann.rows_done > 0,
        "the analysis to report its first rows",
        bound=120,
    )
    return scr


async def test_a_viewer_closed_mid_analysis_leaves_no_process_and_no_files_behind(long_capture):
    app = McpTraceApp(str(long_capture))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _analysing(pilot)
        ann = scr.view.ann
        assert not ann.done, "the analysis finished before the viewer was closed: make the capture longer"
        pid, workdir = ann.proc.pid, ann.workdir
        # the process the viewer started, and the analysis it forked (tracer.view.pipeline)
        assert sorted(_processes_naming(workdir)) == sorted([pid, *_children(pid)])
        await pilot.press("q")
    assert not _alive(pid)
    assert _processes_naming(workdir) == []
    assert not os.path.exists(workdir)


def test_an_analysis_process_whose_viewer_is_killed_stops_too(long_capture):
    # the viewer gets no chance to stop it: the analysis sees its stdin close and stops on its own
    code = (
        "import sys\n"
        "from tracer.view.annotations import Annotations\n"
        "a = Annotations(sys.argv[1]); a.start()\n"
        "print(a.proc.pid, flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code, str(long_capture)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as host:
        try:
            pid = int(host.stdout.readline())
            assert _alive(pid)
            deadline = time.monotonic() + 60
            while not _children(pid) and time.monotonic() < deadline:  # (the analysis it forks)
                time.sleep(0.05)
            helpers = [pid, *_children(pid)]
            assert len(helpers) == 2
        finally:
            host.kill()
            host.wait()
    deadline = time.monotonic() + 60
    while any(_alive(p) for p in helpers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in helpers)


async def test_an_analysis_process_that_dies_is_named_in_the_status_line_and_the_viewer_goes_on(
    long_capture,
):
    app = McpTraceApp(str(long_capture))
    async with app.run_test(size=SIZE) as pilot:
        scr = await _analysing(pilot)
        scr.view.ann.proc.send_signal(signal.SIGKILL)
        await until(pilot, lambda: scr.status.state.analysis_error is not None, "the status line to say so")
        assert "analysis stopped (exit code -9)" in plain(scr.status)
        # what was analysed stays shown, the rest is still readable, keys still work
        first = scr.list.selected_row
        await pilot.press("down", "down")
        await until(pilot, lambda: scr.list.selected_row == first + 2, "the selection to move")
        await pilot.press("G")
        await until(pilot, lambda: scr.list.selected_row == len(scr.view) - 1, "the last row")
        await until(
            pilot,
            lambda: scr.shown_detail is not None and scr.shown_detail[0] == len(scr.view) - 1,
            "its detail",
        )
        await pilot.press("slash", *"method:ping", "enter")
        await until(
            pilot, lambda: scr.filter_job is None and scr.list.rows is not None, "the filter to finish"
        )
