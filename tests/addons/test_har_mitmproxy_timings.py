"""mitmproxy's HAR (`hardump`) times an entry's `connect` apart from the entry: its server
connection is set up before the request comes (or while it waits), not after `startedDateTime` as
HAR 1.2 has it (tracer.inputs.har.connect_apart). The real SDK client's session with the real SDK
server (session ids) through stock mitmdump, whose first server connection is slow to set up
(tests/mitm_slow_connect.py: a loaded machine). Before, the `initialize` was read after the
requests its answer's session id made possible: one client read as two connections, the session
"legacy (no initialize captured)", and the client's deliberate mistake (a `resources/subscribe` the
server's capabilities do not allow: MCP418, tests/plain_client.py --wrong) was not found, while the
flow file of the same traffic read as one and found it."""

from __future__ import annotations

import io
import json
import subprocess
import sys

from tests.proxy_peers import lint_findings, mitmdump
from tests.sdk_peers import BOUND_S, REPO, sdk_http_server
from tracer.cli.inputs import register_optional_inputs
from tracer.inputs import open_input
from tracer.inputs.har import read as har_read
from tracer.inputs.harstream import stream
from tracer.inputs.hartail import read_har_tail
from tracer.model import Record, RecordType


def _records(path) -> list[Record]:
    register_optional_inputs()
    return [r for r in open_input(str(path)).records if isinstance(r, Record)]


def test_a_mitmproxy_har_of_one_sdk_session_with_a_slow_connect_reads_as_its_flow_file(tmp_path):
    flows, har = tmp_path / "session.mitm", tmp_path / "session.har"
    slow = str(REPO / "tests" / "mitm_slow_connect.py")
    with sdk_http_server() as url:
        origin = url.rsplit("/", 1)[0]
        with mitmdump(
            "--mode", f"reverse:{origin}", "-s", slow, "-w", str(flows), "--set", f"hardump={har}"
        ) as port:
            client = [
                sys.executable,
                str(REPO / "tests" / "plain_client.py"),
                "--url",
                f"http://127.0.0.1:{port}/mcp",
                "--wrong",
            ]
            subprocess.run(client, cwd=REPO, check=True, timeout=BOUND_S, capture_output=True)
    first = json.loads(har.read_text())["log"]["entries"][0]
    assert first["timings"]["connect"] > 0 and "initialize" in first["request"]["postData"]["text"]
    for path in (flows, har):
        messages = [r for r in _records(path) if r.type is RecordType.MESSAGE]
        assert json.loads(messages[0].raw)["method"] == "initialize", path
        assert len({r.conn for r in messages}) == 1, path  # one client, one session
    found = [f.rule for f in lint_findings(har)]
    assert "MCP418" in found and found == [f.rule for f in lint_findings(flows)]
    # the viewer's entry-by-entry reader, a document cut short and the viewer's tail read the same
    data = har.read_bytes()
    cut = data[: len(data) * 2 // 3]  # (after the first entries: the log's creator is read)
    for doc in (data, cut):
        whole = [(r.conn, r.t_ns, r.raw) for r in har_read(io.BytesIO(doc), "h") if isinstance(r, Record)]
        assert whole == [(r.conn, r.t_ns, r.raw) for r in stream(io.BytesIO(doc), "h", [])]
        assert json.loads(whole[0][2])["method"] == "initialize"
    tail = [json.loads(line) for line in read_har_tail(str(har))]
    assert len({line.get("conn") for line in tail}) == 1
