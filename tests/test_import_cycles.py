"""The core's dependency direction: no import cycle between its packages, one writer of session
state reached from one place, and the SSE tee speaking to the HTTP recorder through its public
methods. Lazy imports (inside a function) and TYPE_CHECKING imports count: a cycle hidden by a
late import is still a cycle. pyproject's import-linter contract says the first as well
(`lint-imports`, run by .ci/run); this test shows the offending imports by name.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("tracer")


def _part(module: str) -> str:
    """The package (or top-level module) of the core a module belongs to: tracer.http.state -> tracer.http."""
    return ".".join(module.split(".")[:2])


def _package_imports(graph: grimp.ImportGraph) -> dict[tuple[str, str], list[tuple[str, str]]]:
    edges: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for importer in graph.modules:
        if not importer.startswith("tracer."):
            continue
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = _part(importer), _part(imported)
            if imported.startswith("tracer.") and a != b:
                edges.setdefault((a, b), []).append((importer, imported))
    return edges


def _cycles(nodes: set[str], edges: set[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    succ: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        succ[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for n in sorted(nodes):
        if n not in index:
            visit(n)
    return out


def test_no_import_cycle_between_the_cores_packages(graph):
    edges = _package_imports(graph)
    nodes = {p for pair in edges for p in pair}
    cycles = _cycles(nodes, set(edges))
    shown = [
        {
            "cycle": comp,
            "imports": sorted(
                imp for (a, b), imps in edges.items() if a in comp and b in comp for imp in imps
            ),
        }
        for comp in cycles
    ]
    assert shown == []


def test_only_the_analyser_calls_the_session_writer(graph):
    writers = {m for m in graph.modules if m == "tracer.update" or m.startswith("tracer.update.")}
    callers = {
        importer
        for w in writers
        for importer in graph.find_modules_that_directly_import(w)
        if importer not in writers
    }
    assert callers == {"tracer.analyser"}


def test_rules_read_sessions_without_importing_the_writer(graph):
    # (the rule modules reach the session through tracer.session, tracer.state and the read-only
    # queries; not even indirectly through a helper that writes)
    chains = graph.find_shortest_chains(importer="tracer.rules", imported="tracer.update", as_packages=True)
    assert chains == set()


def test_the_sse_tee_uses_only_public_members_of_the_http_recorder():
    tree = ast.parse((ROOT / "tracer/http/sse_tee.py").read_text())
    private = sorted(
        {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "rec"
            and node.attr.startswith("_")
        }
    )
    assert private == []
