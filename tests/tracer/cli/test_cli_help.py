"""`mcptrace --help` and every subcommand's `--help` show what it does with an example."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tracer.cli import COMMANDS, OPTIONAL_COMMANDS, main

ALL = COMMANDS + OPTIONAL_COMMANDS


def test_top_level_help_lists_every_subcommand_and_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for name in ALL:
        assert f"    {name}" in out, name
    assert "examples:" in out


@pytest.mark.parametrize("name", ALL)
def test_each_subcommand_help_shows_an_example(name, capsys):
    with pytest.raises(SystemExit) as exc:
        main([name, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "example:" in out and f"mcptrace {name}" in out.split("example:", 1)[1]


def test_an_unknown_subcommand_is_one_line_on_stderr_and_exit_2():
    p = subprocess.run([sys.executable, "-m", "tracer", "frobnicate"], capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


# -- `mcptrace help TOPIC`: the pages behind the README -----------------------------------------


def test_top_level_help_points_at_the_help_topics(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "mcptrace help " in out and "'mcptrace help TOPIC'" in out


def test_help_lists_every_topic_with_one_line_each(capsys):
    from tracer import help as pages

    assert main(["help"]) == 0
    out = capsys.readouterr().out
    names = pages.names()
    assert {"view", "keys", "filter", "stdio", "proxy", "lint", "ci", "capture-format", "rules"} <= set(names)
    for name in names:
        (line,) = [x for x in out.splitlines() if x.split()[:1] == [name]]
        assert pages.summary(name) in line and len(line) <= 100


@pytest.mark.parametrize("topic", __import__("tracer.help", fromlist=["names"]).names())
def test_each_topic_prints_its_page_with_its_tables_filled_in(topic, capsys):
    assert main(["help", topic]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# {topic}: ") and "{{table:" not in out
    assert out.count("```") % 2 == 0, "an unclosed code block"


def test_the_keys_and_filter_pages_carry_the_tables_the_viewer_uses(capsys):
    from tracer.filter_terms import text as filter_text
    from ui.keys import text as keys_text

    main(["help", "keys"])
    assert keys_text().strip() in capsys.readouterr().out
    main(["help", "filter"])
    assert filter_text().strip() in capsys.readouterr().out


def test_an_unknown_topic_is_one_line_naming_the_close_matches_and_exit_2():
    p = subprocess.run([sys.executable, "-m", "tracer", "help", "filtr"], capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "unknown help topic 'filtr'" in p.stderr
    assert "did you mean filter" in p.stderr and "Traceback" not in p.stderr


def test_help_on_a_rule_id_explains_the_rule(capsys):
    assert main(["help", "MCP310"]) == 0
    assert "MCP310" in capsys.readouterr().out


def test_the_topic_pages_are_declared_package_data():
    """A non-editable install has them: pyproject's package-data covers every page and the order."""
    import fnmatch
    import tomllib
    from pathlib import Path

    import tracer.help

    root = Path(tracer.help.__file__).parent
    data = tomllib.loads((root.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    globs = data["tool"]["setuptools"]["package-data"]["tracer.help"]
    files = [p.relative_to(root).as_posix() for p in (root / "topics").iterdir()]
    assert "topics/ORDER" in files
    for f in files:
        assert any(fnmatch.fnmatch(f, g) for g in globs), f


def test_every_command_and_topic_a_page_or_the_readme_names_exists():
    """`mcptrace X` and `mcptrace help X` (`help X` in the README) name a real subcommand / topic."""
    import re
    from pathlib import Path

    from tracer import help as pages

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    texts = {topic: pages.raw(topic) for topic in pages.names()} | {"README.md": readme}
    for page, text in texts.items():
        for name in re.findall(r"`(?:mcptrace )?help ([a-z-]+)`", text):
            assert name in pages.names(), (page, name)
        fenced = "\n".join(text.split("```")[1::2])
        named = re.findall(r"`(?:\.venv/bin/)?mcptrace ([a-z]+)\b", text) + re.findall(
            r"^\s*(?:\$ )?(?:\.venv/bin/)?mcptrace ([a-z]+)\b", fenced, re.M
        )
        assert named or page != "README.md"
        for name in named:
            assert name in ALL, (page, name)


def test_the_keys_page_does_not_start_the_ui():
    code = (
        "import sys, io, contextlib; from tracer.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): assert main(['help', 'keys']) == 0\n"
        "assert 'textual' not in sys.modules, 'mcptrace help keys imported textual'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_on_a_terminal_a_page_is_rendered_markdown():
    import io

    from rich.console import Console

    from tracer import help as pages
    from tracer.cli.help import show, tables

    out = io.StringIO()
    show(pages.render("filter", tables()), console=Console(file=out, force_terminal=True, width=100))
    text = out.getvalue()
    assert "filter: the viewer's filter language" in text and "```" not in text
    assert "kind:error | rule:MCP2" in text  # the generated table, inside its code block


@pytest.mark.parametrize("name", ALL)
def test_help_on_any_command_name_prints_a_page_about_it(name, capsys):
    from tracer import help as pages

    assert main(["help", name]) == 0
    out = capsys.readouterr().out
    if name == "help":  # `mcptrace help help`: the list of topics
        assert out == pages.listing()
        return
    assert pages.resolve(name) is not None, f"no topic for `mcptrace {name}`: add a page or an alias"
    assert f"mcptrace {name}" in out
