"""HAR (HTTP Archive) files: placeholder sniffer until the HTTP door lands (issue: mitmproxy addon)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from tracer.capture import ReadProblem
from tracer.model import Record


def sniff(head: bytes) -> bool:
    return False


def read(fh: IO[bytes], source: str) -> Iterator[Record | ReadProblem]:
    return iter(())
