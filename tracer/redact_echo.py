"""Known credentials wherever a peer echoes them: in a message, a log line, an HTTP body.

tracer.redact hides a credential by where it is: a header, a flag, a URL parameter named like one.
A peer can still repeat that value anywhere else: a tool result quoting the server's API key, a JSON
log line a server prints on stdout (`{"level":"info","msg":"using key sk-..."}`), an error body
repeating the bearer token. Secrets never reach a capture unless the user opts in (`--no-redact`),
so a door that knows a credential's value (the tee: the server's command line and environment; the
proxy: the credential headers and URL parameters it has seen) hides it wherever it shows up.

The stored bytes stay as close to the wire as they can: each occurrence of the value, as it is or as
a JSON string escapes it, becomes `<redacted>` in place. That keeps a JSON text valid when the value
sat inside a string (`<redacted>` needs no escaping). When it would not (the value spanned a quote,
or was a number), the message is parsed, the value replaced in its strings and numbers, and written
back compact: well-formed, at the cost of its spacing. The record then says how many occurrences
were hidden (`data.redacted`): a reader knows these bytes are not exactly the wire's.

Total: any bytes give an answer, never an exception.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

from tracer.redact import REDACTED, is_secret, is_session
from tracer.redact_match import KnownForms

_HIDDEN = REDACTED.encode()
# A value shorter than this is not looked for in bodies: "1" or "yes" would blank out words.
MIN_ECHOED = 8
# Credential values one recorder remembers (the most recent): a proxy sees few, and a flood of
# distinct tokens must not grow its memory. Session ids are kept apart, many more: a proxy in front
# of many sessions sees a new id per session, which must not push the bearer token out, and each
# live session's echoes must stay hidden. Looking for them costs one pass over a text however many
# are known (tracer.redact_match); memory is what bounds them (about 2 KB per 32-byte id indexed).
MAX_KNOWN = 64
MAX_SESSIONS = 4096
# A record cut by a size limit (a stdio line over the tee's cap, an HTTP body over 64 KiB, an SSE
# event over its cap) may end inside a known value: its start is all that is kept, and the matcher
# only sees whole values. A kept tail that is the start of a known value is hidden when it is at
# least this long, or at least half the value (a 4-character command-line secret): never more than
# 3 characters, and never half, of a credential stay visible. Shorter tails are let be: where a cut
# falls is a byte count, not content, so 4 bytes matching the start of a known value by chance are
# rare, and hiding 1 to 3 bytes would blank out the end of innocent text for almost nothing.
MIN_CUT_TAIL = 4


def secret_forms(secrets: Iterable[bytes]) -> tuple[bytes, ...]:
    """Each secret as the bytes a peer may have written it with: as it is, and as JSON encoders
    escape it in a string (non-ASCII as \\uXXXX, "/" as "\\/", Go's "<>&" as \\u003c...); longest
    first, so a secret holding another is hidden whole."""
    forms: set[bytes] = set()
    for s in secrets:
        if not s:
            continue
        forms.add(s)
        try:
            text = s.decode("utf-8")
        except UnicodeDecodeError:
            continue
        for ascii_only in (False, True):
            esc = json.dumps(text, ensure_ascii=ascii_only)[1:-1]
            forms.add(esc.encode("utf-8", "surrogatepass"))
            forms.add(esc.replace("/", "\\/").encode("utf-8", "surrogatepass"))
            html = esc.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            forms.add(html.encode("utf-8", "surrogatepass"))
    forms.discard(b"")
    return tuple(sorted(forms, key=len, reverse=True))


def hide_echoed(raw: bytes, forms: tuple[bytes, ...]) -> tuple[bytes, int]:
    """RAW with every occurrence of FORMS (`secret_forms`) hidden, and how many were. A JSON text
    stays a JSON text (see the module's docstring)."""
    count = 0
    out = raw
    for form in forms:
        if form in out:
            count += out.count(form)
            out = out.replace(form, _HIDDEN)
    if not count or raw.lstrip()[:1] not in (b"{", b"["):
        return out, count
    if _parses(out) or not _parses(raw):
        return out, count  # (still JSON; or never was: a log line, hidden as text)
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return out, count
    texts = [_text(f) for f in forms]
    hits = [0]
    clean = _scrub(value, [t for t in texts if t], hits, 0)
    try:
        rewritten = json.dumps(clean, ensure_ascii=False, separators=(",", ":")).encode(
            "utf-8", "surrogatepass"
        )
    except (ValueError, RecursionError):
        return out, count
    return rewritten, max(hits[0], 1)


def hide_cut_tail(raw: bytes, forms: tuple[bytes, ...]) -> tuple[bytes, int]:
    """RAW, the kept start of something cut short, with a tail that is the start of one of FORMS
    (`secret_forms`) hidden (see MIN_CUT_TAIL), and 1 if it was (0 if not)."""
    best = 0
    size = len(raw)
    for form in forms:
        n = len(form)
        head = form[: min(MIN_CUT_TAIL, (n + 1) // 2)]
        # (the earliest start in the last n-1 bytes whose rest is the start of FORM is the longest)
        p = raw.find(head, max(0, size - n + 1))
        while p >= 0 and size - p > best:
            if form.startswith(raw[p:]):
                best = size - p
                break
            p = raw.find(head, p + 1)
    return (raw[: size - best] + _HIDDEN, 1) if best else (raw, 0)


def hide_kept(raw: bytes, forms: tuple[bytes, ...], cut: int = 0) -> tuple[bytes, int]:
    """What a recorder stores of RAW (a line, a body, an event's data) and how many values were
    hidden: every echoed FORM (`hide_echoed`), and when RAW is the kept start of something longer
    (CUT bytes were not kept), a known value's start at its end (`hide_cut_tail`)."""
    out, count = hide_echoed(raw, forms)
    if cut > 0:
        out, tail = hide_cut_tail(out, forms)
        count += tail
    return out, count


def _text(form: bytes) -> str:
    try:
        return form.decode("utf-8")
    except UnicodeDecodeError:
        return ""


def _parses(raw: bytes) -> bool:
    try:
        json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return True


def _scrub(value: Any, texts: list[str], hits: list[int], depth: int) -> Any:
    if depth > 200:
        return value
    if isinstance(value, str):
        for t in texts:
            if t in value:
                hits[0] += value.count(t)
                value = value.replace(t, REDACTED)
        return value
    if isinstance(value, dict):
        return {
            _scrub(k, texts, hits, depth + 1): _scrub(v, texts, hits, depth + 1) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scrub(v, texts, hits, depth + 1) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        shown = json.dumps(value)
        if any(t in shown for t in texts):  # a numeric credential (a PIN) as a JSON number
            hits[0] += 1
            return REDACTED
    return value


def header_secrets(headers: Any, sessions: list[str] | None = None) -> list[str]:
    """The credential values in HEADERS (`[name, value]` pairs or a dict) that the capture hides
    there: a token after its scheme (`Bearer X`), each cookie's value, a whole API-key value.
    Session ids are not among them (they are stored hashed there): they go to SESSIONS, if given
    (one pass over the headers for both)."""
    pairs = headers.items() if isinstance(headers, dict) else headers
    if not isinstance(pairs, Iterable) or isinstance(pairs, str | bytes):
        return []
    found: list[str] = []
    for pair in pairs:
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            continue
        name, value = pair
        if type(name) is not str or type(value) is not str or not is_secret(name):
            continue
        if is_session(name):
            if sessions is not None:
                sessions.append(value.strip())
            continue
        low = name.lower()
        if low in ("cookie", "set-cookie"):
            parts = value.split(";") if low == "cookie" else value.split(";", 1)[:1]
            found.extend(p.partition("=")[2].strip() for p in parts)
            continue
        found.append(value.strip())
        scheme, sep, rest = value.strip().partition(" ")
        if sep and scheme.isalpha():
            found.append(rest.strip())
    return [v for v in found if len(v) >= MIN_ECHOED and v != REDACTED and REDACTED not in v]


def _url_sessions(url: Any) -> list[str]:
    if type(url) is not str or "?" not in url:
        return []
    found: list[str] = []
    for part in url.partition("#")[0].split("?", 1)[1].split("&"):
        name, eq, value = part.partition("=")
        if eq and is_session(unquote(name)):
            found += [value, unquote(value)]
    return found


def _long(values: list[str]) -> list[str]:
    return [v for v in dict.fromkeys(values) if len(v) >= MIN_ECHOED and v != REDACTED]


def url_secrets(url: Any) -> list[str]:
    """The credential values of a URL that the capture hides there: the userinfo's password (or a
    lone user, a token) and credential-named query or fragment parameters (not session ids), both
    as written and URL-decoded."""
    if type(url) is not str:
        return []
    found: list[str] = []
    _scheme, sep, rest = url.partition("://")
    if sep:
        auth = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        if "@" in auth:
            user, colon, pw = auth.rpartition("@")[0].partition(":")
            found.append(pw if colon else user)
    base, _, fragment = url.partition("#")
    query = base.split("?", 1)[1] if "?" in base else ""
    for part in (query + "&" + fragment).split("&"):
        name, eq, value = part.partition("=")
        plain = unquote(name)
        if eq and is_secret(plain) and not is_session(plain):
            found.append(value)
    found += [unquote(v) for v in found]
    return [v for v in dict.fromkeys(found) if len(v) >= MIN_ECHOED and v != REDACTED]


class EchoGuard:
    """The credential values one recorder has seen (the most recent MAX_KNOWN), and the session ids
    (the most recent MAX_SESSIONS), hidden wherever they come back. Learning a value already known
    costs one dict look-up, a new one its own forms only; looking costs one pass over the text,
    however many are known (tracer.redact_match)."""

    __slots__ = ("_known", "_last_sessions", "_match", "_sessions")

    def __init__(self) -> None:
        self._known: dict[bytes, tuple[bytes, ...]] = {}  # value -> its forms, oldest first
        self._sessions: dict[bytes, tuple[bytes, ...]] = {}
        self._match = KnownForms()
        self._last_sessions: list[str] = []  # (a session's id comes on each of its exchanges)

    @property
    def watching(self) -> bool:
        """Whether any value is known (else nothing is looked for)."""
        return bool(self._match)

    @property
    def forms(self) -> tuple[bytes, ...]:
        """Every form looked for, longest first."""
        return self._match.all()

    def learn(self, values: Iterable[str]) -> None:
        _remember(self._known, values, MAX_KNOWN, self._match)

    def learn_exchange(self, headers: Any, url: Any = None) -> None:
        """The credentials and session ids of a request's or a response's HEADERS and URL."""
        sessions: list[str] = []
        found = header_secrets(headers, sessions)
        if url is not None:
            found += url_secrets(url)
            sessions += _url_sessions(url)
        if found:
            self.learn(found)
        if sessions and sessions != self._last_sessions:
            self._last_sessions = sessions
            self.learn_sessions(_long(sessions))

    def learn_sessions(self, values: Iterable[str]) -> None:
        """Session ids: whoever holds one can act in its session (the spec's session hijacking),
        so an id a peer echoes is hidden like a credential. Where a record names the session (its
        `Mcp-Session-Id` header, a `?sessionId=` parameter) the capture writer stores its keyed
        hash instead (tracer.redact), which the session rules read: hiding leaves those alone."""
        _remember(self._sessions, values, MAX_SESSIONS, self._match)

    def hide(self, raw: bytes, cut: int = 0) -> tuple[bytes, int]:
        """RAW as stored, and how many values were hidden (CUT: see `hide_kept`)."""
        match = self._match
        if not match:
            return raw, 0
        hits = match.found(raw)
        out, count = hide_echoed(raw, hits) if hits else (raw, 0)
        if cut > 0:
            out, tail = hide_cut_tail(out, match.tail_candidates(out))
            count += tail
        return out, count

    def hide_text(self, text: Any, cut: int = 0) -> Any:
        """A header value (or a text cut short: CUT > 0) with the known values hidden (anything
        that is no string as it is)."""
        if type(text) is not str or not self._match:
            return text
        raw, errors = _encoded(text)
        out, n = self.hide(raw, cut)
        return out.decode("utf-8", errors) if n else text

    def hide_headers(self, pairs: list) -> list:
        """`[name, value]` PAIRS with the known values hidden in each value, but for a session's own
        header (its id is stored as the writer's keyed hash, which the session rules read). Most
        records repeat none: one look over all the other values at once tells."""
        if not self._match:
            return pairs
        values = "\n".join([v for k, v in pairs if type(v) is str and not is_session(k)])
        if not self._match.found(_encoded(values)[0]):
            return pairs
        return [[k, v if is_session(k) else self.hide_text(v)] for k, v in pairs]


def _remember(
    known: dict[bytes, tuple[bytes, ...]], values: Iterable[str], cap: int, match: KnownForms
) -> None:
    """Add VALUES to KNOWN and their forms to MATCH, the most recent CAP kept (the oldest go)."""
    for v in values:
        b = _encoded(v)[0]
        if b in known:
            continue
        if len(known) >= cap:
            oldest = next(iter(known))
            match.remove(known.pop(oldest))
        forms = secret_forms([b])
        known[b] = forms
        match.add(forms)


def _encoded(text: str) -> tuple[bytes, str]:
    """TEXT's bytes and the error handler that gives them back. Wire text decoded with
    surrogateescape encodes back as it came; a lone surrogate of another range (a HAR's JSON may
    hold "\\ud800" in a header) has no such byte, and surrogateescape refused it: the whole HAR
    was unreadable for one hostile header."""
    try:
        return text.encode("utf-8", "surrogateescape"), "surrogateescape"
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass"), "surrogatepass"
