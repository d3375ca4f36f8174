"""The e2e / needs_node marks follow what a test reaches (tests/markers.py): a helper that starts a
process, however deep, makes its callers e2e; one that uses the Node peers makes them needs_node;
in-process code stays unmarked. The helpers below are never called: only their code is read."""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager

from tests import everything_peer
from tests.markers import reach


def _spawns():
    return subprocess.run([sys.executable, "-c", "pass"], check=True)


def _calls_a_spawner():
    return _spawns()


@contextmanager
def _server():
    with subprocess.Popen([sys.executable, "-c", "pass"]) as proc:
        yield proc


def _uses_a_context_manager_that_spawns():
    with _server():
        pass


def _uses_node():
    return everything_peer.everything_binary()


TABLE = (_spawns, _calls_a_spawner)


def _runs_a_table_of_helpers():
    return [fn() for fn in TABLE]


def _stays_in_process():
    return sorted([3, 1, 2])


def _python_child_by_executable():
    return [sys.executable, "server.py"]


def _helper(name: str):
    # looked up by name, so these tests do not reach the helpers themselves (and stay unmarked)
    return globals()[name]


def test_a_helper_that_starts_a_process_marks_every_caller_e2e_however_it_is_reached():
    assert "e2e" in reach(_helper("_spawns"))
    assert "e2e" in reach(_helper("_calls_a_spawner"))
    assert "e2e" in reach(_helper("_uses_a_context_manager_that_spawns"))
    assert "e2e" in reach(_helper("_runs_a_table_of_helpers"))
    assert "e2e" in reach(_helper("_python_child_by_executable"))


def test_a_helper_using_the_node_peers_marks_its_callers_needs_node():
    assert "node" in reach(_helper("_uses_node"))


def test_code_that_stays_in_process_gets_no_mark():
    assert reach(_helper("_stays_in_process")) == frozenset()
    assert reach(test_code_that_stays_in_process_gets_no_mark) == frozenset()
