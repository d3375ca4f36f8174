"""The official TypeScript SDK v2 (@modelcontextprotocol/client and /server 2.4) as test peers.

client.mjs runs the Python fixture client's scripted session with the TS SDK client (modes legacy,
auto, modern); server.mjs serves the Python fixture server's surface with the TS SDK server (stdio
and Streamable HTTP). The npm packages are installed into .ci/node on first use (tests/node_peers.py:
skipped where Node is absent, a failure where npm fails), and the scripts are copied next to them,
because Node resolves an ES module's bare imports from the script's own directory upwards.

    ops = run_ts_client("auto", command=[*tee, "--", *server_cmd()])   # TS client, Python server
    with ts_http_server() as url: ...                                  # TS server on a free port
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.node_peers import NODE_DIR, _npm, _run_npm
from tests.sdk_peers import BOUND_S, REPO, ClientFailed, serve_http

HERE = Path(__file__).resolve().parent
RUN_DIR = NODE_DIR / "ts-peers"
PACKAGES = (
    "@modelcontextprotocol/client@^2.4.0",
    "@modelcontextprotocol/server@^2.4.0",
    "@modelcontextprotocol/node@^2.1.2",
)
MARKERS = ("client", "server", "node")


def ts_dir() -> Path:
    """.ci/node/ts-peers with the scripts, the SDK v2 packages installed beside it."""
    _npm()  # skips the test where Node is absent: no Node peer can run there
    mods = NODE_DIR / "node_modules" / "@modelcontextprotocol"
    if not all((mods / m / "package.json").exists() for m in MARKERS):
        NODE_DIR.mkdir(parents=True, exist_ok=True)
        _run_npm(["install", *PACKAGES], NODE_DIR)
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    for script in HERE.glob("*.mjs"):
        dest = RUN_DIR / script.name
        if not dest.exists() or dest.read_bytes() != script.read_bytes():
            dest.write_bytes(script.read_bytes())
    return RUN_DIR


def ts_server_cmd(*extra: str) -> list[str]:
    """The stdio command line of the TS SDK v2 server."""
    return [shutil.which("node") or "node", str(ts_dir() / "server.mjs"), *extra]


def ts_client_argv(
    mode: str, url: str | None = None, command: list[str] | None = None, script: str = "fixture"
) -> list[str]:
    target = ["--url", url] if url else ["--", *(command or ts_server_cmd())]
    return [
        shutil.which("node") or "node",
        str(ts_dir() / "client.mjs"),
        "--mode",
        mode,
        "--script",
        script,
        *target,
    ]


def run_ts_client(
    mode: str, *, url: str | None = None, command: list[str] | None = None, script: str = "fixture"
) -> list[dict[str, Any]]:
    """Run the scripted TS client to the end; its operations (one dict per stdout line). SCRIPT
    "fixture" needs the fixture surface; "list" runs against any server (ping and the lists)."""
    p = subprocess.run(
        ts_client_argv(mode, url, command, script),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        check=False,
    )
    if p.returncode != 0:
        raise ClientFailed(f"TS client exit {p.returncode}; stderr:\n{p.stderr}\nstdout:\n{p.stdout}")
    return [json.loads(line) for line in p.stdout.splitlines()]


@contextmanager
def ts_http_server() -> Iterator[str]:
    """The TS SDK v2 server over Streamable HTTP on a free loopback port; yields its URL."""
    with serve_http(ts_server_cmd("--http", "--port", "0"), "the TS SDK HTTP server") as url:
        yield url
