"""One session, four recordings: our `mcptrace proxy` capture, the capture addon loaded into stock
`mitmdump -s addons/mcp_capture.py`, and a plain `mitmdump -w` flow file with its HAR dump
(`hardump`). `mcptrace lint` reads all four (the .mitm through mitmproxy's own io) and finds the
same things in each.

    SDK client -> mcptrace proxy -> mitmdump -s addons/mcp_capture.py -> mitmdump -w x.mitm --set hardump=x.har -> SDK server
"""

from __future__ import annotations

import asyncio
from collections import Counter

import anyio
import pytest
from mcp import Client

from tests.proxy_peers import REPO, capture_records, lint_findings, mcptrace_proxy, mitmdump
from tests.sdk_peers import sdk_http_server
from tracer.cli import main
from tracer.cli.inputs import register_optional_inputs
from tracer.inputs import open_input
from tracer.model import Record, RecordType

MODES = ["legacy", "2026-07-28"]


async def session(url: str, mode: str) -> list:
    """A scripted session (every kind of exchange but a cancellation: a flow file cannot tell when a
    streamed event arrived, so a race between a cancel and the stream is not comparable)."""
    out = []

    async def progress(p, total, message):
        out.append(("progress", p))

    with anyio.fail_after(60):
        async with Client(url, mode=mode, cache=None, log_level="info") as c:
            out.append(sorted(t.name for t in (await c.list_tools()).tools))
            for name, args in (
                ("echo", {"text": "héllo ✓"}),
                ("add", {"a": 2, "b": 3}),
                ("fail", {}),
                ("weather", {"city": "Lyon"}),
            ):
                out.append((await c.call_tool(name, args)).model_dump(mode="json", exclude={"meta"}))
            out.append(
                (await c.read_resource("fixture://items/42")).model_dump(mode="json", exclude={"meta"})
            )
            out.append((await c.call_tool("slow", {"steps": 3}, progress_callback=progress)).is_error)
    return out


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    d = tmp_path_factory.mktemp("four")
    paths = {
        "ours": d / "ours.jsonl",
        "addon": d / "addon.jsonl",
        "mitm": d / "plain.mitm",
        "har": d / "plain.har",
    }
    with sdk_http_server() as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        direct = [asyncio.run(session(url, mode)) for mode in MODES]
        # plain mitmdump buffers SSE (mitmproxy#4469): the client gets each stream when it ends
        with (
            mitmdump(
                "--mode",
                f"reverse:http://127.0.0.1:{port}",
                "-w",
                str(paths["mitm"]),
                "--set",
                f"hardump={paths['har']}",
            ) as plain,
            mitmdump(
                "--mode",
                f"reverse:http://127.0.0.1:{plain}",
                "-s",
                str(REPO / "addons" / "mcp_capture.py"),
                "--set",
                f"mcptrace_output={paths['addon']}",
            ) as with_addon,
            mcptrace_proxy(f"http://127.0.0.1:{with_addon}/mcp", paths["ours"]) as proxy_url,
        ):
            proxied = [asyncio.run(session(proxy_url, mode)) for mode in MODES]
    assert proxied == direct
    return paths


def _messages(path) -> list[tuple[str, bytes]]:
    register_optional_inputs()
    inp = open_input(str(path))
    return [
        (r.dir.value, r.raw) for r in inp.records if isinstance(r, Record) and r.type is RecordType.MESSAGE
    ]


def test_the_flow_file_and_the_har_are_read_as_what_they_are(recordings):
    register_optional_inputs()
    for name, fmt in (("mitm", "mitm"), ("har", "har")):
        inp = open_input(str(recordings[name]))
        inp.fh.close()
        assert inp.format.name == fmt


def test_all_four_recordings_hold_the_same_messages(recordings):
    ours = _messages(recordings["ours"])
    assert len(ours) > 30
    for name in ("addon", "mitm", "har"):
        assert Counter(_messages(recordings[name])) == Counter(ours), name


def test_all_four_recordings_lint_to_the_same_findings(recordings):
    def summary(path):
        return Counter((f.rule, f.severity.label) for f in lint_findings(path))

    ours = summary(recordings["ours"])
    for name in ("addon", "mitm", "har"):
        assert summary(recordings[name]) == ours, name


def test_lint_reads_the_flow_file_from_the_command_line(recordings, capsys):
    assert main(["lint", "--fail-on", "error", str(recordings["mitm"])]) == 0
    out = capsys.readouterr().out
    assert "messages in 1 file" in out


def test_the_addon_capture_has_the_http_facts_of_every_exchange(recordings):
    recs = capture_records(recordings["addon"])
    assert {r.transport for r in recs} == {"http"}
    assert all(r.http and r.http.get("flow") for r in recs if r.type is not RecordType.EVENT or r.http)
