"""Serve a capture over stdio: JSON-RPC lines in on stdin, out on stdout (nothing else goes there).

stdin is read by a thread (it may be a pipe, a file or a terminal, which asyncio cannot all watch)
and framed with the same line framer the tee uses; everything else runs on the event loop.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import BinaryIO

from tracer.framing import LineFramer
from tracer.mock.engine import MockServer

DRAIN_S = 2.0  # at end of input: how long answers still being sent may take before they are dropped
# Messages read ahead of the event loop at most: a host that writes faster than the mock answers
# waits on its pipe, as with any server, instead of growing the mock's memory without end.
READ_AHEAD = 256


def _read_stdin(
    fd: int, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes | None], room: threading.Semaphore
) -> None:
    framer = LineFramer()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            tail = framer.finish()
            if tail is not None:
                loop.call_soon_threadsafe(queue.put_nowait, tail.data)
            loop.call_soon_threadsafe(queue.put_nowait, None)
            return
        for frame in framer.feed(chunk):
            room.acquire()
            loop.call_soon_threadsafe(queue.put_nowait, frame.data)


async def serve_stdio(server: MockServer, stdin_fd: int, stdout: BinaryIO) -> None:
    """Serve one session until stdin ends."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()
    room = threading.Semaphore(READ_AHEAD)
    threading.Thread(
        target=_read_stdin, args=(stdin_fd, loop, queue, room), name="mock-stdin", daemon=True
    ).start()
    session = server.session()

    async def emit(data: bytes) -> None:
        # One write per message, newline included, so concurrent answers never interleave mid-line.
        stdout.write(data + b"\n")
        stdout.flush()

    try:
        while (raw := await queue.get()) is not None:
            room.release()
            await session.receive(raw, emit)
        await session.drain(DRAIN_S)
    except (BrokenPipeError, ConnectionError):
        pass  # the host went away
    finally:
        await session.close()
