"""The project config: [tool.mcptrace] in pyproject.toml or mcptrace.toml, found upwards, flags over it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tracer.cli import main

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "fixtures" / "captures" / "demo.jsonl"  # 3 errors (MCP111, MCP203, MCP320), 3 warnings


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project directory with the demo capture in caps/, the working directory set to caps/."""
    caps = tmp_path / "caps"
    caps.mkdir()
    shutil.copy(DEMO, caps / "demo.jsonl")
    monkeypatch.chdir(caps)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path


def lint_json(capsys, *args: str) -> tuple[int, list[dict]]:
    rc = main(["lint", "--format", "json", "--no-progress", *args])
    out = capsys.readouterr().out
    return rc, [f for f in json.loads(out)["findings"]]


def test_a_pyproject_table_found_from_a_subdirectory_selects_rules(project, capsys):
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.mcptrace]\nselect = ["MCP2"]\n')
    rc, findings = lint_json(capsys, "demo.jsonl")
    assert {f["rule"] for f in findings} == {"MCP203", "MCP211"}
    assert rc == 1


def test_mcptrace_toml_wins_over_pyproject_in_the_same_directory(project, capsys):
    (project / "pyproject.toml").write_text('[tool.mcptrace]\nselect = ["MCP2"]\n')
    (project / "mcptrace.toml").write_text('select = ["MCP3"]\n')
    _, findings = lint_json(capsys, "demo.jsonl")
    assert {f["rule"] for f in findings} == {"MCP312", "MCP314", "MCP320"}


def test_command_line_flags_override_the_config_file(project, capsys):
    (project / "mcptrace.toml").write_text('select = ["MCP3"]\nfail-on = "never"\n')
    rc, findings = lint_json(capsys, "demo.jsonl", "--select", "MCP111", "--fail-on", "error")
    assert [f["rule"] for f in findings] == ["MCP111"]
    assert rc == 1


def test_fail_on_from_the_config_sets_the_exit_code(project, capsys):
    (project / "mcptrace.toml").write_text('select = ["MCP211"]\nfail-on = "warning"\n')
    rc, _ = lint_json(capsys, "demo.jsonl")
    assert rc == 1
    (project / "mcptrace.toml").write_text('select = ["MCP211"]\n')
    rc, _ = lint_json(capsys, "demo.jsonl")
    assert rc == 0


def test_per_file_ignores_drop_rules_only_for_matching_files(project, capsys):
    shutil.copy(DEMO, project / "caps" / "other.jsonl")
    (project / "mcptrace.toml").write_text('[per-file-ignores]\n"caps/demo.jsonl" = ["MCP2", "MCP111"]\n')
    _, findings = lint_json(capsys, "demo.jsonl", "other.jsonl")
    in_demo = {f["rule"] for f in findings if f["file"].endswith("demo.jsonl")}
    in_other = {f["rule"] for f in findings if f["file"].endswith("other.jsonl")}
    assert in_demo == {"MCP312", "MCP314", "MCP320"}
    assert in_other == in_demo | {"MCP111", "MCP203", "MCP211"}


def test_severity_overrides_change_what_is_reported_and_the_exit_code(project, capsys):
    (project / "mcptrace.toml").write_text(
        'select = ["MCP3"]\n[severity]\nMCP3 = "warning"\nMCP312 = "info"\n'
    )
    rc, findings = lint_json(capsys, "demo.jsonl")
    assert {f["rule"]: f["severity"] for f in findings} == {
        "MCP312": "info",
        "MCP314": "warning",
        "MCP320": "warning",
    }
    assert rc == 0  # MCP320, an error by default, is a warning here


def test_a_baseline_path_in_the_config_is_relative_to_the_config_file(project, capsys):
    (project / "mcptrace.toml").write_text('baseline = "known.json"\n')
    assert main(["lint", "--no-config", "--write-baseline", str(project / "known.json"), "demo.jsonl"]) == 0
    capsys.readouterr()
    rc, findings = lint_json(capsys, "demo.jsonl")
    assert (rc, findings) == (0, [])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('selekt = ["MCP1"]\n', "[tool.mcptrace] unknown key 'selekt'"),
        (
            'fail-on = "high"\n',
            "[tool.mcptrace] fail-on: expected 'info', 'warning', 'error' or 'never' (got 'high')",
        ),
        ('select = "MCP1"\n', "[tool.mcptrace] select: expected a list of strings (got 'MCP1')"),
        (
            "[severity]\nMCP310 = 3\n",
            "[tool.mcptrace] severity['MCP310']: expected 'info', 'warning' or 'error'",
        ),
        ('select = ["MCP999"]\n', "[tool.mcptrace] select: unknown rule"),
        ("select = [\n", "not valid TOML"),
        pytest.param(  # (before: "internal error: RecursionError", exit 70)
            "select = " + "[" * 50_000 + "]" * 50_000 + "\n", "not valid TOML: nested too deeply", id="deep"
        ),
    ],
)
def test_a_bad_config_is_one_line_naming_the_file_and_key_and_exit_2(project, capsys, text, expected):
    (project / "mcptrace.toml").write_text(text)
    rc = main(["lint", "demo.jsonl"])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{project / 'mcptrace.toml'}" in err
    assert expected.lower() in err.lower()


def test_show_config_prints_each_setting_and_where_it_came_from(project, capsys):
    (project / "pyproject.toml").write_text('[tool.mcptrace]\nselect = ["MCP2"]\nfail-on = "warning"\n')
    assert main(["lint", "--show-config", "--fail-on", "info"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"config file: {project / 'pyproject.toml'}"
    rows = {line.split("=")[0].strip(): line for line in out[1:]}
    assert rows["select"].endswith(f'["MCP2"]  # {project / "pyproject.toml"}')
    assert rows["fail-on"].endswith('"info"  # command line')
    assert rows["format"].endswith('"text"  # default')


def test_a_broken_unrelated_pyproject_is_not_our_business(project, capsys):
    (project / "pyproject.toml").write_text("[project\n")
    assert main(["lint", "--show-config"]) == 0
    assert "none found" in capsys.readouterr().out


def test_capture_dir_in_the_config_is_where_captures_go_by_default(project):
    from tracer.paths import default_capture_path

    (project / "mcptrace.toml").write_text('capture-dir = "recorded"\n')
    path = default_capture_path("weather")
    assert path.parent == project / "recorded"
    assert path.parent.is_dir()


def test_redact_in_the_config_adds_header_names_the_captures_hide(project, monkeypatch):
    from tracer import redact

    monkeypatch.setattr(redact, "_extra", None)
    (project / "mcptrace.toml").write_text('redact = ["X-Tenant-Secret"]\n')
    assert redact.redact_headers([["x-tenant-secret", "s3"], ["accept", "a"]]) == [
        ["x-tenant-secret", "<redacted>"],
        ["accept", "a"],
    ]
    monkeypatch.setattr(redact, "_extra", None)  # the next test reads its own config


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        (
            {"fingerprint": "f", "rule": "MCP203", "count": -1},
            "findings[0].count: input should be greater than or equal to 1",
        ),
        (
            {"fingerprint": 7, "rule": "MCP203"},
            "findings[0].fingerprint: input should be a valid string (got 7)",
        ),
        ({"rule": "MCP203"}, "findings[0].fingerprint: field required"),
    ],
)
def test_a_baseline_entry_of_the_wrong_shape_is_refused_naming_the_field(project, capsys, entry, expected):
    # (before the baseline model, a count of -1 suppressed matching findings without end)
    base = project / "base.json"
    base.write_text(json.dumps({"tool": "mcptrace", "baseline": 1, "findings": [entry]}))
    rc = main(["lint", "--no-config", "--baseline", str(base), "demo.jsonl"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert f"baseline {base} has a malformed entry: {expected}" in err


def test_a_baseline_nested_past_any_parser_is_one_line_and_exit_2(project, capsys):
    # (before: "internal error: RecursionError", exit 70)
    base = project / "base.json"
    base.write_text("[" * 100_000)
    rc = main(["lint", "--no-config", "--baseline", str(base), "demo.jsonl"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1
    assert f"baseline {base} is not JSON: nested too deeply" in err
