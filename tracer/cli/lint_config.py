"""The project config's part in `mcptrace lint`: settings from the file, command-line flags over
them, `--show-config`, and the per-finding adjustments (per-file-ignores, severity overrides).

The adjustments run once per *finding*, never per message: with no per-file-ignores and no
severity overrides the lint loop gets exactly the hooks it had before (see tests/bench/bench_config.py).
"""

from __future__ import annotations

import argparse
import fnmatch
import os
from collections.abc import Callable
from typing import IO, Any

from tracer.config import DEFAULTS, ConfigError, Settings, load_settings


def settings_for(args: argparse.Namespace) -> Settings:
    """The config file's settings (none with --no-config) with the flags given on the command line over them."""
    from tracer.cli import UsageError

    try:
        settings = Settings() if getattr(args, "no_config", False) else load_settings()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if args.select:
        settings.override("select", args.select)
    if args.ignore:
        settings.override("ignore", args.ignore)
    if args.fail_on is not None:
        settings.override("fail-on", args.fail_on)
    if args.format is not None:
        settings.override("format", args.format)
    if args.baseline is not None:
        settings.override("baseline", args.baseline)
    # The flags the rest of `lint` reads, now meaning the effective settings.
    args.select, args.ignore = settings["select"], settings["ignore"]
    args.fail_on, args.format, args.baseline = settings["fail-on"], settings["format"], settings["baseline"]
    return settings


def show_config(settings: Settings, out: IO[str]) -> None:
    """Every setting, its effective value and where it came from, one per line."""
    import json

    out.write(
        f"config file: {settings.path if settings.path else 'none found (from ' + os.getcwd() + ' upwards)'}\n"
    )
    width = max(len(k) for k in DEFAULTS)
    for key in DEFAULTS:
        value = settings.values[key]
        shown = "(not set)" if value is None else json.dumps(value)
        out.write(f"{key:<{width}} = {shown}  # {settings.sources[key]}\n")


def finding_filter(settings: Settings, keep: Callable | None) -> Callable | None:
    """KEEP extended by the config's per-file-ignores and severity overrides (KEEP itself when the
    config has neither). A severity override changes the finding before it is counted and reported."""
    per_file: dict[str, list[str]] = settings["per-file-ignores"]
    overrides: dict[str, str] = settings["severity"]
    if not per_file and not overrides:
        return keep
    from tracer.model import Severity

    base = str(settings.path.parent) if settings.path else os.getcwd()
    # Longest prefix first: `MCP310 = "info"` beats `MCP3 = "error"`.
    by_prefix = sorted(((k, Severity.parse(v)) for k, v in overrides.items()), key=lambda kv: -len(kv[0]))
    ignored_for: dict[str, tuple[str, ...]] = {}
    severity_of: dict[str, Any] = {}

    def ignored(source: str) -> tuple[str, ...]:
        try:
            return ignored_for[source]
        except KeyError:
            pass
        full = os.path.abspath(source)
        rel = os.path.relpath(full, base).replace(os.sep, "/")
        found: list[str] = []
        for pattern, ids in per_file.items():
            if fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(os.path.basename(full), pattern):
                found.extend(ids)
        ignored_for[source] = result = tuple(found)
        return result

    def adjusted(f) -> bool:
        if per_file and f.rule.startswith(ignored(f.source)):  # (an empty tuple matches nothing)
            return False
        if by_prefix:
            try:
                sev = severity_of[f.rule]
            except KeyError:
                sev = severity_of[f.rule] = next((s for p, s in by_prefix if f.rule.startswith(p)), None)
            if sev is not None:
                f.severity = sev
        return keep(f) if keep is not None else True

    return adjusted


__all__ = ["finding_filter", "settings_for", "show_config"]
