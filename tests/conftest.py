"""Suite-wide fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def private_state_home(tmp_path_factory, monkeypatch):
    """Every test gets its own XDG state directory, so nothing a test records (the tee's and the
    proxy's default captures, a port-in-use run) lands in the user's real ~/.local/state/mcptrace;
    subprocesses inherit it through the environment. A test that unsets it sets HOME as well."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state
