"""The project config: `[tool.mcptrace]` in `pyproject.toml`, or a `mcptrace.toml`, found upwards.

Discovery works like ruff's: from the working directory up to the filesystem root, the first
directory holding a `mcptrace.toml` (any content) or a `pyproject.toml` with a `[tool.mcptrace]`
table wins; `mcptrace.toml` wins over `pyproject.toml` in the same directory. A `mcptrace.toml`
holds the keys at its top level (a `[tool.mcptrace]` table in it is accepted too).

Every value is checked by a pydantic model with unknown keys forbidden and no type coercion, and a
problem is one line naming the file, the key and what was expected (`ConfigError`; the CLI exits 2).
Relative paths (`baseline`, `capture-dir`) are relative to the config file's directory, so a config
means the same thing from any subdirectory.

pydantic is imported only once a config file is found: `mcptrace stdio` runs as a host's server
command, and a project without a config should not pay for the import at every start.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFIG_NAMES = ("mcptrace.toml", "pyproject.toml")
SEVERITIES = ("info", "warning", "error")
FAIL_ON = (*SEVERITIES, "never")
# The keys in the order `--show-config` prints them, with their defaults (None: not set).
DEFAULTS: dict[str, Any] = {
    "select": None,
    "ignore": None,
    "per-file-ignores": {},
    "severity": {},
    "fail-on": "error",
    "baseline": None,
    "format": "text",
    "capture-dir": None,
    "redact": [],
}


class ConfigError(ValueError):
    """A config file that cannot be used: one line, for stderr."""


@dataclass
class Settings:
    """Effective settings: each key's value and where it came from ("default", a file, "command line")."""

    values: dict[str, Any] = field(default_factory=lambda: dict(DEFAULTS))
    sources: dict[str, str] = field(default_factory=lambda: dict.fromkeys(DEFAULTS, "default"))
    path: Path | None = None  # the config file, when one was found

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def override(self, key: str, value: Any, source: str = "command line") -> None:
        self.values[key] = value
        self.sources[key] = source

    def where(self, key: str) -> str:
        """For error messages about a value: the file and key, or the command-line option."""
        src = self.sources[key]
        return f"{src}: [tool.mcptrace] {key}" if src not in ("default", "command line") else f"--{key}"


def find_config(start: str | os.PathLike | None = None) -> tuple[Path, dict] | None:
    """The nearest config file from START (default: the working directory) upwards, with its
    mcptrace table (raw, unvalidated), or None when there is none. Raises ConfigError for a
    config file that is not valid TOML."""
    d = Path(start if start is not None else os.getcwd()).resolve()
    for directory in (d, *d.parents):
        for name in CONFIG_NAMES:
            path = directory / name
            try:
                raw = path.read_bytes()
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                continue
            except OSError as exc:
                raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
            try:
                data = tomllib.loads(raw.decode("utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
                if name == "pyproject.toml" and b"mcptrace" not in raw:
                    continue  # somebody else's broken pyproject: not ours to report
                why = "nested too deeply" if isinstance(exc, RecursionError) else exc
                raise ConfigError(f"{path}: not valid TOML: {why}") from None
            tool = data.get("tool")
            table = tool.get("mcptrace") if isinstance(tool, dict) else None
            if name == "mcptrace.toml":
                return path, table if isinstance(table, dict) and len(data) == 1 else data
            if table is not None:
                if not isinstance(table, dict):
                    raise ConfigError(f"{path}: [tool.mcptrace] must be a table")
                return path, table
    return None


def load_settings(start: str | os.PathLike | None = None) -> Settings:
    """The settings of the nearest config file over the defaults (no file: the defaults)."""
    settings = Settings()
    found = find_config(start)
    if found is None:
        return settings
    path, table = found
    from tracer.config_model import validate

    values = validate(table, str(path), ConfigError)
    base = path.parent
    for key in ("baseline", "capture-dir"):
        if values.get(key) is not None:
            values[key] = str((base / os.path.expanduser(values[key])).resolve())
    settings.path = path
    for key, value in values.items():
        settings.override(key, value, str(path))
    return settings


def capture_dir_from_config() -> Path | None:
    """`capture-dir` of the project config, for the capture doors' default directory; None when no
    config sets it (or the config is broken: the capture doors never fail over a lint setting)."""
    try:
        found = find_config()
    except ConfigError:
        return None
    if found is None or "capture-dir" not in found[1]:
        return None
    try:
        return Path(load_settings().values["capture-dir"])
    except ConfigError:
        return None


def redact_from_config() -> frozenset[str]:
    """`redact` of the project config (header names, lower-cased): more headers the capture doors
    store as `<redacted>`. A broken config is reported on stderr and adds none."""
    import sys

    try:
        found = find_config()
        if found is None or "redact" not in found[1]:
            return frozenset()
        return frozenset(n.lower() for n in load_settings().values["redact"])
    except ConfigError as exc:
        sys.stderr.write(f"mcptrace: warning: {exc}; only the built-in header list is redacted\n")
        return frozenset()


__all__ = [
    "CONFIG_NAMES",
    "DEFAULTS",
    "ConfigError",
    "Settings",
    "capture_dir_from_config",
    "find_config",
    "load_settings",
    "redact_from_config",
]
