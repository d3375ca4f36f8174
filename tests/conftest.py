"""Suite-wide fixtures."""

from __future__ import annotations

import pytest

from tests import markers


@pytest.fixture(autouse=True)
def private_state_home(tmp_path_factory, monkeypatch):
    """Every test gets its own XDG state directory, so nothing a test records (the tee's and the
    proxy's default captures, a port-in-use run) lands in the user's real ~/.local/state/mcptrace;
    subprocesses inherit it through the environment. A test that unsets it sets HOME as well."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    """Mark `e2e` and `needs_node` from what each test reaches (tests/markers.py), so `pytest -m
    "not e2e"` is the fast in-process run and a new test needs no marker by hand."""
    markers.mark(items, pytest)
