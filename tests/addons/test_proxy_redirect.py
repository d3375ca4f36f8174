"""An upstream that redirects the host to its own address sends the host past `mcptrace proxy`:
the official Python SDK's server before 1.10 is mounted at `/mcp/` and answers `/mcp` with a 307
to `http://server/mcp/`, which the SDK client follows straight to the server, so the capture holds
nothing of the session but the redirected requests. The proxy cannot see that traffic; it must say
so, with the URL to give instead. Reproduced with the SDK 2.3 server the other way round: it serves
`/mcp`, and Starlette answers `/mcp/` with a 307 to `http://server/mcp`; the host follows
redirects, as the SDK 1.x client (httpx) does (the 2.x client refuses to follow them)."""

from __future__ import annotations

import json
import urllib.request

from tests.cases import initialize
from tests.proxy_peers import BOUND_S, _stop, capture_records, start_proxy
from tests.sdk_peers import sdk_http_server
from tracer.model import Direction, RecordType

INIT = initialize(1, "h")


class _Follow307(urllib.request.HTTPRedirectHandler):
    """Re-send the POST, body and all, where a 307 points (urllib only follows GETs)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return urllib.request.Request(newurl, data=req.data, headers=dict(req.header_items()), method="POST")


def _initialize(url: str) -> tuple[str, int, bytes]:
    """POST an initialize, following redirects: (the URL that answered, its status, its body)."""
    req = urllib.request.Request(
        url,
        data=json.dumps(INIT).encode(),
        method="POST",
        headers={"Accept": "application/json, text/event-stream", "Content-Type": "application/json"},
    )
    with urllib.request.build_opener(_Follow307).open(req, timeout=BOUND_S) as resp:
        return resp.url, resp.status, resp.read(4096)


def test_a_redirect_to_the_upstream_itself_is_reported_with_the_url_to_use(tmp_path):
    cap = tmp_path / "redirected.jsonl"
    with sdk_http_server() as url:
        proc, err, proxy_url = start_proxy(url + "/", cap)
        try:
            answer = _initialize(proxy_url)
        finally:
            rc = _stop(proc)
            lines = err.rest()
            proc.stdout.close()
            proc.stderr.close()
    # the handshake worked, with the server directly
    assert rc == 0 and answer[:2] == (url, 200) and b"serverInfo" in answer[2]
    said = [line for line in lines if "redirected the host" in line]
    assert said == [
        f"mcptrace: the upstream redirected the host (307) to {url}, past the proxy: what the "
        f"host sends there is not captured; give --upstream {url}"
    ], lines
    # what the capture shows: requests the proxy saw redirected, no server message at all
    recs = capture_records(cap)
    messages = [r for r in recs if r.type is RecordType.MESSAGE]
    assert len(messages) == 1 and messages[0].dir is Direction.C2S
    assert [r.http["status"] for r in recs if r.type is RecordType.HTTP] == [307]
