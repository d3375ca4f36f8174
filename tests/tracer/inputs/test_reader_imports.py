"""Start-up: a lint of mcptrace's own small capture loads no other input's reader (nor the HTTP replay
a HAR or a flow file needs), nor the --jobs pool it does not start; each other input still loads
its own reader and reads as before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CAPTURE = ROOT / "fixtures" / "captures" / "sdk-stdio-modern.jsonl"
READERS = (
    "tracer.inputs.har",
    "tracer.inputs.hostlog",
    "tracer.inputs.ndjson",
    "tracer.http.flows",
    "addons.mitm_stream",
    "tracer.parallel_pool",
)

# lint as the command line runs it, in a fresh interpreter; then which readers it loaded
_PROBE = """
import contextlib, io, json, sys
from tracer.cli import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "out": out.getvalue(), "loaded": sorted(m for m in %r if m in sys.modules)}))
""" % (READERS,)


def _lint(path: Path) -> dict:
    cmd = [sys.executable, "-c", _PROBE, "lint", "--no-config", "--no-progress", "-f", "json", "--jobs", "2"]
    cmd.append(str(path))
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_linting_a_capture_loads_no_other_reader():
    run = _lint(CAPTURE)
    assert run["code"] == 0
    assert json.loads(run["out"])["summary"]["messages"] == 33
    assert run["loaded"] == []


INIT = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}'


@pytest.mark.parametrize(
    ("name", "text", "reader"),
    [
        ("calls.ndjson", INIT + "\n", "tracer.inputs.ndjson"),
        (
            "mcp.log",
            f"2025-06-13T14:44:29.945Z [info] [fs] Message from client: {INIT} {{ metadata: undefined }}\n",
            "tracer.inputs.hostlog",
        ),
        ("calls.har", json.dumps({"log": {"version": "1.2", "entries": []}}), "tracer.inputs.har"),
    ],
)
def test_another_input_loads_its_reader_when_detected(tmp_path, name, text, reader):
    path = tmp_path / name
    path.write_text(text)
    run = _lint(path)
    assert run["code"] in (0, 1)  # (findings or none: it was read, not refused as unknown)
    assert json.loads(run["out"])["summary"]["messages"] == (0 if name.endswith(".har") else 1)
    assert reader in run["loaded"]
