"""Rule dispatch: which message rules run on a message, in which order, compiled once per shape.

A message's shape is (kind, method, era, version, direction). Every message of one shape runs the
same rules (`RuleSet.for_message`: by kind, method, versions and `Rule.possible`), cut into runs
that share a prefilter (`RuleSet.plan`: `Rule.needs` keys and `Rule.gate` functions). The plan is
then compiled into one small Python function (`RuleSet.runner`) that calls those rules one after
the other: at 100,000 messages a second, the loop, the lookups and the tests a generic dispatcher
does around each of 20-45 rule calls cost as much as the rules themselves. The generated source is
registered with `linecache` under a name listing its rules, and each call's line names its rule and
where it is defined, so a rule that raises shows its own frame under a readable runner line.

Each saving has a general twin that gives the same findings (tests/tracer/test_dispatch_fast_paths.py):
`RuleSet(rules, fast=False)` runs every rule the message's kind, method and versions admit, in
order, through one plain loop, with no plan, prefilter or generated code. HTTP rules and end rules
(`run_http`, `run_end`) are plain loops.
"""

from __future__ import annotations

import inspect
import linecache
from collections.abc import Callable, Iterable
from dataclasses import replace

from tracer.catalog.registry import Rule
from tracer.era import versions_of
from tracer.model import Analysed, Direction, Era, Finding, Hit, Kind, Record
from tracer.protocol import ALL_METHODS, MODERN_EXTENSION_REQUESTS
from tracer.rules import all_rules

# Runners are cached by the message's raw shape (its method and version as sent), which odd
# traffic could vary without end; past this many shapes a runner is looked up through the bounded
# plan tables instead of being remembered under its raw shape.
_RUNNER_CAP = 4096


def finding(rule: Rule, hit: Hit | str, m: Analysed) -> Finding:
    """The Finding a rule's hit (a `str` or a `Hit`) on message `m` becomes."""
    rec = m.rec
    if type(hit) is str:
        return Finding(rule.id, rule.severity, hit, rec.seq, rec.line, rec.source, offset=rec.offset)
    return Finding(
        rule.id,
        hit.severity or rule.severity,
        hit.message,
        rec.seq,
        rec.line,
        rec.source,
        path=hit.path,
        related_seq=hit.related_seq,
        offset=hit.offset if hit.offset is not None else rec.offset,
    )


def emit(rule: Rule, out, m: Analysed) -> None:
    """Add what a rule returned (not None) to the message's findings."""
    if type(out) is str or type(out) is Hit:
        m.findings.append(finding(rule, out, m))
        return
    if not hasattr(out, "__iter__"):
        raise _bad_return(rule, out)
    for hit in out:
        if type(hit) is not str and type(hit) is not Hit:
            raise _bad_return(rule, hit)
        m.findings.append(finding(rule, hit, m))


def _bad_return(rule: Rule, value) -> TypeError:
    return TypeError(
        f"rule {rule.id} ({rule.fn.__qualname__}, {_where(rule.fn)}) returned a {type(value).__name__}: "
        "a rule returns None, a str, a Hit or an iterable of them"
    )


class RuleSet:
    """The selected rules, indexed by (kind, method, versions) so each message runs only its own."""

    def __init__(self, rules: Iterable[Rule] | None = None, *, fast: bool = True):
        rules = list(all_rules().values()) if rules is None else list(rules)
        self.rules = rules
        # False: every message runs through `_general` (the twin the fast paths are tested against)
        self.fast = fast
        # stable sort: id order, except that late rules (the schema safety net) come last
        self.message_rules = sorted((r for r in rules if r.phase == "message"), key=lambda r: r.order)
        self.end_rules = [r for r in rules if r.phase == "end"]
        # rules about HTTP facts (headers, status codes, SSE streams): they see every record that
        # has them, messages included (tracer.rules.mcp70_http)
        self.http_rules = [r for r in rules if r.phase == "http"]
        # message rules with an end-of-session check run it like an end rule, under their own id
        self.end_rules += [replace(r, fn=r.end_fn, phase="end") for r in rules if r.end_fn is not None]
        self._known_methods = frozenset().union(*(r.methods for r in self.message_rules if r.methods))
        # methods dispatch tells apart (the rest share one plan): the protocol's and the filters'
        self._plan_methods = (
            self._known_methods
            | ALL_METHODS
            | MODERN_EXTENSION_REQUESTS
            | frozenset().union(*(r.needs_methods for r in self.message_rules if r.needs_methods))
        )
        self._cache: dict[tuple, tuple[Rule, ...]] = {}
        self._plans: dict[tuple, tuple[tuple[str | Callable | None, tuple[Rule, ...]], ...]] = {}
        self._compiled: dict[int, Callable | None] = {}  # id(plan) -> its runner (plans are kept)
        # shape -> runner (see `runner`); the analyser reads it directly on its hot path
        self.runners: dict[tuple, Callable | None] = {}

    def _method_key(self, method: str | None) -> str | None:
        """The method as dispatch sees it: itself when the protocol or a rule's filter names it, else
        None (so odd traffic cannot grow the plan tables)."""
        return method if method in self._plan_methods else None

    def for_message(
        self, kind: Kind, method: str | None, versions: frozenset[str], direction: Direction | None = None
    ) -> tuple[Rule, ...]:
        """The rules a message of this shape runs, in dispatch order."""
        method = self._method_key(method)
        key = (kind, method, versions, direction)
        hit = self._cache.get(key)
        if hit is None:
            hit = tuple(
                r
                for r in self.message_rules
                if kind in r.kinds
                and (r.methods is None or (method is not None and method in r.methods))
                and versions <= r.versions
                and (r.possible is None or r.possible(kind, method, direction, versions))
            )
            self._cache[key] = hit
        return hit

    def plan(
        self, kind: Kind, method: str | None, versions: frozenset[str], direction: Direction | None = None
    ):
        """`for_message` cut into runs of consecutive rules sharing one prefilter: ((prefilter,
        rules), ...), the prefilter a key (`Rule.needs`), a function (`Rule.gate`) or None. Rule
        order is kept, so findings come out in the same order; a run is skipped as a whole when its
        key is absent from the message's params and result, or its gate says no."""
        method = self._method_key(method)  # bounded keys: odd traffic cannot grow the table
        key = (kind, method, versions, direction)
        plan = self._plans.get(key)
        if plan is None:
            runs: list[tuple[str | Callable | None, list[Rule]]] = []
            for r in self.for_message(kind, method, versions, direction):
                needs = r.needs if r.needs_methods is None or method in r.needs_methods else None
                prefilter = r.gate if r.gate is not None else needs
                if runs and runs[-1][0] == prefilter:
                    runs[-1][1].append(r)
                else:
                    runs.append((prefilter, [r]))
            plan = self._plans[key] = tuple((prefilter, tuple(rs)) for prefilter, rs in runs)
        return plan

    def runner(
        self, kind: Kind, method: str | None, era: Era, version: str | None, direction: Direction | None
    ) -> Callable | None:
        """The compiled plan for a message of this shape: `run(m, session)` appends the findings of
        every rule to `m.findings`. None when no rule applies."""
        key = (kind, method, era, version, direction)
        run = self.runners.get(key, False)
        if run is False and not self.fast:
            run = self._general
            if len(self.runners) < _RUNNER_CAP:
                self.runners[key] = run
        if run is False:
            plan = self.plan(kind, method, versions_of(era, version), direction)
            run = self._compiled.get(id(plan), False)
            if run is False:
                run = self._compiled[id(plan)] = compile_plan(plan)
            if len(self.runners) < _RUNNER_CAP:
                self.runners[key] = run
        return run

    def _general(self, m: Analysed, s) -> None:
        """What a compiled runner does, the plain way: every message rule whose kind, method and
        versions admit the message, called in dispatch order (no plan, prefilter or generated code)."""
        method = m.method if m.method is not None else m.answers_method
        versions = versions_of(m.era, m.version)
        for r in self.message_rules:
            if (
                m.kind in r.kinds
                and (r.methods is None or (method is not None and method in r.methods))
                and versions <= r.versions
            ):
                out = r.fn(m, s)
                if out is not None:
                    emit(r, out, m)

    def run_http(self, rec: Record, m: Analysed | None, s, versions: frozenset[str]) -> list[Finding]:
        """Every HTTP rule on a record with HTTP facts (`fn(rec, m, s)`), when `versions` (what the
        message, else the connection, may speak) are all the rule's. Findings of a message are
        added to it; the others (no message) are returned."""
        loose: list[Finding] = []
        for r in self.http_rules:
            if not versions <= r.versions:
                continue
            out = r.fn(rec, m, s)
            if not out:
                continue
            for hit in [out] if type(out) is str or type(out) is Hit else out:
                if type(hit) is str:
                    hit = Hit(hit)
                f = Finding(
                    r.id,
                    hit.severity or r.severity,
                    hit.message,
                    rec.seq,
                    rec.line,
                    rec.source,
                    path=hit.path,
                    related_seq=hit.related_seq,
                )
                (m.findings if m is not None else loose).append(f)
        return loose

    def run_end(self, s, end_t_ns: int) -> list[Finding]:
        """Every end rule (and message rule's end check) on a closing session, `fn(s, end_t_ns)`
        yielding (PendingRequest | None, Hit); a finding about a request whose versions are not all
        the rule's is dropped."""
        out: list[Finding] = []
        for r in self.end_rules:
            for req, hit in r.fn(s, end_t_ns) or ():
                if req is not None and not versions_of(req.era, req.version) <= r.versions:
                    continue
                out.append(
                    Finding(
                        r.id,
                        hit.severity or r.severity,
                        hit.message,
                        req.seq if req else 0,
                        req.line if req else 0,
                        req.source if req else "",
                        path=hit.path,
                        related_seq=hit.related_seq,
                        offset=hit.offset,
                    )
                )
        return out


def compile_plan(plan) -> Callable | None:
    """One function that runs a plan: each rule called in order, each run of rules behind its
    prefilter, what a rule returns appended as findings. Generated source, because a loop over the
    plan costs a lookup, a test and a branch per rule that this straight-line code does not."""
    if not plan:
        return None
    names: dict[str, object] = {"emit": emit}
    lines = ["def run(m, s):"]
    if any(type(pre) is str for pre, _ in plan):
        lines += ["    params = m.params", "    result = m.result"]
    # A gate is a read of (m, s) that no rule changes (rules only add findings): one asked again
    # later in the plan (its runs split by a rule between them) is answered from a local.
    gates = [pre for pre, _ in plan if pre is not None and type(pre) is not str]
    asked: dict[int, str] = {}  # id(gate) -> the local holding its answer
    for i, (pre, rules) in enumerate(plan):
        indent = "    "
        if type(pre) is str:  # Rule.needs: the key the params or result must have
            names[f"key{i}"] = pre
            lines.append(
                f"    if (params is not None and key{i} in params) or (result is not None and key{i} in result):"
            )
            indent = "        "
        elif pre is not None and id(pre) in asked:  # Rule.gate, asked earlier in this plan
            lines.append(f"    if {asked[id(pre)]}:  # {_where(pre)}")
            indent = "        "
        elif pre is not None and sum(g is pre for g in gates) > 1:  # Rule.gate, asked again later
            names[f"gate{i}"] = pre
            asked[id(pre)] = f"open{i}"
            lines += [f"    open{i} = gate{i}(m, s)  # {_where(pre)}", f"    if open{i}:"]
            indent = "        "
        elif pre is not None:  # Rule.gate
            names[f"gate{i}"] = pre
            lines.append(f"    if gate{i}(m, s):  # {_where(pre)}")
            indent = "        "
        for r in rules:
            # the rule's own name in the generated line, so a traceback through it says which rule
            fn, rule = f"{r.id}_{r.fn.__name__}", f"rule_{r.id}"
            names[fn], names[rule] = r.fn, r
            lines += [
                f"{indent}out = {fn}(m, s)  # {r.id} {r.name}, {_where(r.fn)}",
                f"{indent}if out is not None:",
                f"{indent}    emit({rule}, out, m)",
            ]
    source = "\n".join(lines) + "\n"
    filename = f"<rule runner {' '.join(r.id for _, rules in plan for r in rules)}>"
    exec(compile(source, filename, "exec"), names)  # our own source, made from the plan alone
    # tracebacks print the runner's lines like a file's (mtime None: never invalidated); one entry
    # per plan, and plans are bounded by their shapes
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    return names["run"]


def _where(fn: Callable) -> str:
    """`module.py:line` of a function, for the runner's comments."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None:
        return getattr(fn, "__qualname__", repr(fn))
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}"
