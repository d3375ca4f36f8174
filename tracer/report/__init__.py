"""Lint report formats. Each reporter streams: findings are written as they are found."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:  # (only for the annotations: `mcptrace --help` and the tee must not load the analyser)
    from tracer.lint import Reporter

FORMATS = ("text", "json", "sarif")


def make_reporter(name: str, out: IO[str], *, color: bool = False) -> Reporter:
    if name == "text":
        from tracer.report.text import TextReporter

        return TextReporter(out, color=color)
    if name == "json":
        from tracer.report.jsonfmt import JsonReporter

        return JsonReporter(out)
    if name == "sarif":
        from tracer.report.sarif import SarifReporter

        return SarifReporter(out)
    extra = EXTRA_FORMATS.get(name)
    if extra is not None:
        return extra(out)
    raise ValueError(f"unknown report format {name!r}")


def _junit(out: IO[str]) -> Reporter:
    from tracer.report.junit import JunitReporter

    return JunitReporter(out)


def _github(out: IO[str]) -> Reporter:
    from tracer.report.github import GithubReporter

    return GithubReporter(out)


# Formats added by later modules: name -> factory(out). CI formats: JUnit XML, GitHub annotations.
EXTRA_FORMATS: dict = {"junit": _junit, "github": _github}
