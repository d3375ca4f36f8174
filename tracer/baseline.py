"""Lint baselines: accept the findings a capture already has, fail only on new ones.

A finding's fingerprint is its rule id, its file (relative to the working directory), its JSON path,
and a digest of the exact bytes of the message it is about (which hold its method, id and content).
Line numbers and seq numbers are not part of it, so adding or removing other messages, or
re-recording around the same traffic, keeps the baseline valid. Identical findings on identical
messages are counted, not merged: a baseline entry suppresses as many occurrences as it counts.

Findings about the capture as a whole, or about a message the linter no longer remembers, fall back
to the finding's text with its numbers taken out.

Baseline file (JSON, sorted, stable under re-writing):
    {"tool": "mcptrace", "baseline": 1,
     "findings": [{"fingerprint": "...", "rule": "MCP203", "file": "caps/a.jsonl", "count": 1,
                   "message": "id 7 matches no request..."}, ...]}
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

from tracer.model import Analysed, Finding
from tracer.session import BoundedMap

FORMAT_VERSION = 1
_NUMBERS = re.compile(r"\d+")


class BaselineError(ValueError):
    pass


def display_path(source: str) -> str:
    """The file name a fingerprint uses: relative to the working directory when below it."""
    if not source:
        return ""
    full = os.path.abspath(source)
    rel = os.path.relpath(full)
    return (rel if not rel.startswith("..") else full).replace(os.sep, "/")


def message_digest(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=10).hexdigest()


def fingerprint(f: Finding, digest: str | None) -> str:
    anchor = digest if digest is not None else "text:" + _NUMBERS.sub("#", f.message)
    key = "\0".join((f.rule, display_path(f.source), f.path or "", anchor))
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


@dataclass(slots=True)
class Entry:
    fingerprint: str
    rule: str
    file: str
    message: str
    count: int = 1


class Baseline:
    """Remembers the messages lint has seen (bounded) so each finding can be fingerprinted, records
    every finding, and suppresses the ones a loaded baseline lists."""

    def __init__(self, known: dict[str, Entry] | None = None):
        self.known = known or {}
        self.remaining = {k: e.count for k, e in self.known.items()}
        self.digests: BoundedMap = BoundedMap()  # (file, seq) -> digest of the message's bytes
        self.seen: dict[str, Entry] = {}  # every finding of this run, for --write-baseline
        self.suppressed = 0

    # -- hooks for tracer.lint.lint_paths -----------------------------------------------------

    def on_message(self, a: Analysed) -> None:
        self.digests.put((a.rec.source, a.rec.seq), message_digest(a.rec.raw))

    def keep(self, f: Finding) -> bool:
        """Record the finding; False when the baseline accepts it (suppressed)."""
        fp = fingerprint(f, self.digests.get((f.source, f.seq)) if f.seq else None)
        entry = self.seen.get(fp)
        if entry is None:
            self.seen[fp] = Entry(fp, f.rule, display_path(f.source), f.message)
        else:
            entry.count += 1
        left = self.remaining.get(fp, 0)
        if left:
            self.remaining[fp] = left - 1
            self.suppressed += 1
            return False
        return True

    # -- after the run ----------------------------------------------------------------------------

    def stale(self, linted: Iterable[str] | None = None) -> list[Entry]:
        """Baseline entries (or occurrences of them) that this run no longer produced. With `linted`
        (the paths of this run), only entries of those files are judged: a baseline written for a
        whole directory stays quiet about the files a run did not look at."""
        files = None if linted is None else {display_path(p) for p in linted}
        out = []
        for fp, left in self.remaining.items():
            if left:
                e = self.known[fp]
                if files is not None and e.file and e.file not in files:  # ("": an old whole-capture entry)
                    continue
                out.append(Entry(fp, e.rule, e.file, e.message, left))
        return sorted(out, key=lambda e: (e.file, e.rule, e.fingerprint))

    def write(self, path: str) -> int:
        entries = sorted(self.seen.values(), key=lambda e: (e.file, e.rule, e.fingerprint))
        doc = {
            "tool": "mcptrace",
            "baseline": FORMAT_VERSION,
            "findings": [
                {
                    "fingerprint": e.fingerprint,
                    "rule": e.rule,
                    "file": e.file,
                    "count": e.count,
                    "message": e.message,
                }
                for e in entries
            ],
        }
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1, ensure_ascii=False)
            fh.write("\n")
        return len(entries)


def load_baseline(path: str) -> Baseline:
    """Read a baseline file; BaselineError (one line) when it is missing or not a baseline."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise BaselineError(f"baseline {path} is not JSON: {exc}") from None
    except RecursionError:
        raise BaselineError(f"baseline {path} is not JSON: nested too deeply") from None
    if type(doc) is not dict or doc.get("tool") != "mcptrace" or type(doc.get("findings")) is not list:
        raise BaselineError(f"{path} is not an mcptrace baseline (write one with --write-baseline)")
    if doc.get("baseline") != FORMAT_VERSION:
        raise BaselineError(
            f"baseline {path} has format {doc.get('baseline')!r}; this mcptrace reads {FORMAT_VERSION}"
        )
    from tracer.config_model import baseline_entries  # (pydantic: imported only when a baseline is used)

    try:
        items = baseline_entries(doc["findings"], path)
    except ValueError as exc:
        raise BaselineError(str(exc)) from None
    known: dict[str, Entry] = {}
    for item in items:
        e = Entry(
            item["fingerprint"],
            item["rule"],
            item.get("file", ""),
            item.get("message", ""),
            item.get("count", 1),
        )
        if e.fingerprint in known:
            known[e.fingerprint].count += e.count
        else:
            known[e.fingerprint] = e
    return Baseline(known)
