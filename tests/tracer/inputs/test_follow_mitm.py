"""`mcptrace view --follow` on a mitmproxy flow file still being written (addons.mitm_follow,
tracer.cli.spool --follow): flows appended show as rows, a flow still being written waits for its
end and is never read as a broken one, and bytes that are no flow end the following, said.

The flow files are real: an SDK client's session through a real `mitmdump -w` in front of the SDK
server, cut at flow boundaries or inside a flow as a writer leaves them."""

from __future__ import annotations

import asyncio
import os
from collections import Counter

import orjson
import pytest

from tests.tracer.inputs.test_follow import _caught_up, _rows, _until, _whole
from tests.tracer.view.test_view_lazy_rows import _converted_lines
from tracer.cli.inputs import register_optional_inputs
from tracer.inputs.lazy import InputBroken
from tracer.inputs.spooled import SpoolIndex
from tracer.view.viewdata import open_view


def record_session(path, mode: str = "legacy") -> None:
    """A scripted SDK session through `mitmdump -w PATH` (every kind of exchange)."""
    from tests.proxy_peers import mitmdump
    from tests.sdk_peers import sdk_http_server
    from tests.tracer.cli.test_proxy_mitm_files import session

    with sdk_http_server() as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        with mitmdump("--mode", f"reverse:http://127.0.0.1:{port}", "-w", str(path)) as proxied:
            asyncio.run(session(f"http://127.0.0.1:{proxied}/mcp", mode))


def flow_ends(data: bytes) -> list[int]:
    """Where each flow of a flow file ends (a tnetstring: `<length>:<data><type>`)."""
    ends, pos = [], 0
    while pos < len(data):
        colon = data.index(b":", pos)
        pos = colon + 1 + int(data[pos:colon]) + 1
        ends.append(pos)
    return ends


@pytest.fixture(scope="module")
def flows(tmp_path_factory) -> bytes:
    register_optional_inputs()  # (the .mitm reader lives in addons/)
    path = tmp_path_factory.mktemp("mitm") / "session.mitm"
    record_session(path)
    data = path.read_bytes()
    assert len(flow_ends(data)) > 8
    return data


def messages(rows: list[bytes]) -> Counter:
    """The messages among converted capture lines: (direction, bytes), counted."""
    objs = [orjson.loads(r) for r in rows]
    return Counter((o["dir"], o.get("text") or o.get("b64")) for o in objs if o.get("type") == "message")


def _followed(path):
    register_optional_inputs()
    view = open_view(str(path), follow=True)
    assert isinstance(view.index, SpoolIndex) and view.follow
    return view


def test_a_flow_still_being_written_waits_for_its_end_and_is_never_shown_broken(tmp_path, flows):
    ends = flow_ends(flows)
    k = len(ends) // 2
    path = tmp_path / "flows.mitm"
    path.write_bytes(flows[: ends[k] - 40])  # k whole flows, then all but the last 40 bytes of one
    first_k = _converted_lines(_whole(tmp_path, path.name, flows[: ends[k - 1]]))
    view = _followed(path)
    try:
        _until(lambda: _caught_up(view) and len(view) == len(first_k), "the whole flows")
        _until(lambda: view.index.torn_flow() is not None, "the converter to say where it waits")
        assert _rows(view) == first_k, "the whole flows, as the file of them alone shows them"
        assert view.index.torn_flow() == (k + 1, ends[k] - 40 - ends[k - 1])
        assert "ends inside flow" in view.index.torn_at_end()
        assert view.read_problems[1] == 0, "a flow being written is no read problem"
        with open(path, "ab") as fh:  # more of it, still not whole: said again, not read
            fh.write(flows[ends[k] - 40 : ends[k] - 10])
        written = ends[k] - 10 - ends[k - 1]
        _until(lambda: view.index.torn_flow() == (k + 1, written), "the flow's bytes written so far")
        assert _rows(view) == first_k
        with open(path, "ab") as fh:
            fh.write(flows[ends[k] - 10 :])
        every = messages(_converted_lines(_whole(tmp_path, path.name, flows)))
        _until(lambda: _caught_up(view) and messages(_rows(view)) == every, "every flow's messages")
        rows = _rows(view)
        assert rows[: len(first_k)] == first_k, "a row shown never changes"
        _until(lambda: view.index.torn_flow() is None, "the converter to say the file ends at a flow's end")
        assert view.index.torn_at_end() is None
    finally:
        view.close()


def test_a_flow_file_appended_flow_by_flow_shows_each_flows_messages_once_it_is_written(tmp_path, flows):
    ends = flow_ends(flows)
    path = tmp_path / "flows.mitm"
    path.write_bytes(flows[: ends[0]])
    view = _followed(path)
    try:
        shown: list[bytes] = []
        for i, end in enumerate(ends):
            if i:
                with open(path, "ab") as fh:
                    fh.write(flows[ends[i - 1] : end])
            so_far = messages(_converted_lines(_whole(tmp_path, path.name, flows[:end])))
            _until(
                lambda so_far=so_far: _caught_up(view) and messages(_rows(view)) == so_far,
                f"the messages of the first {i + 1} flows",
            )
            rows = _rows(view)
            assert rows[: len(shown)] == shown, "a row shown never changes"
            shown = rows
    finally:
        view.close()


@pytest.mark.parametrize("how", ["garbage", "truncated"])
def test_bytes_that_are_no_flow_or_a_truncated_file_end_the_following_said_and_the_rows_stay(
    tmp_path, flows, how
):
    ends = flow_ends(flows)
    path = tmp_path / "flows.mitm"
    path.write_bytes(flows[: ends[2]])
    view = _followed(path)
    try:
        _until(lambda: _caught_up(view) and view.index.torn_flow() is None and len(view) > 3, "the flows")
        before = _rows(view)
        if how == "garbage":
            with open(path, "ab") as fh:
                fh.write(b"not a flow at all\n")
        else:
            os.truncate(path, ends[0])
        said: list[str] = []

        def ended() -> bool:
            try:
                view.grow()
            except InputBroken as exc:
                said.append(str(exc))
            return bool(said)

        _until(ended, "following to end")
        assert "following stopped" in said[0]
        assert ("flow 4 cannot be read" if how == "garbage" else "truncated") in said[0]
        assert _rows(view)[: len(before)] == before
    finally:
        view.close()
