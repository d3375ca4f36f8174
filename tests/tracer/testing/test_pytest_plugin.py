"""The pytest plugin, run the way users run it: pytester runs a test file in a pytest of its own,
with the plugin loaded from mcptrace's installed `pytest11` entry point."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

REPO = Path(__file__).resolve().parents[3]
SDK_SERVER = REPO / "fixtures" / "sdk" / "server.py"
LEGACY_CAPTURE = REPO / "fixtures" / "captures" / "sdk-stdio-legacy.jsonl"

# A stdio server that breaks the spec on purpose: it answers every request with the id as a
# string (MCP203), and never answers a request whose method is "never" (MCP211, a warning).
BAD_SERVER = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" in msg and msg.get("method") != "never":
        sys.stderr.write(f"answering {msg['method']} with a string id\n")
        sys.stderr.flush()
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": str(msg["id"]), "result": {}}) + "\n")
        sys.stdout.flush()
"""

RAW_CLIENT = r'''
import json, subprocess, sys

def drive(cap, method):
    """A raw client: one request, then EOF; the tee records both sides."""
    proc = subprocess.run(cap.command, input=json.dumps({"jsonrpc": "2.0", "id": 1, "method": method}) + "\n",
                          capture_output=True, text=True, timeout=60)
    return proc.stdout
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(bad_server=BAD_SERVER, raw_client=RAW_CLIENT)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "--strict-markers", *args, timeout=300)


def test_a_test_with_a_spec_violating_server_fails_and_names_the_rule(project):
    project.makepyfile(
        test_bad="""
        import sys
        from raw_client import drive

        def test_ping(mcp_stdio):
            cap = mcp_stdio([sys.executable, "bad_server.py"], name="bad")
            assert '"id": "1"' in drive(cap, "ping")
    """
    )
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*MCP traffic has findings at or above error*",
            "*MCP203 [[]error[]] id '1' does not match the pending request id 1*",
            "*mcptrace: bad server stderr*",
            "answering ping with a string id",
        ]
    )


def test_a_test_failing_its_own_assertion_shows_the_server_stderr(project):
    project.makepyfile(
        test_own="""
        import sys
        from raw_client import drive

        def test_wrong_expectation(mcp_stdio):
            cap = mcp_stdio([sys.executable, "bad_server.py"], name="chatty")
            assert drive(cap, "ping") == "something else"
    """
    )
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*assert *== 'something else'*",
            "*mcptrace: chatty server stderr*",
            "answering ping with a string id",
        ]
    )


def test_findings_below_the_threshold_are_warnings_and_filterwarnings_error_fails_the_test(project):
    project.makepyfile(
        test_slow="""
        import sys
        from raw_client import drive

        def test_never_answered(mcp_stdio):
            cap = mcp_stdio([sys.executable, "bad_server.py"], name="quiet")
            drive(cap, "never")
    """
    )
    result = run(project)
    result.assert_outcomes(passed=1, warnings=2)
    result.stdout.fnmatch_lines(
        ["*McpSpecWarning: quiet: *MCP211 [[]warning[]] never id 1 was never answered*"]
    )
    project.makeini("[pytest]\nfilterwarnings =\n    error\n")
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*McpSpecWarning*MCP2*"])


def test_the_marker_and_the_option_choose_rules_and_threshold(project):
    project.makepyfile(
        test_marked="""
        import sys
        import pytest
        from raw_client import drive

        @pytest.mark.mcptrace(ignore=["MCP203", "MCP401"], fail_on="error")
        def test_known_bad_ids(mcp_stdio):
            drive(mcp_stdio([sys.executable, "bad_server.py"]), "ping")

        @pytest.mark.mcptrace(select=["MCP211"], fail_on="warning")
        def test_strict(mcp_stdio):
            drive(mcp_stdio([sys.executable, "bad_server.py"]), "never")

        def test_default_threshold(mcp_stdio):
            drive(mcp_stdio([sys.executable, "bad_server.py"]), "never")
    """
    )
    result = run(project)
    result.assert_outcomes(passed=2, failed=1, warnings=3)
    result.stdout.fnmatch_lines(["FAILED test_marked.py::test_strict*"])
    result = run(project, "--mcptrace-fail-on", "info", "-k", "default_threshold")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*MCP209 [[]info[]]*", "*MCP211 [[]warning[]]*"])


def test_the_project_config_sets_the_plugin_s_threshold_and_rules(project):
    project.makepyfile(
        test_cfg="""
        import sys
        from raw_client import drive

        def test_never_answered(mcp_stdio):
            drive(mcp_stdio([sys.executable, "bad_server.py"]), "never")
    """
    )
    project.makepyprojecttoml('[tool.mcptrace]\nfail-on = "warning"\nignore = ["MCP209"]\n')
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*MCP211 [[]warning[]]*"])
    assert "MCP209" not in result.stdout.str()
    result = run(project, "--mcptrace-fail-on", "error")  # the option beats the file
    result.assert_outcomes(passed=1, warnings=1)


def test_keep_keeps_the_captures_and_says_where(project):
    project.makepyfile(
        test_keep="""
        import sys
        from raw_client import drive

        def test_one(mcp_stdio):
            cap = mcp_stdio([sys.executable, "bad_server.py"], name="kept")
            drive(cap, "never")
            assert cap.path.exists()
    """
    )
    result = run(project, "--mcptrace-keep", "-W", "ignore::tracer.testing.McpSpecWarning")
    result.assert_outcomes(passed=1)
    line = next(s for s in result.stdout.lines if s.startswith("test_keep.py::test_one: "))
    path = Path(line.split(": ", 1)[1])
    assert path.is_file() and path.name.endswith("kept.jsonl")
    from tracer.testing import lint_capture

    assert "MCP211" in {f.rule for f in lint_capture(path).findings}  # what `mcptrace lint FILE` says


def test_the_sdk_client_over_stdio_and_http_through_the_fixtures_lints_clean(project):
    project.makepyfile(
        test_sdk=f"""
        import subprocess, sys
        import anyio
        from mcp import Client, StdioServerParameters

        SERVER = {str(SDK_SERVER)!r}

        async def session(target, mode):
            async with Client(target, mode=mode) as client:
                tools = await client.list_tools()
                result = await client.call_tool("add", {{"a": 2, "b": 3}})
                return sorted(t.name for t in tools.tools), result.content[0].text

        def test_stdio(mcp_stdio):
            cap = mcp_stdio([sys.executable, SERVER], name="sdk")
            params = StdioServerParameters(command=cap.command[0], args=cap.command[1:], env=cap.env)
            names, text = anyio.run(session, params, "legacy")
            assert "add" in names and text == "5"
            cap.assert_clean(fail_on="warning")
            assert cap.lint() == [] and cap.path.stat().st_size > 0

        def test_http(mcp_http):
            server = subprocess.Popen([sys.executable, SERVER, "--http", "--port", "0"], stdout=subprocess.PIPE,
                                      text=True)
            try:
                url = server.stdout.readline().removeprefix("listening on ").strip()
                cap = mcp_http(url, name="sdk-http")
                assert cap.url != url
                names, text = anyio.run(session, cap.url, "2026-07-28")
                assert "add" in names and text == "5"
            finally:
                server.terminate()
                server.wait(timeout=60)
            cap.close()
            cap.assert_clean(fail_on="warning")
            assert b"tools/call" in cap.path.read_bytes()
    """
    )
    result = run(project, "-W", "error")
    result.assert_outcomes(passed=2)


def test_mcp_mock_serves_a_recording_to_a_client_and_captures_the_new_session(project):
    project.makepyfile(
        test_mock=f"""
        import anyio
        from mcp import Client, StdioServerParameters

        async def session(target):
            async with Client(target, mode="legacy") as client:
                return sorted(t.name for t in (await client.list_tools()).tools)

        def test_stdio_mock(mcp_mock):
            cap = mcp_mock({str(LEGACY_CAPTURE)!r})
            names = anyio.run(session, StdioServerParameters(command=cap.command[0], args=cap.command[1:]))
            assert "add" in names
            assert b"tools/list" in cap.path.read_bytes()

        def test_http_mock(mcp_mock):
            cap = mcp_mock({str(LEGACY_CAPTURE)!r}, transport="http")
            assert "add" in anyio.run(session, cap.url)
    """
    )
    result = run(project, "-W", "ignore::tracer.testing.McpSpecWarning")
    result.assert_outcomes(passed=2)


def test_a_test_using_none_of_it_is_untouched(project):
    project.makepyfile(
        test_plain="""
        import sys
        def test_plain():
            assert "tracer.lint" not in sys.modules and "tracer.analyser" not in sys.modules
    """
    )
    project.makeini("[pytest]\nfilterwarnings =\n    error\n")
    result = run(project)
    result.assert_outcomes(passed=1)
    out = [line for line in result.stdout.lines if not line.startswith("plugins:")]
    assert not [line for line in out if "mcptrace" in line.lower() or "McpSpec" in line]


def test_the_plugin_is_registered_by_the_installed_entry_point():
    from importlib.metadata import entry_points

    (ep,) = [e for e in entry_points(group="pytest11") if e.name == "mcptrace"]
    assert ep.value == "tracer.testing.plugin"
    assert sys.modules.get("tracer.testing.plugin") is not None  # loaded in this very run


def test_a_selection_that_leaves_no_rule_is_a_usage_error_not_a_silent_pass(project):
    # `select=os.environ.get("RULES", "")` of an unset variable, or an ignore taking back the whole
    # select: linting with no rule would pass a server it never checked (bad_server breaks MCP203)
    project.makepyfile(
        test_empty="""
        import sys
        import pytest
        from raw_client import drive

        @pytest.mark.mcptrace(select="")
        def test_empty_select(mcp_stdio):
            drive(mcp_stdio([sys.executable, "bad_server.py"]), "ping")

        @pytest.mark.mcptrace(select=["MCP2"], ignore="MCP2")
        def test_ignore_takes_it_all_back(mcp_stdio):
            drive(mcp_stdio([sys.executable, "bad_server.py"]), "ping")
    """
    )
    result = run(project)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*mcptrace: @pytest.mark.mcptrace: the selection leaves no rule to run (select ''*",
            "*mcptrace: @pytest.mark.mcptrace: the selection leaves no rule to run (select 'MCP2', ignore 'MCP2'*",
        ],
        consecutive=False,
    )
    project.makepyprojecttoml('[tool.mcptrace]\nignore = ["MCP"]\n')
    project.makepyfile(
        test_empty="""
        import sys
        from raw_client import drive

        def test_ping(mcp_stdio):
            drive(mcp_stdio([sys.executable, "bad_server.py"]), "ping")
    """
    )
    result = run(project)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*mcptrace: the project config ([[]tool.mcptrace[]] select / ignore): the selection*"]
    )
