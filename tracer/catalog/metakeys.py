"""Support for the `_meta` rules (tracer.rules.mcp30_meta_keys, mcp31_request_meta): key
verdicts, the `_meta` objects of a message, and the W3C Trace Context / Baggage syntax checks. No rules are registered here.

Traffic repeats the same few keys, so each distinct key is judged once and its verdict cached; the
`_meta` objects of a message (and the keys with a problem) are computed once per message and shared
by every rule that reads them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from tracer.jsonpath import member
from tracer.model import KIND_RESULT as _KIND_RESULT  # (enum members as globals: tracer.model)
from tracer.model import Analysed

_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_PREFIX = re.compile(rf"{_LABEL}(?:\.{_LABEL})*\Z")
_NAME = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?\Z")
_RESERVED_LABELS = frozenset({"modelcontextprotocol", "mcp"})

# Keys under MCP-reserved prefixes that the spec (any revision) or an official extension defines.
KNOWN_RESERVED_KEYS = frozenset(
    {
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientInfo",
        "io.modelcontextprotocol/clientCapabilities",
        "io.modelcontextprotocol/logLevel",
        "io.modelcontextprotocol/subscriptionId",
        "io.modelcontextprotocol/serverInfo",
        "io.modelcontextprotocol/related-task",  # 2025-11-25 tasks
        # official extension identifiers (may appear as keys of their own _meta entries)
        "io.modelcontextprotocol/ui",
        "io.modelcontextprotocol/tasks",
        "io.modelcontextprotocol/oauth-client-credentials",
    }
)

# Top-level domains common enough that a prefix ending in one reads as a forward domain name.
_TLDS = frozenset(
    {
        "com",
        "org",
        "net",
        "io",
        "dev",
        "ai",
        "app",
        "co",
        "edu",
        "gov",
        "mil",
        "int",
        "info",
        "biz",
        "me",
        "us",
        "uk",
        "de",
        "fr",
        "jp",
        "cn",
        "ru",
        "br",
        "in",
        "ca",
        "au",
        "nl",
        "se",
        "ch",
        "es",
        "it",
        "eu",
        "tech",
        "cloud",
        "xyz",
        "sh",
        "so",
        "gg",
        "tv",
        "cc",
        "ly",
        "to",
    }
)


@dataclass(frozen=True, slots=True)
class KeyVerdict:
    prefix: str | None
    name: str
    prefix_ok: bool
    name_ok: bool
    reserved: bool  # reserved prefix (2025-11-25+ rule) and not a key MCP defines
    reserved_l3: bool  # reserved prefix under the 2025-06-18 rule and not a key MCP defines
    forward_dns: bool  # the prefix looks like example.com rather than com.example

    @property
    def bad(self) -> bool:
        return not self.prefix_ok or not self.name_ok or self.reserved or self.reserved_l3 or self.forward_dns


def _judge(key: str) -> KeyVerdict:
    cut = key.rfind("/")
    if cut < 0:
        return KeyVerdict(None, key, True, _NAME.match(key) is not None, False, False, False)
    prefix, name = key[:cut], key[cut + 1 :]
    prefix_ok = _PREFIX.match(prefix) is not None
    labels = prefix.lower().split(".") if prefix_ok else []
    known = key in KNOWN_RESERVED_KEYS
    reserved = len(labels) >= 2 and labels[1] in _RESERVED_LABELS and not known
    reserved_l3 = any(lab in _RESERVED_LABELS for lab in labels[:-1]) and not known
    forward = len(labels) >= 2 and labels[-1] in _TLDS and labels[0] not in _TLDS
    return KeyVerdict(prefix, name, prefix_ok, _NAME.match(name) is not None, reserved, reserved_l3, forward)


_VERDICTS: dict[str, KeyVerdict] = {}
_PROBLEM: dict[str, KeyVerdict | None] = {}  # key -> its verdict when it has a problem, else None
_GOOD: set[str] = set()  # keys judged fine
_VERDICT_CAP = 8192


def verdict(key: str) -> KeyVerdict:
    v = _VERDICTS.get(key)
    if v is None:
        if len(_VERDICTS) >= _VERDICT_CAP:
            _VERDICTS.clear()
            _PROBLEM.clear()
            _GOOD.clear()
        v = _VERDICTS[key] = _judge(key)
        _PROBLEM[key] = v if v.bad else None
        if not v.bad:
            _GOOD.add(key)
    return v


def extension_id_problem(key: str) -> str | None:
    """Why a capability `extensions` key is not a valid extension identifier, or None."""
    if "/" not in key:
        return "has no prefix (an identifier is prefix/name, e.g. io.modelcontextprotocol/tasks)"
    v = verdict(key)
    if not v.prefix_ok:
        return f"has a malformed prefix {v.prefix!r}"
    if not v.name_ok:
        return f"has a malformed name {v.name!r}"
    return None


# -- the _meta objects of a message ---------------------------------------------------------------


def _walk(value: Any, path: str) -> list[tuple[str, dict]]:
    out: list[tuple[str, dict]] = []
    stack = [(value, path)]
    while stack:
        node, where = stack.pop()
        if type(node) is dict:
            for k, v in node.items():
                tv = type(v)
                if tv is dict:
                    sub = member(where, k)
                    if k == "_meta":
                        out.append((sub, v))
                    stack.append((v, sub))
                elif tv is list:
                    stack.append((v, member(where, k)))
        elif type(node) is list:
            for i, v in enumerate(node):
                if type(v) is dict or type(v) is list:
                    stack.append((v, f"{where}[{i}]"))
    return out


_META_BYTES = b'"_meta"'
_TOP_PATH = {"params": "$.params._meta", "result": "$.result._meta"}
_last_objects: list = [None, ()]


def meta_objects(m: Analysed) -> list[tuple[str, dict]] | tuple:
    """Every `_meta` object of the message as (JSON path, object). The top-level ones
    (`params._meta`, `result._meta`) are found directly; the whole message is walked only when its
    bytes hold more `"_meta"` keys than that (nested `Tool._meta` and the like)."""
    if _last_objects[0] is m:
        return _last_objects[1]
    objs: list[tuple[str, dict]] | tuple = ()
    count = m.rec.raw.count(_META_BYTES)
    obj = m.obj
    if count and type(obj) is dict:
        found = 0
        part = "result" if m.kind is _KIND_RESULT else "params"  # where a top-level _meta lives
        p = obj.get(part)
        if type(p) is dict and "_meta" in p:
            found = 1
            if type(p["_meta"]) is dict:
                objs = [(_TOP_PATH[part], p["_meta"])]
        if count > found or m.batch_seq is not None:
            objs = _walk(obj, "$")
    _last_objects[0] = m
    _last_objects[1] = objs
    return objs


NO_META = object()  # top_meta: the message has no _meta object
NESTED = object()  # top_meta: it has _meta objects other than (or besides) the top-level one


_last_top: list = [None, None]


def top_meta(m: Analysed):
    """The common case without allocating anything: the message's only `_meta` object when it is
    the top-level one (`params._meta` / `result._meta`), else NO_META or NESTED (then use
    `meta_objects`). Remembered for the last message: several rules ask in a row."""
    if _last_top[0] is m:
        return _last_top[1]
    _last_top[0] = m
    count = m.rec.raw.count(_META_BYTES)
    obj = m.obj
    if not count:
        top = NO_META
    elif count > 1 or m.batch_seq is not None:
        top = NESTED
    elif type(obj) is not dict:
        top = NO_META
    else:
        p = obj.get("result" if m.kind is _KIND_RESULT else "params")
        if type(p) is dict and "_meta" in p:
            meta = p["_meta"]
            top = meta if type(meta) is dict else NO_META
        else:
            top = NESTED  # the one "_meta" is nested (or merely a string value somewhere)
    _last_top[1] = top
    return top


_last_problems: list = [None, ()]
_UNSEEN = object()


def all_keys_fine(m: Analysed) -> bool:
    """The common case of `key_problems`, answered without building anything: no `_meta` at all,
    or only the top-level one with keys already judged fine."""
    top = top_meta(m)
    return top is NO_META or (top is not NESTED and _GOOD.issuperset(top))


def key_problems(m: Analysed) -> list[tuple[str, str, KeyVerdict]] | tuple:
    """(path of the key, key, verdict) for each `_meta` key of the message with any naming problem."""
    if _last_problems[0] is m:
        return _last_problems[1]
    out: list[tuple[str, str, KeyVerdict]] | tuple = ()
    top = top_meta(m)
    if top is NO_META or (top is not NESTED and _GOOD.issuperset(top)):
        _last_problems[0] = m
        _last_problems[1] = out
        return out
    get = _PROBLEM.get
    for path, meta in meta_objects(m):
        if _GOOD.issuperset(meta):
            continue  # every key already judged fine: one C-level pass
        for key in meta:
            v = get(key, _UNSEEN)
            if v is None:
                continue
            if v is _UNSEEN:
                if type(key) is not str:
                    continue
                v = verdict(key)
                if not v.bad:
                    continue
            out = [*out, (member(path, key), key, v)]
    _last_problems[0] = m
    _last_problems[1] = out
    return out


# -- W3C Trace Context and Baggage ---------------------------------------------------------------

_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?\Z", re.S)
_TS_KEY = r"(?:[a-z][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13})"
_TS_VALUE = r"[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]"
_TRACESTATE_MEMBER = re.compile(rf"{_TS_KEY}={_TS_VALUE}\Z")
_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_B_VALUE = r"[\x21\x23-\x2b\x2d-\x3a\x3c-\x5b\x5d-\x7e]*"
_OWS = r"[ \t]*"
_BAGGAGE_MEMBER = re.compile(
    rf"{_TOKEN}{_OWS}={_OWS}{_B_VALUE}(?:{_OWS};{_OWS}{_TOKEN}(?:{_OWS}={_OWS}{_B_VALUE})?)*{_OWS}\Z"
)


def check_traceparent(value: Any) -> str | None:
    """Why a `traceparent` value breaks W3C Trace Context (version-traceid-parentid-flags), or None."""
    if type(value) is not str:
        return "is not a string"
    mt = _TRACEPARENT.match(value)
    if mt is None:
        return (
            f"{value!r} is not version-traceid-parentid-flags "
            "(2, 32, 16 and 2 lowercase hex digits separated by '-')"
        )
    version, trace_id, parent_id, _flags, rest = mt.groups()
    if version == "ff":
        return "uses the forbidden version ff"
    if version == "00" and rest is not None:
        return "has fields after the flags, but version 00 has exactly four"
    if trace_id == "0" * 32:
        return "has an all-zero trace id"
    if parent_id == "0" * 16:
        return "has an all-zero parent id"
    return None


def check_tracestate(value: Any) -> str | None:
    """Why a `tracestate` value breaks W3C Trace Context (up to 32 key=value members), or None."""
    if type(value) is not str:
        return "is not a string"
    members = [p.strip(" \t") for p in value.split(",")]
    members = [p for p in members if p]
    if len(members) > 32:
        return f"has {len(members)} list members (at most 32)"
    for p in members:
        if _TRACESTATE_MEMBER.match(p) is None:
            return f"member {p!r} is not key=value (lowercase key, printable value without ',' and '=')"
    return None


def check_baggage(value: Any) -> str | None:
    """Why a `baggage` value breaks W3C Baggage (comma-separated key=value[;properties]), or None."""
    if type(value) is not str:
        return "is not a string"
    if not value.strip(" \t"):
        return "is empty (W3C Baggage has at least one key=value member)"
    if len(value.encode("utf-8", "surrogatepass")) > 8192:  # (lone surrogates are legal JSON escapes)
        return "is longer than 8192 bytes"
    members = value.split(",")
    if len(members) > 64:
        return f"has {len(members)} list members (at most 64)"
    for p in members:
        p = p.strip(" \t")
        if _BAGGAGE_MEMBER.match(p) is None:
            return f"member {p!r} is not key=value with a token key and a percent-encoded value"
    return None
