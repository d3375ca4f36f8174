"""The real-peer sweep: the official Python SDK client against its own server (both eras, stdio and
Streamable HTTP) and against @modelcontextprotocol/server-everything (stdio, Streamable HTTP,
HTTP+SSE), and the official TypeScript SDK v2 (tests/ts_peers/) against the Python SDK both ways
(TS client -> Python server, Python client -> TS server; stdio and Streamable HTTP, every mode),
recorded live by mcptrace (the tee and `mcptrace proxy`), then linted. Each capture comes with the findings it must show and the ones it may show (tests/real_findings.py).

    python -m tests.peer_sweep OUTDIR        # record every capture into OUTDIR and print its findings

Waits are on conditions with a bound; no sleeps.
"""

from __future__ import annotations

import collections
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client

from tests import real_findings as rf
from tests.everything_peer import BOUND_S, dump, everything_binary
from tests.proxy_peers import capture_records, everything_http, lint_findings, mcptrace_proxy
from tests.sdk_peers import REPO, run_clients, sdk_http_server, server_cmd
from tests.ts_peers import run_ts_client, ts_http_server, ts_server_cmd

TEE = [sys.executable, "-m", "tracer", "stdio", "-q"]
DEFAULT_LOGGING = REPO / "tests" / "servers" / "sdk_default_logging.py"
INIT = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"origin-probe","version":"1"}}}'
)
LONG_STEPS = 4


@dataclass(frozen=True)
class Expect:
    required: tuple[Callable, ...] = ()
    allowed: tuple[Callable, ...] = ()


def origin_probe(url: str) -> int:
    """POST an initialize with a foreign `Origin` (what a web page on another site would send);
    the HTTP status it got."""
    req = urllib.request.Request(
        url,
        data=INIT,
        method="POST",
        headers={
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "Origin": "https://evil.example",
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=BOUND_S) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as exc:
        exc.read()
        return exc.code


# -- the official SDK client against its own server ---------------------------------------------


def sdk_stdio(out: Path) -> dict[str, Path]:
    caps = {era: out / f"sdk-stdio-{era}.jsonl" for era in ("legacy", "modern", "auto")}
    run_clients([(era, None, [*TEE, "-o", str(cap), "--", *server_cmd()]) for era, cap in caps.items()])
    default = out / "sdk-default-logging-stdio.jsonl"
    anyio.run(_default_logging, [*TEE, "-o", str(default), "--", sys.executable, str(DEFAULT_LOGGING)])
    return {**{f"sdk-stdio-{e}": c for e, c in caps.items()}, "sdk-default-logging-stdio": default}


async def _default_logging(command: list[str]) -> None:
    with anyio.fail_after(BOUND_S):
        async with Client(StdioServerParameters(command=command[0], args=command[1:]), mode="legacy") as c:
            await c.call_tool("echo", {"text": "hello"})


def sdk_http(out: Path) -> dict[str, Path]:
    """Each era one after the other through one proxy, then a foreign-Origin request (the SDK
    server rightly answers 403)."""
    cap = out / "sdk-http.jsonl"
    with sdk_http_server() as url, mcptrace_proxy(url, cap) as proxy_url:
        for era in ("legacy", "modern", "auto"):
            run_clients([(era, proxy_url, None)])
        assert origin_probe(proxy_url) == 403
    return {"sdk-http": cap}


# -- the official SDK client against server-everything -----------------------------------------


async def everything_session(target, mode: str, cap: Path) -> None:
    """Tools, resources and prompts, then a long-running operation cancelled at its first progress;
    the server keeps reporting progress, and the session lasts until the capture holds all of it."""
    with anyio.fail_after(BOUND_S):
        async with Client(target, mode=mode, cache=None) as c:
            await c.list_tools()
            await c.call_tool("echo", {"message": "hello ✓"})
            await c.call_tool("get-sum", {"a": 2, "b": 40})
            resources = (await c.list_resources()).resources
            dump(await c.read_resource(resources[0].uri))
            await c.get_prompt("simple-prompt", {})
            before = cap.read_bytes().count(b"notifications/progress")
            first = anyio.Event()

            async def on_progress(progress, total, message) -> None:
                first.set()

            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await c.call_tool(
                        "trigger-long-running-operation",
                        {"duration": 2, "steps": LONG_STEPS},
                        progress_callback=on_progress,
                    )

                tg.start_soon(call)
                await first.wait()
                tg.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            while cap.read_bytes().count(b"notifications/progress") < before + LONG_STEPS:
                await anyio.sleep(0.05)  # polling the capture: bounded by fail_after
            await c.call_tool("echo", {"message": "after the cancel"})


def everything_stdio(out: Path) -> dict[str, Path]:
    binary = str(everything_binary())
    caps = {}
    for mode in ("legacy", "auto"):
        cap = caps[f"everything-stdio-{mode}"] = out / f"everything-stdio-{mode}.jsonl"
        target = StdioServerParameters(command=TEE[0], args=[*TEE[1:], "-o", str(cap), "--", binary, "stdio"])
        anyio.run(everything_session, target, mode, cap)
    return caps


def everything_streamable(out: Path) -> dict[str, Path]:
    cap = out / "everything-http.jsonl"
    with everything_http("streamableHttp") as url, mcptrace_proxy(url, cap) as proxy_url:
        for mode in ("legacy", "auto"):
            anyio.run(everything_session, proxy_url, mode, cap)
        assert origin_probe(proxy_url) == 200  # served: server-everything does not check Origin
    return {"everything-http": cap}


def everything_sse(out: Path) -> dict[str, Path]:
    cap = out / "everything-http-sse.jsonl"
    with everything_http("sse") as url, mcptrace_proxy(url, cap) as proxy_url:
        anyio.run(everything_session, sse_client(proxy_url), "legacy", cap)
    return {"everything-http-sse": cap}


EXPECT = {
    "sdk-stdio-legacy": Expect(),
    "sdk-stdio-modern": Expect(required=(rf.deprecated_logging, rf.no_discover_probe)),
    "sdk-stdio-auto": Expect(required=(rf.deprecated_logging,)),
    "sdk-default-logging-stdio": Expect(required=(rf.log_without_capability,)),
    "sdk-http": Expect(required=(rf.deprecated_logging,), allowed=(rf.answer_after_cancel,)),
    "everything-stdio-legacy": Expect(required=(rf.progress_after_cancel,)),
    "everything-stdio-auto": Expect(required=(rf.progress_after_cancel,)),
    "everything-http": Expect(
        required=(rf.progress_after_cancel, rf.foreign_origin_served, rf.probe_rejected_with_null_id)
    ),
    "everything-http-sse": Expect(required=(rf.progress_after_cancel, rf.http_sse_deprecated)),
}


# -- the official TypeScript SDK v2 (tests/ts_peers/) against the Python SDK, both directions ------

TS_MODES = ("legacy", "modern", "auto")


def ts_client_stdio(out: Path) -> dict[str, Path]:
    """The TS client, each mode, against the Python fixture server through the tee. In auto mode the
    TS SDK starts the server command twice (a discarded probe process, then the session): both tees
    append to the one capture file, which must hold both sessions."""
    caps = {}
    for mode in TS_MODES:
        cap = caps[f"ts-client-stdio-{mode}"] = out / f"ts-client-stdio-{mode}.jsonl"
        run_ts_client(mode, command=[*TEE, "-o", str(cap), "--", *server_cmd()])
    return caps


def ts_client_http(out: Path) -> dict[str, Path]:
    cap = out / "ts-client-http.jsonl"
    with sdk_http_server() as url, mcptrace_proxy(url, cap) as proxy_url:
        for mode in TS_MODES:
            run_ts_client(mode, url=proxy_url)
    return {"ts-client-http": cap}


def ts_server_stdio(out: Path) -> dict[str, Path]:
    """The Python fixture client, each era, against the TS server through the tee."""
    caps = {era: out / f"ts-server-stdio-{era}.jsonl" for era in TS_MODES}
    run_clients([(era, None, [*TEE, "-o", str(cap), "--", *ts_server_cmd()]) for era, cap in caps.items()])
    return {f"ts-server-stdio-{e}": c for e, c in caps.items()}


def ts_server_http(out: Path) -> dict[str, Path]:
    """Each era one after the other through one proxy, then a foreign-Origin request (the TS server,
    with the SDK's documented Origin check in front, answers 403)."""
    cap = out / "ts-server-http.jsonl"
    with ts_http_server() as url, mcptrace_proxy(url, cap) as proxy_url:
        for era in TS_MODES:
            run_clients([(era, proxy_url, None)])
        assert origin_probe(proxy_url) == 403
    return {"ts-server-http": cap}


def ts_both_stdio(out: Path) -> dict[str, Path]:
    """The TS client against the TS server, each mode, through the tee."""
    caps = {}
    for mode in TS_MODES:
        cap = caps[f"ts-both-stdio-{mode}"] = out / f"ts-both-stdio-{mode}.jsonl"
        run_ts_client(mode, command=[*TEE, "-o", str(cap), "--", *ts_server_cmd()])
    return caps


def ts_both_http(out: Path) -> dict[str, Path]:
    cap = out / "ts-both-http.jsonl"
    with ts_http_server() as url, mcptrace_proxy(url, cap) as proxy_url:
        for mode in TS_MODES:
            run_ts_client(mode, url=proxy_url)
    return {"ts-both-http": cap}


def ts_client_everything(out: Path) -> dict[str, Path]:
    """The TS client (ping and the lists) against server-everything, a legacy-only server: in auto
    mode its probe fails (on stdio on a discarded sibling process) and it falls back to initialize."""
    binary = str(everything_binary())
    caps = {}
    for mode in ("legacy", "auto"):
        cap = caps[f"ts-client-everything-stdio-{mode}"] = out / f"ts-client-everything-stdio-{mode}.jsonl"
        run_ts_client(mode, command=[*TEE, "-o", str(cap), "--", binary, "stdio"], script="list")
    cap = caps["ts-client-everything-http"] = out / "ts-client-everything-http.jsonl"
    with everything_http("streamableHttp") as url, mcptrace_proxy(url, cap) as proxy_url:
        for mode in ("legacy", "auto"):
            run_ts_client(mode, url=proxy_url, script="list")
    return caps


# (the scripted sessions ask for log messages in modern requests, as the SDK fixture client does)
EXPECT.update(
    {
        "ts-client-stdio-legacy": Expect(),
        "ts-client-stdio-modern": Expect(required=(rf.deprecated_logging,)),
        "ts-client-stdio-auto": Expect(required=(rf.deprecated_logging,)),
        "ts-client-http": Expect(required=(rf.deprecated_logging, rf.listen_cancel_posted)),
        "ts-server-stdio-legacy": Expect(),
        "ts-server-stdio-modern": Expect(required=(rf.deprecated_logging, rf.no_discover_probe)),
        "ts-server-stdio-auto": Expect(required=(rf.deprecated_logging,)),
        "ts-server-http": Expect(required=(rf.deprecated_logging, rf.origin_rejected_with_null_id)),
        "ts-both-stdio-legacy": Expect(),
        "ts-both-stdio-modern": Expect(required=(rf.deprecated_logging,)),
        "ts-both-stdio-auto": Expect(required=(rf.deprecated_logging,)),
        "ts-both-http": Expect(
            required=(rf.deprecated_logging, rf.stream_refused_with_null_id, rf.listen_cancel_posted)
        ),
        "ts-client-everything-stdio-legacy": Expect(),
        "ts-client-everything-stdio-auto": Expect(),
        "ts-client-everything-http": Expect(required=(rf.probe_rejected_with_null_id,)),
    }
)
SDK_RUNS = (sdk_stdio, sdk_http)
TS_RUNS = (
    ts_client_stdio,
    ts_client_http,
    ts_server_stdio,
    ts_server_http,
    ts_both_stdio,
    ts_both_http,
    ts_client_everything,
)
EVERYTHING_RUNS = (everything_stdio, everything_streamable, everything_sse)


def judge(name: str, cap: Path) -> tuple[list, list, list]:
    """(findings, the unexpected ones, the required ones missing) of capture NAME."""
    findings = lint_findings(cap)
    by_seq = rf.recording_views(capture_records(cap))
    want = EXPECT[name]
    return (
        findings,
        rf.unexpected(findings, by_seq, want.required + want.allowed),
        rf.missing(findings, by_seq, want.required),
    )


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "sweep-captures")
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.jsonl"):
        old.unlink()  # a capture file is appended to: start clean
    bad = 0
    for run in (*SDK_RUNS, *EVERYTHING_RUNS, *TS_RUNS):
        for name, cap in run(out).items():
            findings, extra, absent = judge(name, cap)
            bad += len(extra) + len(absent)
            print(
                f"{cap}: {dict(collections.Counter(f.rule for f in findings))}"
                f"{f'  UNEXPECTED {[(f.rule, f.seq, f.message) for f in extra]}' if extra else ''}"
                f"{f'  MISSING {absent}' if absent else ''}"
            )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
