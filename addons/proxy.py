"""Run mitmproxy in-process with the MCP capture addon: what `mcptrace proxy` starts.

    runner = ProxyRunner(ProxyConfig(upstream="http://127.0.0.1:8765/mcp", listen_port=0))
    runner.listeners.append(lambda rec: ...)   # every record, as it is written (e.g. a live viewer)
    runner.run(ready=lambda info: print(info.client_url))   # blocks until stop() or a signal

`serve()` is the same as a coroutine, for a caller that owns an asyncio loop (a Textual app);
`stop()` may be called from any thread. Listeners run on the capture's recording thread (never on
mitmproxy's event loop, which only forwards bytes): a UI hands records to its own thread
(Textual: `call_from_thread`). The master carries only the mitmproxy addons the modes and options
need (addons/lean.py). The proxy binds to loopback unless
the caller asks for another address.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from mitmproxy import master, options
from mitmproxy.proxy import mode_specs

from addons.lean import LeanMaster, needed_addons
from addons.mcp_capture import McpCapture
from addons.upstream_errors import note_failed_connection
from tracer.model import Record
from tracer.redact import PROCESS_HASHER, redact_text, redact_url

DEFAULT_PORT = 8788
CA_CERT = "~/.mitmproxy/mitmproxy-ca-cert.pem"


class ProxyError(Exception):
    """The proxy could not start (bad option, port in use...): one line for the user."""


@dataclass
class ProxyConfig:
    upstream: str | None = None  # reverse-proxy target, e.g. http://127.0.0.1:8765/mcp
    modes: list[str] = field(default_factory=list)  # mitmproxy mode specs; default reverse:<upstream>
    listen_host: str = "127.0.0.1"
    listen_port: int = DEFAULT_PORT
    output: str | None = None  # capture file (default: the captures directory)
    overwrite: bool = False  # replace an existing output file instead of appending a session to it
    redact: bool = True
    flow_filter: str = ""
    label: str | None = None
    annotate: bool = False  # MCP annotations on flows: only useful with a mitmproxy UI attached
    settings: dict[str, str] = field(default_factory=dict)  # any other mitmproxy option (--set)
    scripts: list[str] = field(default_factory=list)  # the user's mitmproxy addon scripts (-s)
    lean: bool = True  # only the mitmproxy addons the modes and settings need (addons/lean.py)


@dataclass
class ProxyInfo:
    """What the user needs once the proxy listens."""

    listen: list[tuple[str, int]]
    modes: list[str]
    capture: str
    client_url: str | None  # reverse mode: the URL to give the host instead of the upstream one
    lines: list[str]  # what to print, one instruction per line


def upstream_target(url: str) -> tuple[str, str]:
    """(mitmproxy reverse target `scheme://host:port`, the path and query to keep) of an upstream
    URL; ProxyError when it is not an http(s) URL. Error lines show the URL with its credentials
    redacted: they end up in terminals and CI logs."""
    shown = shown_url(url)
    try:
        u = urlsplit(url)
        u.port  # noqa: B018  (raises ValueError for a bad port)
    except ValueError as exc:
        raise ProxyError(f"--upstream {shown!r}: {redact_url(str(exc), PROCESS_HASHER)}") from None
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ProxyError(f"--upstream {shown!r} is not an http:// or https:// URL")
    if u.username is not None or u.password is not None:
        # mitmproxy's reverse mode cannot send userinfo on; the host must send its credentials itself
        raise ProxyError(
            f"--upstream {shown!r}: credentials in the URL (user:password@) are not passed on "
            "by the reverse proxy; give the URL without them and let the host authenticate "
            "(e.g. an Authorization header)"
        )
    rest = (u.path or "/") + (f"?{u.query}" if u.query else "")
    return f"{u.scheme}://{u.netloc}", rest


def shown_url(url: str) -> str:
    """A URL as the proxy prints it: credentials (userinfo, `?api_key=`...) redacted."""
    return redact_url(url, PROCESS_HASHER)


def _url_host(host: str) -> str:
    if host in ("", "0.0.0.0", "::"):
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


class _UpstreamFailures:
    """One line on stderr (through the runner's `notice`) per failed connection to a server, at
    most one every EVERY_S, with the count of those not shown; the host gets a 502 with a short
    plain body naming it (addons/upstream_errors.py), the capture the request with its error (lazy
    connections: see ProxyRunner._build)."""

    EVERY_S = 5.0

    def __init__(self, runner: ProxyRunner):
        self.runner = runner
        self.failures = 0
        self._unsaid = 0
        self._said_at: float | None = None

    def server_connect_error(self, data) -> None:
        self.failures += 1
        server = data.server
        host, port = server.address if server.address else ("?", 0)
        where = (
            self.runner.cfg.upstream
            if self.runner.cfg.upstream and not self.runner.cfg.modes
            else f"{_url_host(host)}:{port}"
        )
        if isinstance(server.error, str):
            note_failed_connection(server.error, redact_url(where, PROCESS_HASHER))
        now = time.monotonic()
        if self._said_at is not None and now - self._said_at < self.EVERY_S:
            self._unsaid += 1
            return
        self._said_at = now
        more = f" ({self._unsaid} more failed connections not shown)" if self._unsaid else ""
        self._unsaid = 0
        self.runner.notice(
            f"cannot connect to the upstream {where}: {server.error or 'failed'}; the host got a 502{more}"
        )

    def done(self) -> None:
        if self._unsaid:
            self.runner.notice(f"{self._unsaid} more failed upstream connections ({self.failures} in all)")
            self._unsaid = 0


class _RedirectsPastProxy:
    """Reverse mode: an upstream redirect whose `Location` names the upstream itself (a server
    mounted at `/mcp/` answering `/mcp` with 307, as the official Python SDK's before 1.10 does)
    sends the host past the proxy: the host follows it straight to the server and nothing of that
    session is captured but the redirected requests. The proxy says so once per location, with the
    URL to give as --upstream instead."""

    CAP = 16  # locations already reported

    def __init__(self, runner: ProxyRunner):
        self.runner = runner
        self.origin = _origin(runner.cfg.upstream or "")
        self.said: set[str] = set()

    def responseheaders(self, flow) -> None:
        resp = flow.response
        if resp is None or not 300 <= resp.status_code < 400 or self.origin is None:
            return
        location = resp.headers.get("location")
        if not location or _origin(location) != self.origin or len(self.said) >= self.CAP:
            return
        if location in self.said:
            return
        self.said.add(location)
        shown = shown_url(location)
        self.runner.notice(
            f"the upstream redirected the host ({resp.status_code}) to {shown}, past the proxy: what "
            f"the host sends there is not captured; give --upstream {shown}"
        )


def _origin(url: str) -> tuple[str, str, int] | None:
    try:
        u = urlsplit(url)
        port = u.port or {"http": 80, "https": 443}.get(u.scheme)
    except ValueError:
        return None
    if u.scheme not in ("http", "https") or not u.hostname:
        return None
    return u.scheme, u.hostname.lower(), port


class _StartupCheck:
    """Reports the listen addresses once mitmproxy runs, or why it could not listen."""

    def __init__(self, runner: ProxyRunner):
        self.runner = runner

    def running(self) -> None:
        self.runner._started()


class ProxyRunner:
    def __init__(self, cfg: ProxyConfig, listeners: list[Callable[[Record], Any]] | None = None):
        self.cfg = cfg
        self.addon = McpCapture(background=True)
        self.addon.managed = True  # the capture is opened once the proxy listens (`_describe`)
        self.listeners = self.addon.listeners
        self.listeners.extend(listeners or [])
        self.master: master.Master | None = None
        self.info: ProxyInfo | None = None
        self.error: str | None = None
        self._ready: Callable[[ProxyInfo], Any] | None = None
        self._errors: list[str] = []
        self.notices: list[str] = []  # what the proxy had to say while running (failed upstreams...)
        self.on_notice: Callable[[str], Any] | None = None  # headless: print each one as it comes
        self.upstream_failures = _UpstreamFailures(self)

    def notice(self, line: str) -> None:
        if len(self.notices) < 100:  # (bounded: the viewer prints them when it closes)
            self.notices.append(line)
        if self.on_notice is not None:
            self.on_notice(line)

    # -- configuration -------------------------------------------------------------------------

    def _modes(self) -> list[str]:
        cfg = self.cfg
        if cfg.modes:
            modes = list(cfg.modes)
        elif cfg.upstream:
            modes = [f"reverse:{upstream_target(cfg.upstream)[0]}"]
        else:
            raise ProxyError("give --upstream URL (reverse proxy) or --mode MODE")
        for m in modes:
            try:
                mode_specs.ProxyMode.parse(m)
            except ValueError as exc:
                # (the error may quote the mode's URL, cut short: its credentials are hidden wherever they show)
                raise ProxyError(redact_text(f"invalid mitmproxy mode {m!r}: {exc}", m)) from None
        return modes

    def _label(self) -> str:
        if self.cfg.label:
            return self.cfg.label
        if self.cfg.upstream:
            return f"proxy-{urlsplit(self.cfg.upstream).hostname or 'upstream'}"
        return "proxy"

    def _build(self) -> master.Master:
        cfg = self.cfg
        modes = self._modes()
        opts = options.Options(mode=modes, listen_host=cfg.listen_host, listen_port=cfg.listen_port)
        m = LeanMaster(opts)
        m.addons.add(*needed_addons(modes, cfg.settings, lean=cfg.lean))
        m.addons.add(self.addon, _StartupCheck(self), self.upstream_failures)
        if cfg.upstream and not cfg.modes:
            # A reverse proxy connects to the upstream when a request comes, not when the host
            # connects ("eager"): an upstream that is down then costs the host a 502 and the capture
            # a request with its error, where eager mitmproxy just drops the host's connection.
            opts.update(connection_strategy="lazy")
            m.addons.add(_RedirectsPastProxy(self))
        settings = {
            "mcptrace_redact": cfg.redact,
            "mcptrace_filter": cfg.flow_filter,
            "mcptrace_annotate": cfg.annotate,
            "mcptrace_overwrite": cfg.overwrite,
        }
        if cfg.output:
            settings["mcptrace_output"] = cfg.output
        try:
            opts.update(**settings)
            if cfg.settings:
                opts.set(*[f"{k}={v}" for k, v in cfg.settings.items()])
            if cfg.scripts:  # (mitmproxy's script loader runs them before the capture addon, as in mitmdump)
                opts.update(scripts=list(cfg.scripts))
        except Exception as exc:  # OptionsError, KeyError for an unknown option
            raise ProxyError(redact_text(f"mitmproxy option: {exc}", *cfg.settings.values())) from None
        self.addon.header_extra = {"upstream": cfg.upstream, "label": self._label(), "modes": modes}
        return m

    # -- life cycle ------------------------------------------------------------------------------

    async def serve(self, ready: Callable[[ProxyInfo], Any] | None = None) -> None:
        """Run until `stop()`. Raises ProxyError when mitmproxy cannot start."""
        self._ready = ready
        handler = _ErrorCollector(self._errors)
        mlog = logging.getLogger("mitmproxy")
        mlog.addHandler(handler)
        try:
            self.master = self._build()
            await self.master.run()
            # mitmproxy leaves its listening sockets to the process's exit; the live viewer runs
            # the proxy in a thread of its own process, so close them here
            ps = self.master.addons.get("proxyserver")
            if ps is not None:
                await ps.servers.update([])
        finally:
            mlog.removeHandler(handler)
        if self.error:
            raise ProxyError(redact_text(self.error, self.cfg.upstream or "", *self.cfg.modes))

    def run(self, ready: Callable[[ProxyInfo], Any] | None = None, *, handle_signals: bool = True) -> None:
        async def main() -> None:
            if handle_signals:
                loop = asyncio.get_running_loop()
                # SIGHUP too: a terminal closed under `--no-ui` (an ssh session dropping) stops the
                # proxy as Ctrl-C does; its default action killed it with exchanges still unwritten
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                    loop.add_signal_handler(sig, self.stop)
            await self.serve(ready)

        asyncio.run(main())

    def stop(self) -> None:
        """Stop the proxy (thread-safe); the capture is closed once mitmproxy has shut down."""
        if self.master is not None:
            self.master.shutdown()

    def _started(self) -> None:
        ps = self.master.addons.get("proxyserver")
        failed = [s for s in ps.servers if s.last_exception is not None]
        if failed or not ps.listen_addrs():
            why = (
                str(failed[0].last_exception)
                if failed
                else (self._errors[0] if self._errors else "no listener")
            )
            why = why.splitlines()[0] if why.strip() else "no listener"  # one line for the user
            self.error = f"cannot start the proxy: {why}"
            self.master.shutdown()
            return
        listen = [(a[0], a[1]) for a in ps.listen_addrs()]
        try:
            self.info = self._describe(listen)
        except OSError as exc:  # the output was checked up front; this is what changed since
            self.error = f"cannot write the capture {self.addon.path}: {exc.strerror or exc}"
            self.master.shutdown()
            return
        if self._ready is not None:
            self._ready(self.info)

    def _describe(self, listen: list[tuple[str, int]]) -> ProxyInfo:
        capture = self.addon.open()
        modes = self._modes()
        host, port = listen[0]
        lines: list[str] = []
        client_url = None
        for spec in modes:
            mode = mode_specs.ProxyMode.parse(spec)
            if mode.type_name == "reverse" and self.cfg.upstream:
                client_url = f"http://{_url_host(host)}:{port}{upstream_target(self.cfg.upstream)[1]}"
                shown = shown_url(client_url) if self.cfg.redact else client_url
                lines.append(
                    f"proxying {shown_url(self.cfg.upstream) if self.cfg.redact else self.cfg.upstream}"
                )
                note = " (with the redacted values of --upstream's URL)" if shown != client_url else ""
                lines.append(f"give the host this URL: {shown}{note}")
            elif mode.type_name in ("regular", "upstream"):
                lines.append(
                    f"HTTP(S) proxy listening on http://{_url_host(host)}:{port} ({mode.description})"
                )
                lines.append(
                    f"point the host at it (HTTPS_PROXY=http://{_url_host(host)}:{port}) and trust "
                    f"mitmproxy's CA {CA_CERT} to keep https:// URLs"
                )
            else:
                lines.append(f"mitmproxy {mode.description} listening on {_url_host(host)}:{port}")
        lines.append(f"capture: {capture}")
        return ProxyInfo(listen, modes, capture, client_url, lines)


class _ErrorCollector(logging.Handler):
    """mitmproxy reports a failed listener by logging it; keep the first errors for the one line."""

    def __init__(self, sink: list[str]):
        super().__init__(logging.ERROR)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.sink) < 5:
            self.sink.append(record.getMessage())
