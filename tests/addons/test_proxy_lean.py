"""`mcptrace proxy`'s lean mitmproxy master (addons/lean.py): only the addons a mode and the user's
options need, hooks dispatched with mitmproxy's semantics, the user's `-s` scripts still run, and the
capture recorded on its own thread without losing or reordering a record."""

from __future__ import annotations

import asyncio
import http.client
import logging
import threading
from pathlib import Path
from urllib.parse import urlsplit

from mitmproxy import exceptions, hooks, options
from mitmproxy.test import taddons

from addons.lean import LeanMaster, needed_addons
from addons.mcp_capture import McpCapture
from tests.addon_helpers import INIT, INIT_RESULT, body, exchange, post, records, sse_body
from tests.proxy_peers import capture_records, mcptrace_proxy
from tests.sdk_peers import sdk_http_server
from tracer.model import Direction, RecordType

BOUND_S = 60

SSE = [(b"content-type", b"text/event-stream")]


def _names(addons) -> set[str]:
    return {type(a).__name__.lower() for a in addons}


def test_a_reverse_proxy_loads_the_proxy_machinery_and_none_of_mitmdumps_flow_editing_addons():
    names = _names(needed_addons(["reverse:http://127.0.0.1:1"]))
    assert {"core", "proxyserver", "nextlayer", "tlsconfig", "scriptloader", "block", "updatealtsvc"} <= names
    assert not names & {
        "anticache",
        "anticomp",
        "blocklist",
        "maplocal",
        "mapremote",
        "modifybody",
        "modifyheaders",
        "stickycookie",
        "stickyauth",
        "save",
        "savehar",
        "serverplayback",
    }


def test_an_option_the_user_sets_loads_the_addon_that_declares_it_and_all_addons_loads_every_one():
    assert "anticache" in _names(needed_addons(["reverse:http://127.0.0.1:1"], ["anticache"]))
    assert "upstreamauth" in _names(needed_addons(["upstream:http://127.0.0.1:1"]))
    every = needed_addons(["regular"], lean=False)
    assert len(every) == len(_names(every)) > 25


class _Seen:
    def __init__(self, name: str, log: list, fail: bool = False, halt: bool = False):
        self.name, self.log, self.fail, self.halt = name, log, fail, halt

    def running(self):
        self.log.append(self.name)
        if self.fail:
            raise ValueError(f"{self.name} broke")
        if self.halt:
            raise exceptions.AddonHalt()


def test_hooks_run_in_chain_order_a_failing_addon_is_logged_and_addonhalt_stops_the_chain(caplog):
    seen: list[str] = []

    async def main():
        m = LeanMaster(options.Options())
        m.addons.add(
            _Seen("a", seen),
            _Seen("b", seen, fail=True),
            _Seen("c", seen),
            _Seen("d", seen, halt=True),
            _Seen("e", seen),
        )
        with caplog.at_level(logging.ERROR):
            await m.addons.trigger_event(hooks.RunningHook())

    asyncio.run(main())
    assert seen == ["a", "b", "c", "d"]
    assert "Addon error: b broke" in caplog.text


def test_an_addon_added_later_gets_the_hooks_of_its_kind():
    seen: list[str] = []

    async def main():
        m = LeanMaster(options.Options())
        m.addons.add(_Seen("a", seen))
        await m.addons.trigger_event(hooks.RunningHook())
        m.addons.add(_Seen("b", seen))
        await m.addons.trigger_event(hooks.RunningHook())

    asyncio.run(main())
    assert seen == ["a", "a", "b"]


def test_without_scripts_the_script_loader_costs_no_hook_and_a_script_loaded_later_gets_every_one(tmp_path):
    script = tmp_path / "seen.py"
    script.write_text(
        "seen = []\n"
        "class Seen:\n"
        "    def request(self, flow): seen.append('request')\n"
        "    def update(self, flows): seen.append('update')\n"
        "addons = [Seen()]\n"
    )
    walked: list[str] = []

    async def main():
        from mitmproxy.addons import script as mscript
        from mitmproxy.proxy.layers.http import HttpRequestHook
        from mitmproxy.test import tflow

        m = LeanMaster(options.Options())
        m.addons.add(mscript.ScriptLoader())
        invoke = m.addons.invoke_addon

        async def spy(addon, event):
            walked.append(event.name)
            await invoke(addon, event)

        m.addons.invoke_addon = spy
        f = tflow.tflow()
        await m.addons.handle_lifecycle(HttpRequestHook(f))
        before = list(walked)
        m.options.update(scripts=[str(script)])
        (loaded,) = m.addons.get("scriptloader").addons
        async with asyncio.timeout(60):  # (mitmproxy loads a script given at run time in a task)
            while loaded.ns is None:
                await asyncio.sleep(0.01)
        await m.addons.handle_lifecycle(HttpRequestHook(f))
        return before, loaded.ns.seen

    before, seen = asyncio.run(main())
    assert before == [], "no script: nothing walked, no update hook"
    assert seen == ["request", "update"]
    assert walked == ["request", "update"]


SCRIPT = """
from mitmproxy import http

class Tag:
    def response(self, flow: http.HTTPFlow) -> None:
        flow.response.headers["x-user-script"] = "ran"

addons = [Tag()]
"""


def test_the_users_script_runs_and_the_session_is_recorded_through_the_lean_proxy(tmp_path):
    script = tmp_path / "tag.py"
    script.write_text(SCRIPT)
    cap = tmp_path / "lean.jsonl"
    with (
        sdk_http_server("--json-response") as upstream,
        mcptrace_proxy(upstream, cap, "-s", str(script), "--set", "anticache=true") as url,
    ):
        u = urlsplit(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        conn.request(
            "POST",
            u.path,
            body=body(INIT),
            headers={"content-type": "application/json", "accept": "application/json, text/event-stream"},
        )
        resp = conn.getresponse()
        answer = resp.read()
        conn.close()
    assert resp.status == 200 and resp.getheader("x-user-script") == "ran"
    msgs = [r for r in capture_records(cap) if r.type is RecordType.MESSAGE]
    assert [m.dir for m in msgs] == [Direction.C2S, Direction.S2C]
    assert msgs[0].raw == body(INIT) and msgs[1].raw == answer


def test_on_its_recording_thread_the_capture_keeps_every_record_in_order_and_done_waits_for_them(tmp_path):
    path = tmp_path / "bg.jsonl"
    threads: set[str] = set()

    async def main():
        addon = McpCapture(background=True)
        addon.listeners.append(lambda rec: threads.add(threading.current_thread().name))
        with taddons.context(addon) as tctx:
            tctx.configure(addon, mcptrace_output=str(path))
            addon.running()
            for i in range(200):
                exchange(addon, post({**INIT, "id": i}, resp={**INIT_RESULT, "id": i}))
            f = post({**INIT, "id": "s"}, resp=None, resp_headers=SSE)
            addon.request(f)
            addon.responseheaders(f)
            chunk = sse_body(("message", body({**INIT_RESULT, "id": "s"}).decode(), "1"))
            forwarded = list(f.response.stream(chunk))
            addon.done()  # (the stream is still open: closed into the capture as capture-stopped)
        return forwarded, chunk

    forwarded, chunk = asyncio.run(main())
    assert len(forwarded) == 1 and forwarded[0] is chunk, "the chunk goes on as it came, the same bytes"
    recs = records(path)
    ids = [r.raw for r in recs if r.type is RecordType.MESSAGE]
    expected = [body(m) for i in range(200) for m in ({**INIT, "id": i}, {**INIT_RESULT, "id": i})]
    assert ids == [*expected, body({**INIT, "id": "s"}), body({**INIT_RESULT, "id": "s"})]
    assert [r.seq for r in recs] == sorted(r.seq for r in recs)
    assert recs[-1].data["event"] == "stream-closed" and recs[-1].data["reason"] == "capture-stopped"
    assert threads == {"mcptrace-capture"}, "listeners run on the recording thread, not the event loop"


async def test_an_sse_chunk_is_on_its_way_to_the_host_before_the_recording_thread_hears_of_it(tmp_path):
    # mitmproxy writes each chunk a stream callable yields before it resumes the callable: the
    # recording thread is woken after the write, so it cannot take the CPU from the event loop
    # while the host waits for the event
    addon, order = McpCapture(background=True), []
    with taddons.context(addon) as tctx:
        tctx.configure(addon, mcptrace_output=str(tmp_path / "cap.jsonl"))
        addon.running()
        try:
            put = addon._thread.put
            addon._thread.put = lambda fn, *args: (
                order.append(("recording thread", fn.__name__)),
                put(fn, *args),
            )
            f = post({**INIT, "id": "s"}, resp=None, resp_headers=SSE)
            addon.request(f)
            addon.responseheaders(f)
            async with asyncio.timeout(BOUND_S):  # (the request and its head are handed over)
                while len(order) < 2:
                    await asyncio.sleep(0.001)
            del order[:]
            chunk = sse_body(("message", body({**INIT_RESULT, "id": "s"}).decode(), "1"))
            chunks = f.response.stream(chunk)  # (what mitmproxy does with the answer)
            for part in [chunks] if isinstance(chunks, bytes) else chunks:
                order.append(("sent", part))
            async with asyncio.timeout(BOUND_S):  # (handed over with the next batch)
                while len(order) < 2:
                    await asyncio.sleep(0.001)
            seen = list(order)
        finally:
            addon.done()
    assert seen == [("sent", chunk), ("recording thread", "_on_chunk")]
    recs = [r for r in records(tmp_path / "cap.jsonl") if r.type is RecordType.MESSAGE]
    assert [r.raw for r in recs] == [body({**INIT, "id": "s"}), body({**INIT_RESULT, "id": "s"})]


async def test_an_sse_chunk_whose_forwarding_stops_half_way_is_still_recorded(tmp_path):
    addon = McpCapture(background=True)
    event = body({**INIT_RESULT, "id": "s"})
    with taddons.context(addon) as tctx:
        tctx.configure(addon, mcptrace_output=str(tmp_path / "cap.jsonl"))
        addon.running()
        try:
            f = post({**INIT, "id": "s"}, resp=None, resp_headers=SSE)
            addon.request(f)
            addon.responseheaders(f)

            def inner(chunk):  # (a user's script handing the chunk on in two parts)
                return [chunk[:10], chunk[10:]]

            f.response.stream = addon._queued_stream(f.id, inner)
            chunks = f.response.stream(sse_body(("message", event.decode(), "1")))
            next(chunks)  # the first part is sent, then mitmproxy stops reading
            chunks.close()
            await asyncio.sleep(0)
        finally:
            addon.done()
    recs = [r for r in records(tmp_path / "cap.jsonl") if r.type is RecordType.MESSAGE]
    assert [r.raw for r in recs] == [body({**INIT, "id": "s"}), event]


async def test_the_recording_thread_hears_of_an_exchange_at_once_after_the_turn_that_forwards_its_answer(
    tmp_path,
):
    # mitmproxy forwards a request (a response) in the same turn of its loop as the hook, after it:
    # the hooks only note what to record, and the thread is woken once per exchange, when the turn
    # of its answer ends (a request still waiting for its answer is handed over within BATCH_S)
    addon, heard = McpCapture(background=True), []
    with taddons.context(addon) as tctx:
        tctx.configure(addon, mcptrace_output=str(tmp_path / "cap.jsonl"), mcptrace_annotate=False)
        addon.running()
        try:
            put = addon._thread.put
            addon._thread.put = lambda fn, *args: (heard.append(fn.__name__), put(fn, *args))
            f = post(INIT, resp=INIT_RESULT)
            addon.request(f)
            in_the_hooks_turn = list(heard)
            await asyncio.sleep(0)
            after_the_turn = list(heard)
            addon.responseheaders(f)
            addon.response(f)
            in_the_answers_turn = list(heard)
            await asyncio.sleep(0)
            after_the_answer = list(heard)
            waiting = post({**INIT, "id": 2}, resp=INIT_RESULT)
            addon.request(waiting)  # (its answer does not come)
            async with asyncio.timeout(BOUND_S):
                while len(heard) < 4:
                    await asyncio.sleep(0.001)
        finally:
            addon.done()
    assert in_the_hooks_turn == after_the_turn == in_the_answers_turn == []
    assert after_the_answer == ["_on_request", "_on_responseheaders", "_on_response"]
    assert heard == [*after_the_answer, "_on_request", "_on_done"]
    msgs = [r.raw for r in records(tmp_path / "cap.jsonl") if r.type is RecordType.MESSAGE]
    assert msgs == [body(INIT), body(INIT_RESULT), body({**INIT, "id": 2})]


def test_the_capture_file_of_the_lean_proxy_is_what_the_addon_writes_under_mitmdump(tmp_path: Path):
    # the same flows through the addon in both modes give the same records (apart from times)
    def run(background: bool) -> list:
        path = tmp_path / f"{background}.jsonl"

        async def main():
            addon = McpCapture(background=background)
            with taddons.context(addon) as tctx:
                tctx.configure(addon, mcptrace_output=str(path))
                addon.running()
                exchange(addon, post(INIT, resp=INIT_RESULT))
                exchange(
                    addon,
                    post(
                        {"jsonrpc": "2.0", "method": "notifications/initialized"},
                        resp=b"",
                        status=202,
                        resp_headers=[],
                    ),
                )
                addon.done()

        asyncio.run(main())
        return [
            (r.type, r.dir, r.raw, r.conn, r.http.get("status") if r.http else None) for r in records(path)
        ]

    assert run(True) == run(False)


class _ViewSpy:
    """A mitmproxy view: what the annotator announces with `update`."""

    def __init__(self):
        self.updated = []
        self.changed = asyncio.Event()

    def update(self, flows):
        self.updated.extend(flows)
        self.changed.set()


async def test_with_the_recording_thread_annotations_still_reach_the_flow_on_mitmproxys_loop(tmp_path):
    addon, spy = McpCapture(background=True), _ViewSpy()
    with taddons.context(addon, spy) as tctx:
        tctx.configure(addon, mcptrace_output=str(tmp_path / "cap.jsonl"))
        addon.running()
        try:
            f = post(INIT, resp=INIT_RESULT)
            exchange(addon, f)
            async with asyncio.timeout(10):
                while f not in spy.updated:
                    spy.changed.clear()
                    await spy.changed.wait()
            assert f.comment.startswith("MCP initialize · request/result")
            assert f.metadata["mcp.kind"] == "request/result"
        finally:
            addon.done()
