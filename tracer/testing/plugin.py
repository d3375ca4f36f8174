"""The pytest plugin (entry point `pytest11`, registered by installing mcptrace).

Fixtures `mcp_stdio`, `mcp_http` and `mcp_mock` are factories returning a `McpCapture`. When a test's
body ends, every capture it made is closed and linted: a finding at or above the threshold fails
the test with the findings printed like `mcptrace lint` prints them; every other finding becomes an
`McpSpecWarning`, so `filterwarnings = error` escalates it. The threshold and rule selection come,
most specific first, from `@pytest.mark.mcptrace(...)`, `--mcptrace-fail-on`, the project config
(`[tool.mcptrace]` of the rootdir's pyproject.toml / mcptrace.toml), then `error`.

A test that uses none of the fixtures sees nothing of this: the hooks below return at once when
the test made no capture, and nothing heavy is imported until a fixture is used.
"""

from __future__ import annotations

import shutil
import tempfile
import warnings
from pathlib import Path

import pytest

from tracer.testing.capture import McpCapture, McpSpecWarning, _ids, at_or_above, format_findings

_CAPTURES = pytest.StashKey[list]()
_KEPT = pytest.StashKey[list]()
_FAIL_ON = ("info", "warning", "error", "never")
MARKER = (
    "mcptrace(select=None, ignore=None, baseline=None, fail_on=None): lint this test's MCP captures "
    "with these rule ids/prefixes, baseline file and threshold (default: --mcptrace-fail-on)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mcptrace", "MCP traffic checks (mcptrace)")
    group.addoption(
        "--mcptrace-fail-on",
        choices=_FAIL_ON,
        default=None,
        help="fail a test whose MCP capture has a finding at or above this severity; lower "
        "ones are McpSpecWarning warnings (default: the project config's fail-on, else error)",
    )
    group.addoption(
        "--mcptrace-keep",
        action="store_true",
        help="keep the captures under pytest's tmp path and list where at the end",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    config.stash[_KEPT] = []


def _project_settings(config: pytest.Config) -> dict:
    from tracer.config import ConfigError, load_settings

    try:
        return load_settings(config.rootpath).values
    except ConfigError as exc:
        raise pytest.UsageError(str(exc)) from None


class _Policy:
    """How one test's captures are judged."""

    def __init__(self, item: pytest.Item):
        cfg = item.config
        project = _project_settings(cfg)
        mark = item.get_closest_marker("mcptrace")
        kw = dict(mark.kwargs) if mark else {}
        unknown = set(kw) - {"select", "ignore", "baseline", "fail_on"}
        if mark and (unknown or mark.args):
            raise pytest.UsageError(
                f"@pytest.mark.mcptrace takes select=, ignore=, baseline=, fail_on= only "
                f"(got {sorted(unknown) or mark.args})"
            )
        self.select = kw.get("select", project["select"])
        self.ignore = kw.get("ignore", project["ignore"])
        # checked before the test runs, by the one place that selects rules: an unknown id, or a
        # selection leaving no rule (which would pass every capture unchecked), is the user's to fix
        from tracer.rules import SelectionError, select_rules

        try:
            select_rules(_ids(self.select), _ids(self.ignore))
        except SelectionError as exc:
            origin = (
                "@pytest.mark.mcptrace"
                if "select" in kw or "ignore" in kw
                else "the project config ([tool.mcptrace] select / ignore)"
            )
            raise pytest.UsageError(f"mcptrace: {origin}: {exc}") from None
        self.baseline = kw.get("baseline", project["baseline"])
        self.fail_on = kw.get("fail_on") or cfg.getoption("--mcptrace-fail-on") or project["fail-on"]
        if self.fail_on not in _FAIL_ON:
            raise pytest.UsageError(
                f"mcptrace fail_on must be one of {', '.join(_FAIL_ON)} (got {self.fail_on!r})"
            )


class _Factory:
    """What the fixtures share: where captures go, and the test's list of them."""

    def __init__(self, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
        self.request = request
        self.item = request.node
        self.keep = request.config.getoption("--mcptrace-keep")
        if self.keep:
            self.dir = tmp_path_factory.mktemp("mcptrace")
        else:
            self.dir = Path(tempfile.mkdtemp(prefix="mcptrace-"))
            request.addfinalizer(lambda: shutil.rmtree(self.dir, ignore_errors=True))
        self.policy = _Policy(self.item)
        self.n = 0

    def new_path(self, label: str) -> Path:
        from tracer.paths import safe_label

        self.n += 1
        return self.dir / f"{self.n:02d}-{safe_label(label)}.jsonl"

    def add(self, cap: McpCapture) -> McpCapture:
        cap.select, cap.ignore, cap.baseline = self.policy.select, self.policy.ignore, self.policy.baseline
        self.item.stash.setdefault(_CAPTURES, []).append(cap)
        self.request.addfinalizer(cap.close)
        if self.keep:
            self.request.config.stash[_KEPT].append((self.item.nodeid, cap.path))
        return cap


@pytest.fixture
def mcp_stdio(request, tmp_path_factory):
    """Factory: `mcp_stdio(argv, *, name=None, env=None)` puts a stdio server behind mcptrace's tee.

    Hand `cap.command` (and `cap.env`) to any client, e.g. the SDK's
    `StdioServerParameters(command=cap.command[0], args=cap.command[1:], env=cap.env)`."""
    factory = _Factory(request, tmp_path_factory)

    def make(argv: list[str], *, name: str | None = None, env: dict[str, str] | None = None) -> McpCapture:
        cap = McpCapture.stdio(list(argv), path=factory.dir / "pending.jsonl", name=name, env=env)
        path = factory.new_path(cap.name)  # named after the server, as `mcptrace stdio` names it
        return factory.add(McpCapture.stdio(list(argv), path=path, name=cap.name, env=env))

    return make


@pytest.fixture
def mcp_http(request, tmp_path_factory):
    """Factory: `mcp_http(url, *, name=None)` starts `mcptrace proxy` in front of a Streamable HTTP
    server; the client connects to `cap.url`."""
    factory = _Factory(request, tmp_path_factory)

    def make(url: str, *, name: str | None = None) -> McpCapture:
        return factory.add(McpCapture.http(url, path=factory.new_path(name or "http"), name=name))

    return make


@pytest.fixture
def mcp_mock(request, tmp_path_factory):
    """Factory: `mcp_mock(capture, *, transport="stdio"|"http")` serves a recorded server with
    `mcptrace mock`; the client uses `cap.command` (stdio) or `cap.url` (http), and the new traffic is
    itself captured and linted."""
    factory = _Factory(request, tmp_path_factory)

    def make(capture, *, transport: str = "stdio", name: str | None = None) -> McpCapture:
        path = factory.new_path(name or "mock")
        return factory.add(McpCapture.mock(capture, path=path, transport=transport, name=name))

    return make


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    __tracebackhide__ = True  # a failing test's traceback shows its own frames, not this wrapper
    try:
        result = yield
    except BaseException:
        _show_stderr(item)
        raise
    caps = item.stash.get(_CAPTURES, None)
    if not caps:
        return result
    policy = _Policy(item)
    where = _location(item)
    failing: list[str] = []
    for cap in caps:
        cap.close()  # the proxy finishes its capture before it is read
        high, low = at_or_above(cap.lint(), policy.fail_on)
        for f in low:
            # Attributed to the test function, so the warnings summary points at the user's code.
            warnings.warn_explicit(
                McpSpecWarning(f"{cap.name}: " + format_findings([f]).rstrip("\n")), McpSpecWarning, *where
            )
        if high:
            failing.append(f"{cap.name} ({cap.path}):\n" + format_findings(high))
    if failing:
        _show_stderr(item)
        keep = (
            ""
            if item.config.getoption("--mcptrace-keep")
            else "(pytest --mcptrace-keep keeps the capture files)\n"
        )
        __tracebackhide__ = False  # (with pytrace=False there is no traceback to show at all)
        pytest.fail(
            f"MCP traffic has findings at or above {policy.fail_on}:\n" + "".join(failing) + keep,
            pytrace=False,
        )
    return result


def _location(item: pytest.Item) -> tuple[str, int, str]:
    path, lineno, _ = item.reportinfo()
    module = getattr(getattr(item, "module", None), "__name__", "mcptrace")
    return str(path), (lineno or 0) + 1, module


def _show_stderr(item: pytest.Item) -> None:
    for cap in item.stash.get(_CAPTURES, None) or ():
        lines = cap.stderr_lines()
        if lines:
            item.add_report_section("call", f"mcptrace: {cap.name} server stderr", "\n".join(lines) + "\n")


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    kept = config.stash.get(_KEPT, None)
    if not kept:
        return
    terminalreporter.section("mcptrace captures")
    for nodeid, path in kept:
        terminalreporter.write_line(f"{nodeid}: {path}")
    terminalreporter.write_line("(lint again with: mcptrace lint FILE; view with: mcptrace view FILE)")


__all__ = ["McpCapture", "McpSpecWarning", "mcp_http", "mcp_mock", "mcp_stdio"]
