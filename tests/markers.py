"""Which tests are `e2e` (start real processes) and which `needs_node` (use the Node peers), decided
from what a test really reaches, so a new test is marked without anyone remembering to.

A test reaches its own code, the fixtures it uses and every helper of ours (tests/*, the pytest
plugin in tracer/testing) those call, transitively through the names their code mentions. It is:
- `e2e` when that reaches `subprocess` / `asyncio.create_subprocess_*` / `os.fork`, the SDK's
  process-spawning stdio client, `sys.executable` (a Python child), or the plugin's fixtures that
  start a server (`mcp_stdio`, `mcp_http`, `mcp_mock`);
- `needs_node` (and so `e2e`) when it reaches tests/node_peers.py or tests/everything_peer.py, or
  names the TypeScript peers' folder (tests/ts_peers).
Names a code object mentions are read from its bytecode (`co_names`, string constants, nested
functions): no source parsing, no import of anything the test does not import itself.
"""

from __future__ import annotations

import inspect
import os
import sys
import types
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# helpers we walk into (the product itself is not walked: what it does is the test's business)
OURS = tuple(str(ROOT / d) + os.sep for d in ("tests", "fixtures", "tracer/testing"))
NODE_MODULES = frozenset({"tests.node_peers", "tests.everything_peer"})
NODE_STRINGS = ("ts_peers", "server-everything")
PROCESS_MODULES = frozenset({"subprocess", "asyncio.subprocess", "pty", "multiprocessing"})
PROCESS_NAMES = frozenset(
    {
        "create_subprocess_exec",
        "create_subprocess_shell",
        "fork",
        "forkpty",
        "spawnv",
        "executable",  # sys.executable: a Python child
        "runpytest_subprocess",  # pytester's pytest in a process of its own
    }
)
PROCESS_OBJECTS = ("mcp.client.stdio",)  # the SDK's stdio client starts its server
SERVER_FIXTURES = frozenset({"mcp_stdio", "mcp_http", "mcp_mock"})


def _file(obj) -> str:
    if isinstance(obj, types.ModuleType):
        return getattr(obj, "__file__", None) or ""
    if inspect.isfunction(obj):
        obj = inspect.unwrap(obj)  # a @contextmanager helper is contextlib's code around ours
    code = getattr(obj, "__code__", None)
    if code is not None:
        return code.co_filename
    mod = sys.modules.get(getattr(obj, "__module__", None) or "")
    return getattr(mod, "__file__", None) or ""


def _ours(obj) -> bool:
    try:
        return _file(obj).startswith(OURS)
    except Exception:  # an object with odd attributes is nobody's helper
        return False


def _codes(code: types.CodeType):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def _referenced(value) -> list:
    """Our callables in VALUE: itself, or a table's entries (two levels: rows of (name, fn))."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple | set | frozenset):
        out = []
        for v in value:
            for w in v if isinstance(v, list | tuple) else (v,):
                if callable(w) and _ours(w):
                    out.append(w)
        return out
    return [value] if callable(value) and _ours(value) else []


@cache
def _own_facts(fn) -> tuple[frozenset[str], tuple]:
    """(flags, further callables) of one function: flags are 'e2e' / 'node'."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return frozenset(), ()
    flags: set[str] = set()
    if getattr(fn, "__module__", None) in NODE_MODULES:
        flags.add("node")
    g = getattr(fn, "__globals__", {})
    nxt: list = []
    for c in _codes(code):
        for s in c.co_consts:
            if type(s) is str and any(n in s for n in NODE_STRINGS):
                flags.add("node")
        for name in c.co_names:
            if name in PROCESS_NAMES:
                flags.add("e2e")
            value = g.get(name)
            if value is None:
                continue
            if isinstance(value, types.ModuleType):
                if value.__name__ in PROCESS_MODULES:
                    flags.add("e2e")
                elif value.__name__ in NODE_MODULES:
                    flags.add("node")
                elif _ours(value):  # `from tests import sdk_peers` ... `sdk_peers.run_client()`
                    for n in c.co_names:
                        nxt.extend(_referenced(getattr(value, n, None)))
                continue
            if isinstance(value, list | tuple | dict | set | frozenset):
                nxt.extend(_referenced(value))  # a table of helpers (peer_sweep.SDK_RUNS)
                continue
            vmod = getattr(value, "__module__", None)
            if vmod in PROCESS_MODULES or (type(vmod) is str and vmod.startswith(PROCESS_OBJECTS)):
                flags.add("e2e")
            else:
                nxt.extend(_referenced(value))
    return frozenset(flags), tuple(nxt)


def _callables(obj):
    """The functions behind OBJ: a function (unwrapped), or a class's methods."""
    if isinstance(obj, type):
        for v in vars(obj).values():
            if isinstance(v, staticmethod | classmethod):
                v = v.__func__
            if inspect.isfunction(v):
                yield v
        return
    obj = getattr(obj, "_get_wrapped_function", lambda: obj)()  # a pytest fixture definition
    obj = inspect.unwrap(obj)
    inner = getattr(getattr(obj, "hypothesis", None), "inner_test", None)  # a @given test
    if inner is not None:
        yield from _callables(inner)
    if inspect.isfunction(obj):
        yield obj


@cache
def reach(fn) -> frozenset[str]:
    """Flags of everything FN reaches (cycles end at a function already on the way)."""
    flags: set[str] = set()
    seen: set = set()
    todo = [fn]
    while todo:
        obj = todo.pop()
        for f in _callables(obj):
            if f in seen:
                continue
            seen.add(f)
            own, nxt = _own_facts(f)
            flags |= own
            todo.extend(nxt)
    return frozenset(flags)


def flags_of(item) -> frozenset[str]:
    flags: set[str] = set()
    fn = getattr(item, "function", None)
    if fn is not None:
        flags |= reach(fn)
    info = getattr(item, "_fixtureinfo", None)
    for name in getattr(item, "fixturenames", ()):
        if name in SERVER_FIXTURES:
            flags.add("e2e")
        for fd in info.name2fixturedefs.get(name, ()) if info is not None else ():
            for f in _callables(fd.func):
                if _ours(f):  # our fixtures (conftest, test modules, the plugin), not pytest's
                    flags |= reach(f)
    if "node" in flags:
        flags.add("e2e")
    return frozenset(flags)


def mark(items, pytest) -> None:
    for item in items:
        flags = flags_of(item)
        if "e2e" in flags and "e2e" not in item.keywords:
            item.add_marker(pytest.mark.e2e)
        if "node" in flags and "needs_node" not in item.keywords:
            item.add_marker(pytest.mark.needs_node)
