"""`wrap` and `unwrap`: put mcptrace's tee in front of a host's stdio servers, and take it away.

An edit replaces the text of one value (`command`, `args`, a remote `url`) and nothing else, so
comments, key order, spacing and unknown keys stay. Before a file changes, its bytes are copied to
the backups directory; the new text is written to a temporary file and renamed over the old one
only if the file is still exactly what was read (same bytes, same mtime): a host or an editor
saving it meanwhile wins, and the user is told to run the command again.

The ledger (one JSON file per config file, in the state directory) remembers the text each wrap
replaced, so `unwrap` restores it byte for byte. When an entry changed since (or the ledger is
gone), `unwrap` rebuilds it from the wrapped arguments instead, and says so.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from tracer.hosts.entries import Document, Entry
from tracer.paths import APP, state_home

PROXY_PORT_BASE = 8790


class ConcurrentEdit(RuntimeError):
    pass


@dataclass
class Edit:
    start: int
    end: int
    text: str


@dataclass
class Outcome:
    """What one wrap/unwrap did to one file: lines for the user, and whether it wrote."""

    path: Path
    lines: list[str] = field(default_factory=list)
    written: bool = False
    backup: Path | None = None


def mcptrace_executable() -> str:
    """mcptrace's absolute path: a GUI host starts servers with a PATH that rarely has it."""
    beside = Path(sys.executable).with_name("mcptrace.exe" if os.name == "nt" else "mcptrace")
    if beside.is_file():
        return str(beside)
    found = shutil.which("mcptrace")
    return str(Path(found).resolve()) if found else str(beside)


def wrapped_args(name: str, argv: list[str]) -> list[str]:
    return ["stdio", "--name", name, "--", *argv]


def _ledger_path(config: Path) -> Path:
    digest = hashlib.blake2b(
        str(config.resolve()).encode("utf-8", "surrogateescape"), digest_size=8
    ).hexdigest()
    return state_home() / APP / "wrap" / f"{digest}.json"


def _read_ledger(config: Path) -> dict:
    try:
        data = json.loads(_ledger_path(config).read_text("utf-8"))
    except (OSError, ValueError, RecursionError):  # (a damaged ledger: unwrap reads the config alone)
        return {}
    entries = data.get("entries") if isinstance(data, dict) else None
    return entries if isinstance(entries, dict) else {}


def _write_ledger(config: Path, entries: dict) -> None:
    from tracer.paths import make_private_dirs

    path = _ledger_path(config)
    make_private_dirs(path.parent)
    if not entries:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    fd = os.open(
        tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600
    )  # it holds the entries' text: API keys too
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"config": str(config.resolve()), "entries": entries}, fh, indent=1)
    os.replace(tmp, path)


def proxied(doc: Document, e: Entry) -> dict | None:
    """The ledger record of a remote entry that `wrap --remote` pointed at a local proxy (still so)."""
    rec = _read_ledger(doc.path).get(_ledger_keys(doc).get(id(e), e.key))
    if rec and "url" in rec and e.url_span is not None and e.url_span.text(doc.text) == rec["url"][1]:
        return rec
    return None


def _apply(text: str, edits: list[Edit]) -> str:
    for e in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[: e.start] + e.text + text[e.end :]
    return text


def backup_dir() -> Path:
    return state_home() / APP / "backups"


def _commit(doc: Document, new_text: str, out: Outcome) -> None:
    """Back the file up, then replace it with NEW_TEXT unless it changed since it was read."""
    from tracer.paths import make_private_dirs

    target = doc.path.resolve()  # a symlinked config (dotfiles) stays a symlink
    bdir = backup_dir()
    make_private_dirs(bdir)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = bdir / f"{stamp}-{doc.host.id}-{doc.path.name}"
    n = 1
    while backup.exists():
        n += 1
        backup = bdir / f"{stamp}-{doc.host.id}-{n}-{doc.path.name}"
    fd = os.open(backup, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(doc.raw)
    out.backup = backup
    st = os.stat(target)
    if (st.st_mtime_ns, st.st_size) != (
        doc.stat.st_mtime_ns,
        doc.stat.st_size,
    ) or target.read_bytes() != doc.raw:
        raise ConcurrentEdit(
            f"{doc.path} changed while mcptrace was editing it (another program saved it); "
            f"nothing was written: run the command again"
        )
    tmp = target.with_name(f".{target.name}.mcptrace-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, st.st_mode & 0o777)
        with os.fdopen(fd, "wb") as fh:
            fh.write(new_text.encode("utf-8"))
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    out.written = True


def _ledger_keys(doc: Document) -> dict[int, str]:
    """Each entry's key in the ledger (by `id` of the entry): its path; and, for a second entry of
    the same name in one container (JSON allows it, the host uses the last), the path with a NUL
    and its rank, so each one's replaced text is remembered and unwrap restores every one byte for
    byte. (The first keeps the plain path: ledgers written before read as they were.)"""
    seen: dict[str, int] = {}
    out: dict[int, str] = {}
    for e in doc.entries:
        n = seen[e.key] = seen.get(e.key, 0) + 1
        out[id(e)] = e.key if n == 1 else f"{e.key}\x00{n}"
    return out


def _chosen(doc: Document, names: list[str] | None) -> list[tuple[Entry, str]]:
    """The entries NAMES chooses (all for None), each with its ledger key."""
    keys = _ledger_keys(doc)
    return [(e, keys[id(e)]) for e in doc.entries if names is None or e.name in names]


def _proxy_url(url: str, port: int) -> str:
    parts = urlsplit(url)
    return f"http://127.0.0.1:{port}{parts.path or '/'}" + (f"?{parts.query}" if parts.query else "")


def wrap(
    doc: Document,
    names: list[str] | None = None,
    *,
    remote: bool = False,
    dry_run: bool = False,
    exe: str | None = None,
    ports: Iterator[int] | None = None,
) -> Outcome:
    """PORTS: the local proxy ports for remote servers (share one iterator across the files of a run)."""
    exe = exe or mcptrace_executable()
    ports = ports if ports is not None else itertools.count(PROXY_PORT_BASE)
    out = Outcome(doc.path)
    ledger = _read_ledger(doc.path)
    edits: list[Edit] = []
    records: dict[str, dict] = {}
    for e, key in _chosen(doc, names):
        if e.kind == "remote":
            _wrap_remote(doc, e, key, remote, ledger, edits, records, out, ports)
            continue
        if e.problem:
            out.lines.append(f"{e.name}: left as it is ({e.problem})")
            continue
        if e.kind != "stdio":
            continue
        if e.wrapped:
            out.lines.append(f"{e.name}: already wrapped")
            continue
        new_cmd = doc.dumps(exe)
        new_args = wrapped_args(e.name, [e.command, *e.args])
        rec = {"command": [e.command_span.text(doc.text), new_cmd]}
        edits.append(Edit(e.command_span.start, e.command_span.end, new_cmd))
        if e.args_span is not None:
            text = doc.dumps(new_args)
            rec["args"] = [e.args_span.text(doc.text), text]
            edits.append(Edit(e.args_span.start, e.args_span.end, text))
        else:
            ins = doc.args_insertion(e, new_args)
            if e.args_insert_at == len(doc.text) and doc.text and not doc.text.endswith("\n"):
                ins = "\n" + ins
            rec["args_inserted"] = ins
            edits.append(Edit(e.args_insert_at, e.args_insert_at, ins))
        records[key] = rec
        out.lines.append(
            f"{e.name}: wrapped: {exe} stdio --name {e.name} -- {' '.join([e.command, *e.args])}"
        )
    if not edits:
        return out
    new_text = _apply(doc.text, edits)
    if dry_run:
        out.lines.append("(dry run: nothing written)")
        return out
    _commit(doc, new_text, out)
    ledger.update(records)
    _write_ledger(doc.path, ledger)
    return out


def _wrap_remote(
    doc: Document,
    e: Entry,
    key: str,
    remote: bool,
    ledger: dict,
    edits: list[Edit],
    records: dict,
    out: Outcome,
    ports: Iterator[int],
) -> None:
    rec = ledger.get(key)
    if rec and "url" in rec and e.url_span is not None and e.url_span.text(doc.text) == rec["url"][1]:
        out.lines.append(f"{e.name}: already pointed at the proxy ({e.url}); run: {rec.get('run', '')}")
        return
    if e.url is None or e.url_span is None:
        out.lines.append(f"{e.name}: remote server left as it is ({e.problem or 'no URL'})")
        return
    port = next(ports)
    local = _proxy_url(e.url, port)
    run = f"mcptrace proxy --upstream {e.url} --listen 127.0.0.1:{port} --label {e.name} --no-ui"
    if not remote:
        out.lines.append(
            f"{e.name}: remote server {e.url}: to capture it, run `{run}` and point "
            f"{doc.host.title} at {local} (or run wrap --remote to write that URL)"
        )
        return
    text = doc.dumps(local)
    edits.append(Edit(e.url_span.start, e.url_span.end, text))
    records[key] = {"url": [e.url_span.text(doc.text), text], "run": run}
    out.lines.append(
        f"{e.name}: now {local} (was {e.url}); keep the proxy running while the host uses it: {run}"
    )


def unwrap(doc: Document, names: list[str] | None = None, *, dry_run: bool = False) -> Outcome:
    out = Outcome(doc.path)
    ledger = _read_ledger(doc.path)
    edits: list[Edit] = []
    done: list[str] = []
    for e, key in _chosen(doc, names):
        rec = ledger.get(key) or {}
        if e.kind == "remote" and "url" in rec and e.url_span is not None:
            if e.url_span.text(doc.text) == rec["url"][1]:
                edits.append(Edit(e.url_span.start, e.url_span.end, rec["url"][0]))
                done.append(key)
                out.lines.append(f"{e.name}: URL restored")
            continue
        if not e.wrapped:
            continue
        exact = _exact_unwrap(doc, e, rec)
        if exact is not None:
            edits.extend(exact)
            out.lines.append(f"{e.name}: unwrapped")
        else:
            argv = e.original_argv()
            if not argv:
                out.lines.append(f"{e.name}: left as it is (no server command after '--')")
                continue
            edits.append(Edit(e.command_span.start, e.command_span.end, doc.dumps(argv[0])))
            edits.append(Edit(e.args_span.start, e.args_span.end, doc.dumps(argv[1:])))
            out.lines.append(
                f"{e.name}: unwrapped from its arguments (the entry changed since wrap, or "
                f"mcptrace has no record of it: its original formatting is not restored)"
            )
        done.append(key)
    if not edits:
        out.lines.append("nothing to unwrap")
        return out
    new_text = _apply(doc.text, edits)
    if dry_run:
        out.lines.append("(dry run: nothing written)")
        return out
    _commit(doc, new_text, out)
    for key in done:
        ledger.pop(key, None)
    _write_ledger(doc.path, ledger)
    return out


def _exact_unwrap(doc: Document, e: Entry, rec: dict) -> list[Edit] | None:
    """The edits that put back the recorded text, if the entry still holds what wrap wrote."""
    if "command" not in rec or e.command_span.text(doc.text) != rec["command"][1]:
        return None
    edits = [Edit(e.command_span.start, e.command_span.end, rec["command"][0])]
    if "args" in rec:
        if e.args_span is None or e.args_span.text(doc.text) != rec["args"][1]:
            return None
        edits.append(Edit(e.args_span.start, e.args_span.end, rec["args"][0]))
        return edits
    ins = rec.get("args_inserted")
    if not isinstance(ins, str) or e.args_span is None:
        return None
    # The inserted text starts where wrap put it: after the command value (JSON) or at the start
    # of the line after it (TOML, possibly after a newline wrap added).
    at = e.command_span.end if doc.host.fmt != "toml" else doc.text.rfind("\n", 0, e.args_span.start) + 1
    if doc.host.fmt == "toml" and ins.startswith("\n"):
        at -= 1
    if doc.text[at : at + len(ins)] != ins:
        return None
    edits.append(Edit(at, at + len(ins), ""))
    return edits


__all__ = [
    "ConcurrentEdit",
    "Outcome",
    "backup_dir",
    "mcptrace_executable",
    "proxied",
    "unwrap",
    "wrap",
    "wrapped_args",
]
