"""The npm packages some tests need, installed into .ci/node on first use.

The README's test command must pass on a fresh machine with or without Node: where npm exists the
packages are installed the first time a test asks for them (so a newcomer's first run does what CI
does); where Node is absent, the tests that need them are skipped with that reason, because no
Node peer can run there. An install that fails is a test failure with npm's own words.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
NODE_DIR = REPO / ".ci" / "node"
INSTALL_BOUND_S = 600


def _npm() -> str:
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        pytest.skip("Node.js/npm is not installed: this official Node peer cannot run here")
    return npm


def _run_npm(args: list[str], cwd: Path) -> None:
    p = subprocess.run(
        [_npm(), *args, "--no-audit", "--no-fund", "--silent"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=INSTALL_BOUND_S,
        check=False,
    )
    if p.returncode != 0:
        pytest.fail(f"npm {' '.join(args)} failed (exit {p.returncode}): {(p.stderr or p.stdout)[-2000:]}")


def npm_binary(package: str, binary: str) -> Path:
    """The path of `binary` from npm `package`, installing the package into .ci/node if missing."""
    path = NODE_DIR / "node_modules" / ".bin" / binary
    if not path.exists():
        NODE_DIR.mkdir(parents=True, exist_ok=True)
        _run_npm(["install", package], NODE_DIR)
        if not path.exists():
            pytest.fail(f"npm install {package} succeeded but {path} is missing")
    return path


def npm_file(package: str, member: str, dest_name: str) -> Path:
    """One file out of an npm package's tarball (e.g. a schema), kept as .ci/node/<dest_name>."""
    dest = NODE_DIR / dest_name
    if not dest.exists():
        NODE_DIR.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            _run_npm(["pack", package, "--pack-destination", tmp], Path(tmp))
            tarballs = list(Path(tmp).glob("*.tgz"))
            if not tarballs:
                pytest.fail(f"npm pack {package} wrote no tarball")
            with tarfile.open(tarballs[0]) as tar:
                fh = tar.extractfile(f"package/{member}")
                if fh is None:
                    pytest.fail(f"{package} has no {member}")
                dest.write_bytes(fh.read())
    return dest
