"""The rule registry: one function per rule, registered with the metadata docs and reports need.

A rule has one of three shapes, chosen by its decorator:

- `@rule`: a message rule, `fn(m: Analysed, s: Session)`, run on every message its `kinds=`,
  `methods=` and `versions=` admit. It reads the message and a read-only view of the session
  *before* this message was applied (the analyser has already computed the message's era and
  pairing), and returns None (nothing found: the cheap path for rules that run on every message,
  so write those as plain functions, not generators), a `str` or a `Hit`, or an iterable of them
  (a generator is fine for rules that run rarely).
- `@http_rule`: a rule about an HTTP exchange, `fn(rec: Record, m: Analysed | None, s: Session)`,
  run on every record that carries HTTP facts (headers, status, SSE events), `m` the analysed
  message or None; it returns what a message rule returns.
- `@end_rule`: a rule about a whole session, `fn(s: Session, end_t_ns: int)`, run once when the
  session closes; it yields `(anchor, Hit)` pairs, the anchor the PendingRequest the finding is
  about (its seq and line) or None. `@at_end(ID)` gives a message rule such a check too.

Message rules may say which messages cannot concern them, so dispatch (tracer.dispatch) skips the
call: `needs="key"` (the params or result must have the key; optionally for some methods only,
`needs_methods=`), `gate=` and `possible=` (see Rule).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from tracer.catalog.specref import SpecRef, parse_spec, urls
from tracer.model import Direction, Kind, Severity
from tracer.protocol import ALL, describe_versions

MESSAGE_KINDS = frozenset({Kind.REQUEST, Kind.NOTIFICATION, Kind.RESULT, Kind.ERROR})
RESPONSES = frozenset({Kind.RESULT, Kind.ERROR})


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    name: str
    severity: Severity
    versions: frozenset[str]
    spec: str
    fn: Callable
    kinds: frozenset[Kind]  # message kinds the rule looks at
    methods: frozenset[str] | None  # only messages with one of these methods (or answering one)
    scope: str
    phase: str  # the shape, set by the decorator: "message" (@rule), "http" (@http_rule), "end" (@end_rule)
    family: str  # module name: mcp10_envelope, mcp2_correlation, ... (see tracer/rules/__init__.py)
    # 0 for ordinary rules; the schema safety net (MCP150-MCP152) uses 1 so it runs after every other
    # rule on a message and can stay quiet where a precise rule already explained the problem.
    order: int = 0
    # A message rule may also check something once per session when it closes (stdio: lines that
    # began a multi-line message the stream never finished). Registered with `at_end(rule_id)`.
    end_fn: Callable | None = None
    # A prefilter the dispatcher checks before calling the rule, to save a Python call on the many
    # messages a rule can say nothing about: the rule runs only on messages whose params or result
    # object has this key (e.g. "inputRequests": two dict lookups). With `needs_methods`, the
    # prefilter applies to messages of those methods only (the rule's other methods always run).
    # (A byte search in the raw frame was measured slower than the call it saves: JSON is full of
    # quotes, so even bytes.find crawls at ~0.4 ns/byte.)
    needs: str | None = None
    needs_methods: frozenset[str] | None = None
    # A prefilter that is a function `gate(m, session) -> bool`: False promises the rule finds
    # nothing on `m`. Consecutive rules in dispatch order sharing one gate are skipped together after a single
    # call (the four `_meta` key naming rules share "the message has a badly named key"). A gate only
    # reads: it is asked once per message, its answer reused by the plan's later runs it guards.
    gate: Callable | None = None
    # Decided once per dispatch plan, not per message: `possible(kind, method, direction, versions)`
    # -> False promises the rule finds nothing on ANY message of that shape, so the plan leaves it
    # out. `method` is the message's method (a response: the method it answers) when it is one the
    # protocol knows, else None (an unknown method, or a response whose request was not seen);
    # `direction` is the record's Direction or None; `versions` what the message may speak. The
    # rule must still check for itself: this only saves calls (tests/tracer/rules/test_rule_prefilter.py).
    possible: Callable | None = None
    # the spec pages `spec` cites, parsed once (tracer.catalog.specref); `links` renders them
    refs: tuple[SpecRef, ...] = ()

    @property
    def links(self) -> tuple[str, ...]:
        """The modelcontextprotocol.io (or JSON-RPC) pages the rule's spec reference names."""
        return urls(self.refs)

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.fn) or ""

    @property
    def summary(self) -> str:
        return self.doc.split("\n\n", 1)[0].replace("\n", " ")

    @property
    def versions_label(self) -> str:
        return describe_versions(self.versions)


# Common `possible=` predicates (see Rule.possible).


def by_client(kind, method, direction, versions) -> bool:
    """The rule only fires on what the client sends."""
    return direction is Direction.C2S


def by_server(kind, method, direction, versions) -> bool:
    """The rule only fires on what the server sends."""
    return direction is Direction.S2C


def not_by_server(kind, method, direction, versions) -> bool:
    """The rule never fires on what the server sends."""
    return direction is not Direction.S2C


def not_by_client(kind, method, direction, versions) -> bool:
    """The rule never fires on what the client sends."""
    return direction is not Direction.C2S


def method_starts(prefix: str) -> Callable:
    """The rule only fires on methods that begin with `prefix` (or a method dispatch does not know)."""

    def possible(kind, method, direction, versions) -> bool:
        return method is None or method.startswith(prefix)

    return possible


REGISTRY: dict[str, Rule] = {}


def _register(rule_id: str, fn: Callable, **fields) -> Callable:
    if rule_id in REGISTRY:
        raise ValueError(f"rule id {rule_id} registered twice")
    family = fn.__module__.rsplit(".", 1)[-1]
    REGISTRY[rule_id] = Rule(id=rule_id, fn=fn, family=family, refs=parse_spec(fields["spec"]), **fields)
    return fn


def rule(
    rule_id: str,
    name: str,
    severity: Severity,
    *,
    spec: str,
    versions: frozenset[str] = ALL,
    kinds: Iterable[Kind] = MESSAGE_KINDS,
    methods: Iterable[str] | None = None,
    scope: str = "single",
    order: int = 0,
    needs: str | None = None,
    needs_methods: Iterable[str] | None = None,
    gate: Callable | None = None,
    possible: Callable | None = None,
) -> Callable[[Callable], Callable]:
    """Register a message rule, `fn(m, s)`, under an id from shared/spec/RULES.md. Ids are never
    reused; a rule lives in the module of tracer/rules its id names (tests/tracer/rules/test_rule_homes.py)."""

    def deco(fn: Callable) -> Callable:
        return _register(
            rule_id,
            fn,
            name=name,
            severity=severity,
            versions=frozenset(versions),
            spec=spec,
            kinds=frozenset(kinds),
            methods=frozenset(methods) if methods is not None else None,
            scope=scope,
            phase="message",
            order=order,
            needs=needs,
            needs_methods=frozenset(needs_methods) if needs_methods is not None else None,
            gate=gate,
            possible=possible,
        )

    return deco


def http_rule(
    rule_id: str,
    name: str,
    severity: Severity,
    *,
    spec: str,
    versions: frozenset[str] = ALL,
    scope: str = "http",
) -> Callable[[Callable], Callable]:
    """Register a rule about an HTTP exchange, `fn(rec, m, s)`: it runs on every record with HTTP
    facts when the versions the message (else the connection) may speak are all in `versions`."""

    def deco(fn: Callable) -> Callable:
        return _register(
            rule_id,
            fn,
            name=name,
            severity=severity,
            versions=frozenset(versions),
            spec=spec,
            kinds=MESSAGE_KINDS,
            methods=None,
            scope=scope,
            phase="http",
        )

    return deco


def end_rule(
    rule_id: str,
    name: str,
    severity: Severity,
    *,
    spec: str,
    versions: frozenset[str] = ALL,
    scope: str = "session",
) -> Callable[[Callable], Callable]:
    """Register a rule about a whole session, `fn(s, end_t_ns)` yielding `(PendingRequest | None,
    Hit)`: it runs once when the session closes; a finding about a request whose versions are not
    all in `versions` is dropped."""

    def deco(fn: Callable) -> Callable:
        return _register(
            rule_id,
            fn,
            name=name,
            severity=severity,
            versions=frozenset(versions),
            spec=spec,
            kinds=MESSAGE_KINDS,
            methods=None,
            scope=scope,
            phase="end",
        )

    return deco


def at_end(rule_id: str) -> Callable[[Callable], Callable]:
    """Give an already registered message rule an end-of-session check, `fn(session, end_t_ns)`
    yielding `(PendingRequest | None, Hit)` like an end rule; its findings carry the rule's id."""

    def deco(fn: Callable) -> Callable:
        r = REGISTRY[rule_id]
        REGISTRY[rule_id] = Rule(**{**{f: getattr(r, f) for f in r.__dataclass_fields__}, "end_fn": fn})
        return fn

    return deco


class SelectionError(ValueError):
    pass


def _match(token: str, ids: list[str]) -> list[str]:
    token = token.strip().upper()
    if not token:
        return []
    if token in ids:
        return [token]
    if token in ("ALL", "MCP"):
        return list(ids)
    matched = [i for i in ids if i.startswith(token)]
    if not matched:
        raise SelectionError(f"unknown rule id or prefix {token!r} (see `mcptrace rules`)")
    return matched


def select_from(
    rules: dict[str, Rule], select: Iterable[str] | None = None, ignore: Iterable[str] | None = None
) -> list[Rule]:
    """Rules of `rules` (by id, in id order) chosen by ids or prefixes (`MCP1`, `MCP31`, `MCP310`);
    unknown tokens are an error. `tracer.rules.select_rules` applies it to the whole catalog."""
    ids = list(rules)
    chosen = set(ids)
    if select:
        chosen = set()
        for tok in select:
            for part in tok.split(","):
                chosen.update(_match(part, ids))
    for tok in ignore or ():
        for part in tok.split(","):
            chosen.difference_update(_match(part, ids))
    return [rules[i] for i in ids if i in chosen]
