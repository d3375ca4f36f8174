"""The parent side of `mcptrace lint --jobs N` (tracer.parallel has the plan and the workers): start
the workers, then merge their keyed streams file by file, in input order."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from operator import itemgetter

from tracer.analyser import RuleSet
from tracer.inputs import InputError, OpenInput
from tracer.parallel import Channel, FileResult, Task, finding_from
from tracer.parallel_route import route

PIPE_BYTES = 1 << 20


class WorkerFailed(RuntimeError):
    pass


# A worker is a fresh interpreter running tracer.parallel_worker.main, not a multiprocessing
# process: forkserver and spawn re-run the caller's main module in every worker, so a script (or a
# tool) calling tracer.cli.main(["lint", ...]) without an `if __name__ == "__main__"` guard would run
# itself again in each. -P: no script or working directory at the front of sys.path (a `tracer` or
# `orjson` there must not shadow ours); the directory this tracer package came from goes first unless
# the worker's sys.path has it already (an installed tracer), so the worker runs this very tracer.
_BOOT = (
    "import sys; sys.path[:0] = [p for p in sys.argv[1:] if p not in sys.path]; "
    "from tracer.parallel_worker import main; main()"
)
_HOME = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Pool:
    def __init__(self, tasks: list[Task | None], jobs: int, rule_ids: list[str], digests: bool):
        self.tasks = tasks
        todo = [t for t in tasks if t is not None]
        self.conns: list[Channel | None] = []
        self.procs: list[subprocess.Popen | None] = []
        self.router: threading.Thread | None = None
        try:
            inboxes = []
            for k in range(jobs):
                mine = [t for t in todo if t.shard or t.owner == k]
                if not mine:
                    self.conns.append(None)
                    self.procs.append(None)
                    continue
                p = subprocess.Popen(
                    [sys.executable, "-P", "-c", _BOOT, _HOME], stdin=subprocess.PIPE, stdout=subprocess.PIPE
                )
                self.procs.append(p)
                assert p.stdin is not None and p.stdout is not None
                _widen(p.stdin)
                _widen(p.stdout)
                self.conns.append(Channel(p.stdout))
                inbox = Channel(p.stdin)
                inbox.send((mine, k, rule_ids, digests))
                inboxes.append(inbox)
            sharded = [t for t in todo if t.shard]
            if sharded:  # (then every worker has a share of each)
                self.router = threading.Thread(target=_route_all, args=(sharded, inboxes), daemon=True)
                self.router.start()
            else:
                for inbox in inboxes:
                    inbox.close()
        except BaseException:
            self.close()
            raise

    def takes(self, index: int) -> bool:
        return self.tasks[index] is not None

    def _batches(self, k: int, index: int) -> Iterator[list]:
        """Worker k's batches of one file, up to its last."""
        conn = self.conns[k]
        while True:
            try:
                got, items = conn.recv()
            except (EOFError, OSError):
                raise WorkerFailed(f"lint worker {k} stopped") from None
            if got != index:
                detail = items[0][1][1] if got == -1 else f"sent file {got} for {index}"
                raise WorkerFailed(f"lint worker {k} failed: {detail}")
            yield items
            last = items[-1][1][0]
            if last == "end" or last == "error" or last == "redo":
                return

    def _merged(self, index: int, workers: list[int]) -> Iterator[tuple]:
        """The workers' items in key order, as heapq.merge gives them (on equal keys, the lower
        worker's first), a run at a time: the items of a batch that come before every other
        worker's next item go out together, with no comparison each (sessions are runs of lines)."""
        key = itemgetter(0)
        heads = []  # [key of the next item, worker, its batch, position in it, its batches]
        for k in workers:
            batches = self._batches(k, index)
            batch = next(batches, None)
            if batch:
                heads.append([batch[0][0], k, batch, 0, batches])
        while heads:
            heads.sort()
            head = heads[0]
            _, k, batch, pos, batches = head
            if len(heads) == 1:
                end = len(batch)
            else:
                bound, other = heads[1][0], heads[1][1]
                cut = bisect_right if k < other else bisect_left
                end = cut(batch, bound, pos, len(batch), key=key)
            yield from batch[pos:end] if pos or end < len(batch) else batch
            if end < len(batch):
                head[0], head[3] = batch[end][0], end
                continue
            batch = next(batches, None)
            if batch:
                head[0], head[2], head[3] = batch[0][0], batch, 0
            else:
                heads.pop(0)

    def merge(self, index: int, problem: Callable, finding: Callable, digest: Callable | None) -> FileResult:
        """Report one file's items in input order; its totals come back."""
        task = self.tasks[index]
        assert task is not None
        workers = [
            k for k in range(len(self.conns)) if self.conns[k] is not None and (task.shard or task.owner == k)
        ]
        res = FileResult()
        eras: dict[str, list] = {}
        broken = 0
        for _key, item in self._merged(index, workers):
            what = item[0]
            if what == "f":
                finding(finding_from(item[1]))
            elif what == "p":
                problem(item[1])
            elif what == "m":
                if digest is not None:
                    digest(item[1], item[2])
            elif what == "c":
                res.cells.append((item[1], item[2]))
            elif what == "end":
                _, records, messages, file_eras, bad = item
                # every sharding worker counts every record, and some lines that only their owner
                # found broken (tracer.parallel_worker)
                res.records = max(res.records, records)
                broken += bad
                res.messages += messages
                for era, (n, key) in file_eras.items():
                    seen = eras.setdefault(era, [0, key])
                    seen[0] += n
                    seen[1] = min(seen[1], key)
            elif what == "redo":
                res.redo_from_line = item[1]
                return res
            elif what == "error":
                raise InputError(item[1])
        res.records -= broken
        res.eras = [(era, n) for era, (n, _) in sorted(eras.items(), key=lambda kv: kv[1][1])]
        return res

    def close(self) -> None:
        for conn in self.conns:
            if conn is not None:
                conn.close()
        for p in self.procs:
            if p is not None and p.poll() is None:
                p.terminate()
        for p in self.procs:
            if p is not None:
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if self.router is not None:  # (its writes fail once the workers are gone)
            self.router.join()


def _widen(fh) -> None:
    """A pipe of 1 MiB instead of 64 KiB: the router can run a few batches ahead of each worker,
    and a worker ahead of the merge, instead of each waiting on the other batch by batch."""
    try:
        fcntl.fcntl(fh.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except (AttributeError, OSError):  # (not Linux, or above the system's limit: the default size)
        pass


def _route_all(sharded: list[Task], inboxes: list[Channel]) -> None:
    """The router thread: each sharded file in the order the workers take them
    (tracer.parallel_route), until one ends in a redo or an error; then the workers' stdin closes."""
    try:
        for task in sharded:
            if not route(task, inboxes):
                break
    except OSError:  # a worker gone: the merge tells which
        pass
    finally:
        for inbox in inboxes:
            inbox.close()


def start_pool(
    opened: list[OpenInput], jobs: int, rules: RuleSet, digests: bool, tasks: list[Task | None]
) -> Pool | None:
    """A pool for these inputs and their TASKS (tracer.parallel.plan: the caller plans first, and
    loads this module only when a task is given), or None when one process is the faster way."""
    if not any(tasks) or not sys.executable:  # (an embedded interpreter: nothing to start workers with)
        return None
    for inp, task in zip(opened, tasks, strict=True):
        if task is not None:
            inp.fh.close()  # a worker reads it
    return Pool(tasks, jobs, [r.id for r in rules.rules], digests)


__all__ = ["Pool", "WorkerFailed", "start_pool"]
