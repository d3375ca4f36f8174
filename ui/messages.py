"""Messages that worker threads post to the UI (workers never touch widgets)."""

from __future__ import annotations

from array import array

from textual.message import Message

from tracer.view.viewdata import CaptureView


class ViewReady(Message):
    """The capture is open and its first rows are indexed."""

    def __init__(self, view: CaptureView) -> None:
        super().__init__()
        self.view = view


class OpenFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class Waiting(Message):
    """The opening worker waits for a followed file to tell its format (`note`: what it waits for)."""

    def __init__(self, note: str) -> None:
        super().__init__()
        self.note = note


class ReopenWhole(Message):
    """The rows read so far are not the input's (a HAR whose entries are out of time order): open
    it again, converting the whole document first (tracer.inputs.spooled.InputRestart)."""


class IndexProgress(Message):
    """More rows are indexed (`done`: the whole file)."""

    def __init__(self, rows: int, fraction: float, done: bool) -> None:
        super().__init__()
        self.rows = rows
        self.fraction = fraction
        self.done = done


class TailRead(Message):
    """The input's last rows were read ahead of the index (`G`): show them, provisional."""


class AnalysisProgress(Message):
    """The background analysis reported progress (read its state from view.ann)."""


class FilterProgress(Message):
    def __init__(self, generation: int, matches: array, scanned: int, done: bool) -> None:
        super().__init__()
        self.generation = generation
        self.matches = matches
        self.scanned = scanned
        self.done = done


class RowSelected(Message):
    """The list's selection moved to a capture row."""

    def __init__(self, row: int | None) -> None:
        super().__init__()
        self.row = row
