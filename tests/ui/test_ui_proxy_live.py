"""`mcptrace proxy` with the viewer: real mitmproxy in a thread, the real SDK over Streamable HTTP,
the viewer following the capture as the traffic arrives."""

from __future__ import annotations

import threading

from tests.sdk_peers import run_client, sdk_http_server
from tests.ui_support import SIZE, until, viewer
from tracer.cli.view import start_proxy_thread
from ui.app import McpTraceApp


async def test_the_viewer_shows_proxied_sdk_traffic_live(tmp_path):
    from addons.proxy import ProxyConfig, ProxyRunner

    with sdk_http_server() as url:
        runner = ProxyRunner(ProxyConfig(upstream=url, listen_port=0, output=str(tmp_path / "live.jsonl")))
        info = start_proxy_thread(runner)
        try:
            app = McpTraceApp(info.capture, follow=True, hint=info.client_url)
            async with app.run_test(size=SIZE) as pilot:
                await until(
                    pilot, lambda: getattr(app.screen, "view", None) is not None, "the capture to open"
                )
                scr = viewer(app)
                done = threading.Event()
                box = {}

                def client() -> None:
                    try:
                        box["ops"] = run_client("modern", url=info.client_url)
                    except Exception as exc:  # reported below
                        box["error"] = exc
                    finally:
                        done.set()

                threading.Thread(target=client, daemon=True).start()
                await until(pilot, done.is_set, "the SDK client", bound=90)
                assert "error" not in box, box.get("error")

                def seen(method: str) -> bool:
                    view = scr.view
                    return any(view.info(r).label == method for r in range(len(view)))

                await until(pilot, lambda: seen("tools/list") and seen("tools/call"), "the proxied requests")
                await until(
                    pilot,
                    lambda: all(scr.view.info(r).analysed for r in range(len(scr.view))),
                    "their analysis",
                )
                first = next(r for r in range(len(scr.view)) if scr.view.info(r).kind == "request")
                assert scr.view.info(first).era == "modern"  # the client spoke 2026-07-28
                partner = scr.view.info(first).partner
                assert partner is not None and scr.view.info(partner).kind == "result"
                assert info.client_url in scr.status.render_state().plain
        finally:
            runner.stop()
            info.thread.join(timeout=30)
