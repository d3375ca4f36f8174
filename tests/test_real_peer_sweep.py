"""The real-peer sweep (tests/peer_sweep.py): live sessions of the official Python SDK client
against its own server and against server-everything, recorded by the tee and `mcptrace proxy`,
lint with exactly the known real findings (README "Findings on real peers"): every one required
is there, nothing else is. Without Node the server-everything half is skipped by the
everything_peer mechanism (it cannot run there), never hidden."""

from __future__ import annotations

import pytest

from tests import peer_sweep


@pytest.fixture(scope="module")
def sdk_captures(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep-sdk")
    caps = {}
    for run in peer_sweep.SDK_RUNS:
        caps.update(run(out))
    return caps


@pytest.fixture(scope="module")
def everything_captures(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep-everything")
    caps = {}
    for run in peer_sweep.EVERYTHING_RUNS:
        caps.update(run(out))
    return caps


def _check(name: str, caps: dict) -> None:
    findings, extra, absent = peer_sweep.judge(name, caps[name])
    assert extra == [], f"{caps[name]}: findings that are not known real ones"
    assert absent == [], f"{caps[name]}: known real findings not reported; all: {findings}"


@pytest.mark.parametrize("name", [n for n in peer_sweep.EXPECT if n.startswith("sdk-")])
def test_the_sdk_client_against_its_own_server_shows_exactly_its_real_findings(sdk_captures, name):
    _check(name, sdk_captures)


@pytest.mark.parametrize("name", [n for n in peer_sweep.EXPECT if n.startswith("everything-")])
def test_the_sdk_client_against_server_everything_shows_exactly_its_real_findings(everything_captures, name):
    _check(name, everything_captures)
