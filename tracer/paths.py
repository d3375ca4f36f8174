"""Where captures go when the user does not say: `$XDG_STATE_HOME/mcptrace/captures/`.

Captures are state (history a user may want to look at again), not cache and not config, so they
follow the XDG base directory spec's state directory (default `~/.local/state`). The tee and the
proxy name their files after the start time and a label, so `ls` sorts them by age and a user can
tell which server each one recorded.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

APP = "mcptrace"
CAPTURE_SUFFIX = ".jsonl"

# Programs that run a script or a package: the label is taken from what they run, not from them.
_LAUNCHERS = frozenset(
    {
        "python",
        "python3",
        "py",
        "uv",
        "uvx",
        "pipx",
        "node",
        "nodejs",
        "npx",
        "bun",
        "bunx",
        "deno",
        "pnpm",
        "yarn",
        "npm",
        "ruby",
        "java",
        "dotnet",
        "docker",
        "podman",
        "sh",
        "bash",
        "env",
    }
)
_LAUNCHER_WORDS = frozenset({"run", "exec", "dlx", "x", "tool", "-m", "--"})
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def state_home() -> Path:
    """`$XDG_STATE_HOME`, or `~/.local/state` when it is unset, empty or relative (the XDG spec
    says relative paths are invalid and must be ignored)."""
    env = os.environ.get("XDG_STATE_HOME", "")
    if env and os.path.isabs(env):
        return Path(env)
    return Path.home() / ".local" / "state"


def captures_dir(create: bool = True) -> Path:
    """The default capture directory (the project config's `capture-dir`, else the state
    directory's); created (private to the user) when missing."""
    from tracer.config import capture_dir_from_config

    d = capture_dir_from_config() or state_home() / APP / "captures"
    if create:
        make_private_dirs(d)
    return d


def safe_label(text: str, limit: int = 40) -> str:
    """A label usable in a file name: letters, digits, `.`, `_` and `-` only."""
    cleaned = _UNSAFE.sub("-", text).strip("-.")
    return cleaned[:limit].strip("-.") or "server"


def label_for_command(argv: list[str]) -> str:
    """A short label for a server command: `python weather.py` -> `weather`,
    `npx -y @modelcontextprotocol/server-everything` -> `server-everything`, `./srv --x` -> `srv`.
    Never a credential: the label names the capture file and sits in its header (`--token X`)."""
    from tracer.redact import REDACTED, redact_argv

    for arg in redact_argv(argv):
        if type(arg) is not str or REDACTED in arg:
            continue
        base = os.path.basename(arg.rstrip("/"))
        name = re.sub(r"\d+(\.\d+)*$", "", base.lower().removesuffix(".exe"))  # python3.13 -> python
        if arg.startswith("-") or arg in _LAUNCHER_WORDS or name in _LAUNCHERS or "=" in arg:
            continue
        if not base:
            continue
        stem = base.split("@", 1)[0] if not base.startswith("@") else base  # pkg@1.2 -> pkg
        stem = os.path.splitext(stem)[0] if "." in stem and not stem.startswith(".") else stem
        return safe_label(stem)
    return safe_label(os.path.basename(argv[0])) if argv else "server"


def default_capture_path(
    label: str, *, directory: Path | None = None, now: float | None = None, pid: int | None = None
) -> Path:
    """`<captures dir>/<YYYYmmdd-HHMMSS>-<label>-<pid>.jsonl`: sorted by time, unique per process."""
    d = directory if directory is not None else captures_dir()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now if now is not None else time.time()))
    return d / f"{stamp}-{safe_label(label)}-{pid if pid is not None else os.getpid()}{CAPTURE_SUFFIX}"


def recent_captures(limit: int = 50, directory: Path | None = None) -> list[Path]:
    """The newest captures of the default directory first (for `view` without a file)."""
    d = directory if directory is not None else captures_dir(create=False)
    try:
        files = [p for p in d.iterdir() if p.suffix == CAPTURE_SUFFIX and p.is_file()]
    except OSError:
        return []
    files.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    return files[:limit]


def make_private_dirs(d: Path) -> None:
    """Create `d` and every missing folder above it as 0700 whatever the umask (Path.mkdir's
    `parents` makes the upper ones 0777 under umask 000, and its mode= is itself masked).
    Folders that already exist are left as they are: they are the user's."""
    missing: list[Path] = []
    p = Path(d)
    while not p.exists():
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for p in reversed(missing):
        try:
            p.mkdir(mode=0o700)
        except FileExistsError:  # made by another process a moment ago: theirs to set up
            continue
        os.chmod(p, 0o700)
