"""`mcptrace mock` over stdio reads at most READ_AHEAD messages ahead of answering them: a host that
writes faster than the mock answers (or never reads its answers, so the mock's writes wait) is held
on its pipe, as by any server, instead of growing the mock's memory without end."""

from __future__ import annotations

import asyncio
import os
import threading
import time

from tracer.mock.stdio import READ_AHEAD, _read_stdin

BOUND_S = 60
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n'


def _until(cond) -> None:
    deadline = time.monotonic() + BOUND_S
    while not cond():
        assert time.monotonic() < deadline, "the condition did not come true"
        time.sleep(0.01)


def _ran(loop: asyncio.AbstractEventLoop) -> bool:
    loop.run_until_complete(asyncio.sleep(0))  # (the callbacks the reader's thread handed it)
    return True


def test_the_stdin_reader_stops_at_read_ahead_messages_until_the_loop_takes_them():
    loop = asyncio.new_event_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()
    room = threading.Semaphore(READ_AHEAD)
    r, w = os.pipe()
    os.write(w, PING * READ_AHEAD * 3)  # (all in the pipe at once: ~30 KB, under its 64 KiB)
    reader = threading.Thread(target=_read_stdin, args=(r, loop, queue, room), daemon=True)
    reader.start()
    try:
        for _ in range(3):  # the loop takes them, a place back each: the next READ_AHEAD come
            _until(lambda: _ran(loop) and queue.qsize() == READ_AHEAD)  # (the puts it was handed)
            assert room._value == 0 and reader.is_alive()  # every place used: the reader waits now
            for _ in range(READ_AHEAD):
                assert queue.get_nowait() == PING.rstrip(b"\n")
                room.release()
        os.close(w)
        _until(lambda: _ran(loop) and queue.qsize() == 1)
        assert queue.get_nowait() is None  # (the end of input, after every message)
    finally:
        os.close(r)
        loop.close()
