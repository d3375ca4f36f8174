"""`mcptrace view --follow x.mitm` while a real `mitmdump -w x.mitm` proxies a real SDK session: each
exchange shows as mitmdump writes its flow, the rows shown never change, and once mitmdump has
stopped the viewer holds every message of the finished file. The viewer opens the file while it is
still empty (mitmdump has written nothing yet) and waits to tell its format."""

from __future__ import annotations

from contextlib import ExitStack

import anyio
from mcp import Client

from tests.proxy_peers import mitmdump
from tests.sdk_peers import sdk_http_server
from tests.tracer.inputs.test_follow_mitm import messages
from tests.tracer.view.test_view_lazy_rows import _converted_lines
from tests.ui_support import SIZE, until, viewer
from tracer.cli.inputs import register_optional_inputs
from ui.app import McpTraceApp


def _rows(scr) -> list[bytes]:
    view = scr.view
    return [] if view is None else [view.index.line(r) for r in range(len(view.index))]


def _shows(scr, direction: str, *parts: str) -> bool:
    return any(d == direction and all(p in text for p in parts) for d, text in messages(_rows(scr)))


async def test_a_flow_file_mitmdump_is_writing_shows_each_exchange_as_its_flow_is_written(tmp_path):
    register_optional_inputs()
    path = tmp_path / "live.mitm"
    with sdk_http_server() as url, ExitStack() as proxy:
        port = url.rsplit(":", 1)[1].split("/")[0]
        listening = proxy.enter_context(
            mitmdump("--mode", f"reverse:http://127.0.0.1:{port}", "-w", str(path))
        )
        app = McpTraceApp(str(path), follow=True)
        async with app.run_test(size=SIZE) as pilot:
            scr = viewer(app)
            with anyio.fail_after(120):
                async with Client(f"http://127.0.0.1:{listening}/mcp", mode="legacy", cache=None) as c:
                    await c.list_tools()
                    await until(
                        pilot, lambda: _shows(scr, "s2c", '"tools"', '"echo"'), "the tools/list answer"
                    )
                    assert scr.follow and scr.view.follow and scr.status.state.follow
                    await c.call_tool("echo", {"text": "written live"})
                    await until(pilot, lambda: _shows(scr, "s2c", "written live"), "the tools/call answer")
                    before = _rows(scr)
            proxy.close()  # mitmdump stops: every flow of the session is written
            every = messages(_converted_lines(str(path)))
            await until(pilot, lambda: messages(_rows(scr)) == every, "every message of the finished file")
            assert _rows(scr)[: len(before)] == before, "a row shown never changes"
            assert scr.follow and scr.view.follow
