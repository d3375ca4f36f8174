"""A HAR's URL and headers are JSON strings, and JSON allows a lone surrogate escape ("\\ud800")
that no UTF-8 writer takes: `mcptrace export` writes such an input as OTLP/JSON and as HAR (the
text shown as its escape) instead of stopping with "internal error"."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

INIT = '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}'


def _har(url: str, header: str) -> dict:
    entry = {
        "startedDateTime": "2026-11-29T10:00:00.000Z",
        "time": 2,
        "request": {
            "method": "POST",
            "url": url,
            "headers": [
                {"name": "content-type", "value": "application/json"},
                {"name": "x-odd", "value": header},
            ],
            "postData": {"mimeType": "application/json", "text": INIT},
        },
        "response": {
            "status": 200,
            "headers": [{"name": "content-type", "value": "application/json"}],
            "content": {"mimeType": "application/json", "text": '{"jsonrpc":"2.0","id":1,"result":{}}'},
        },
    }
    return {"log": {"version": "1.2", "entries": [entry]}}


@pytest.mark.parametrize("fmt", ["otlp-json", "har"])
@pytest.mark.parametrize(
    ("url", "header"), [("http://h/mcp\ud800", "ok"), ("http://h/mcp", "v\udfff")], ids=["url", "header"]
)
def test_a_lone_surrogate_in_a_hars_url_or_header_is_exported(tmp_path, fmt, url, header):
    src, out = tmp_path / "in.har", tmp_path / "out"
    src.write_text(json.dumps(_har(url, header)))  # (ensure_ascii: the surrogate as its escape)
    run = subprocess.run(
        [sys.executable, "-m", "tracer", "export", "-f", fmt, str(src), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0 and "internal error" not in run.stderr, run.stderr
    text = out.read_bytes().decode("utf-8")  # valid UTF-8 throughout
    if fmt == "har" or "\ud800" in url:  # (spans carry the URL, not the request's headers)
        assert "\\\\ud800" in text or "\\\\udfff" in text  # the surrogate, shown as its escape
