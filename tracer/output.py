"""Where a capture is written: the output file is checked before a command starts, opened
without following a symlink, private (0600), and appended to when it is already a capture.

Every door that takes `-o FILE` goes through here, so they all refuse the same paths with the same
one line, and a host that restarts its server through `-o same.jsonl` keeps every session.
"""

from __future__ import annotations

import errno
import os
import stat

import orjson


class CaptureFileError(OSError):
    """The output path cannot take a capture (not a capture, a symlink, a directory...): its
    `strerror` is the one line the CLI prints after the path."""


# How much of an existing file's start is read to tell whether it is a capture: a header line
# longer than this (a command line of a megabyte) is not one mcptrace wrote.
_HEADER_PROBE = 1024 * 1024
FORMAT_NAME = "mcptrace"  # the header's `format` (tracer.capture writes it)
_HEADER_PREFIX = b'{"type":"header","format":"mcptrace"'  # what a torn first header still shows


def _looks_like_capture(head: bytes) -> bool:
    """Whether a file's first bytes are an mcptrace capture's header line."""
    line = head.split(b"\n", 1)[0]
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return b"\n" not in head and line.startswith(_HEADER_PREFIX)  # a torn header, still ours
    return type(obj) is dict and obj.get("type") == "header" and obj.get("format") == FORMAT_NAME


def check_output(path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
    """Refuse, before anything starts, an output path a CaptureWriter would refuse (raises
    CaptureFileError, or OSError for a missing or unwritable folder); creates nothing."""
    path = os.fspath(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise CaptureFileError(errno.ENOENT, f"no such directory: {parent}") from None
        if not os.access(parent, os.W_OK | os.X_OK):
            raise CaptureFileError(errno.EACCES, f"cannot create a file in {parent}") from None
        return
    if stat.S_ISLNK(st.st_mode):
        raise CaptureFileError(errno.ELOOP, _SYMLINK)
    if stat.S_ISDIR(st.st_mode):
        raise CaptureFileError(errno.EISDIR, "is a directory")
    if not os.access(path, os.W_OK):
        raise CaptureFileError(errno.EACCES, "permission denied")
    if stat.S_ISREG(st.st_mode) and not overwrite and st.st_size:
        with open(path, "rb") as fh:
            if not _looks_like_capture(fh.read(_HEADER_PROBE)):
                raise CaptureFileError(errno.EEXIST, _NOT_A_CAPTURE)


_SYMLINK = "is a symbolic link; mcptrace does not write through one (give the file it points to)"
_NOT_A_CAPTURE = "exists and is not an mcptrace capture (--overwrite replaces it)"


def open_output(path: str | os.PathLike[str], *, overwrite: bool = False) -> tuple[int, bool, bool]:
    """Open a capture file for appending records: (fd, created, needs_newline).

    A new file is created 0600. An existing capture is appended to (a new session after the old
    ones: a host that restarts its server keeps every session), unless `overwrite` truncates it;
    an existing file that is not a capture is refused, and so is a symlink at the path (never
    followed: it could point anywhere the user can write). An existing file loses any group and
    other permission bits: captures hold what the peers sent. Every write goes to the end of the
    file (O_APPEND), so two writers appending at once never overwrite each other's records.
    `needs_newline`: the file ends in a torn line (a killed writer), to be ended before the header.
    """
    path = os.fspath(path)
    flags = os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    created = True
    try:
        try:
            fd = os.open(path, flags | os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            created = False
            # read-write: the first and last bytes are read through the very file opened (no
            # second open by name that a swapped path could redirect)
            fd = os.open(path, flags | os.O_RDWR | (os.O_TRUNC if overwrite else 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CaptureFileError(errno.ELOOP, _SYMLINK) from None
        raise
    try:
        needs_newline = False if created else _prepare_existing(fd, overwrite)
    except BaseException:
        os.close(fd)
        raise
    return fd, created, needs_newline


def _prepare_existing(fd: int, overwrite: bool) -> bool:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        return False  # /dev/null, a FIFO a reader waits on: written as a stream, never re-moded
    appending = bool(st.st_size) and not overwrite
    if appending and not _looks_like_capture(os.pread(fd, _HEADER_PROBE, 0)):
        raise CaptureFileError(errno.EEXIST, _NOT_A_CAPTURE)  # (before any change to the file)
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o177:
        try:
            os.fchmod(fd, mode & 0o600)
        except OSError:
            raise CaptureFileError(
                errno.EPERM, f"cannot make it private (mode {mode:04o}, not the user's own file)"
            ) from None
    return appending and os.pread(fd, 1, st.st_size - 1) != b"\n"
