"""Credential redaction for what reaches a capture or a terminal: HTTP headers, URLs, command lines.

One name pattern decides what is a credential: a header, URL query (or fragment) parameter or
command-line flag whose name contains auth, secret, token, key, password, session, cookie,
signature (and a few spellings of them). Values are replaced by `<redacted>`, except session ids
(`Mcp-Session-Id`, `?sessionId=`), which become a keyed hash (`hmac:<16 hex>`): the same id gives
the same stored value, so pairing and session rules still work on a redacted capture, and the key
lives only in this process's memory, so the stored value cannot be turned back into the id.

Every function here is idempotent (redacting a redacted value changes nothing) and total: any value
a peer or a file sends (any type, any string) gives an answer, never an exception.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
import secrets
from typing import Any
from urllib.parse import unquote

REDACTED = "<redacted>"

# Words that make a name a credential carrier. "auth" but not "author(s|ed)" (`--author me`).
_SECRET_WORDS = re.compile(
    r"(?i)auth(?!or(?:s|ed)?(?![a-z]))|secret|token|key|passw|pwd|session|cookie|signature|credential|bearer"
)
# Whole names the pattern misses (as query parameters or long flags).
_SECRET_EXACT = frozenset({"sig", "pat", "pw", "pass", "code_verifier"})
# Matches the pattern but is no credential: an auth *challenge*, which the auth rules read.
_NOT_SECRET = frozenset({"www-authenticate", "proxy-authenticate"})
# Single-letter flags that carry a credential in common tools (`mysql -p X`, `curl -k`-like `-k KEY`).
_SECRET_SHORT_FLAGS = frozenset({"-p", "-k"})
_HEADER_FLAGS = frozenset({"-H", "--header"})

# The keyed-hash form of a session id, so a second pass leaves it alone.
_HASHED = re.compile(r"hmac:[0-9a-f]{16}(?: \(not visible ASCII\))?")

# Header names from the project config (`redact = [...]`, tracer/config.py), loaded on first use.
_extra: frozenset[str] | None = None


def _extra_names() -> frozenset[str]:
    global _extra
    if _extra is None:
        try:
            from tracer.config import redact_from_config
        except ImportError:
            _extra = frozenset()
        else:
            _extra = redact_from_config()
    return _extra


def is_secret(name: Any) -> bool:
    """A header, query parameter or flag name that carries a credential (or a session id)."""
    if type(name) is not str:
        return False
    if _secret_name(name):
        return True
    extra = _extra_names()
    return bool(extra) and name.lower() in extra


@functools.lru_cache(maxsize=4096)  # header names repeat on every record: decide each once
def _secret_name(name: str) -> bool:
    low = name.lower()
    if low in _NOT_SECRET or low.startswith("mcp-param-"):
        # (an Mcp-Param-* header mirrors a tool argument the message body holds anyway, and MCP745
        # compares the two: hiding it would protect nothing and break the check)
        return False
    return bool(_SECRET_WORDS.search(low)) or low.strip("-") in _SECRET_EXACT


def is_session(name: Any) -> bool:
    """A name that carries a session id: stored as a keyed hash rather than `<redacted>`."""
    return type(name) is str and "session" in name.lower()


class SessionHasher:
    """Turns a session id into `hmac:<16 hex>` with a random key kept in memory only. An id with
    characters outside visible ASCII keeps a marker saying so (MCP720 checks exactly that)."""

    def __init__(self, key: bytes | None = None):
        self._key = key if key is not None else secrets.token_bytes(32)
        self._recent: dict[str, str] = {}  # a session's id comes on every request: hash it once

    def __call__(self, value: Any) -> Any:
        if type(value) is not str:
            return REDACTED if value is not None else None
        done = self._recent.get(value)
        if done is not None:
            return done
        if value == "" or value == REDACTED or _HASHED.fullmatch(value):
            return value
        digest = hmac.new(self._key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:16]
        bad = any(not 0x21 <= ord(c) <= 0x7E for c in value)
        out = f"hmac:{digest}" + (" (not visible ASCII)" if bad else "")
        if len(self._recent) >= 1024:  # bounded: a flood of ids starts it afresh
            self._recent.clear()
        self._recent[value] = out
        return out


# One key per process: every capture this process writes hashes the same id the same way.
PROCESS_HASHER = SessionHasher()


def redact_value(name: str, value: Any, hasher: SessionHasher | None = None) -> Any:
    """The stored form of a credential header's value. `hasher` None keeps session ids as they are
    (in-memory analysis of an imported file needs them; the capture writer passes one)."""
    if is_session(name):
        return hasher(value) if hasher is not None else value
    if type(value) is not str:
        return REDACTED
    low = name.lower()
    if low in ("authorization", "proxy-authorization", "authentication", "x-auth"):
        # Keep the auth scheme ("Bearer") so a reader can still see which kind of credential was sent.
        scheme, sep, rest = value.strip().partition(" ")
        if sep and rest and scheme.isalpha():
            return f"{scheme} {REDACTED}"
        return REDACTED
    if low == "cookie":  # keep the cookie names: which cookies were sent is not the secret
        return "; ".join(_cookie(part) for part in value.split(";"))
    if low == "set-cookie":  # keep the attributes (Path, HttpOnly...): only the value is secret
        first, sep, attrs = value.partition(";")
        return _cookie(first) + (sep + attrs if sep else "")
    return REDACTED


def _cookie(pair: str) -> str:
    name, eq, _ = pair.strip().partition("=")
    return f"{name}={REDACTED}" if eq else REDACTED


def redact_headers(headers: Any, hasher: SessionHasher | None = None) -> Any:
    """Headers are stored as a list of [name, value] pairs (order and repeats kept); a dict works too.
    Anything malformed passes unchanged (the capture reader reports it)."""
    if isinstance(headers, dict):
        return {k: _header_value(k, v, hasher) for k, v in headers.items()}
    if not isinstance(headers, list | tuple):
        return headers
    out = []
    for pair in headers:
        if isinstance(pair, list | tuple) and len(pair) == 2:
            out.append([pair[0], _header_value(pair[0], pair[1], hasher)])
        else:
            out.append(list(pair) if isinstance(pair, tuple) else pair)
    return out


# Headers whose values are URLs (a redirect after an OAuth login carries its `?code=`-like tokens).
_URL_HEADERS = frozenset({"location", "content-location", "referer", "link"})


def _header_value(name: Any, value: Any, hasher: SessionHasher | None) -> Any:
    if is_secret(name):
        return redact_value(name, value, hasher)
    if type(name) is str and type(value) is str and "://" in value and name.lower() in _URL_HEADERS:
        return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0), hasher), value)
    return value


# -- URLs ---------------------------------------------------------------------------------------

_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/?#@\s]*)@")


def redact_url(url: Any, hasher: SessionHasher | None = None) -> Any:
    """A URL with the credentials in its userinfo, query and fragment parameters redacted
    (`https://u:<redacted>@h/mcp?api_key=<redacted>&q=1`). Not a URL parser: a string that is no
    URL comes back unchanged."""
    if type(url) is not str:
        return url
    m = _USERINFO.match(url)
    if m is not None:
        user, colon, _pw = m.group(2).partition(":")
        # A userinfo without a password is most often a token (`https://ghp_x@github.com/...`).
        info = f"{user}:{REDACTED}" if colon else REDACTED
        url = m.group(1) + info + "@" + url[m.end() :]
    base, hash_mark, fragment = url.partition("#")
    base, qmark, query = base.partition("?")
    if qmark:
        base += "?" + _redact_params(query, hasher)
    if hash_mark:
        base += "#" + _redact_params(fragment, hasher)
    return base


_URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def _url_secrets(url: str) -> list[str]:
    """The credential values in a URL: its userinfo password (or lone user) and secret parameters."""
    found = []
    m = _USERINFO.match(url)
    if m is not None:
        user, colon, pw = m.group(2).partition(":")
        found.append(pw if colon else user)
    for part in re.split(r"[?&#]", url.split("?", 1)[1]) if "?" in url else []:
        name, eq, value = part.partition("=")
        if eq and is_secret(unquote(name)):
            found.append(value)
    return [s for s in found if s and s != REDACTED]


def redact_text(text: str, *sources: str) -> str:
    """A message for a terminal (an error line quoting a URL, perhaps cut short by the library that
    wrote it): the credentials of every URL in it, and of the URLs in `sources` wherever they show
    up in it, are redacted."""
    known: list[str] = []
    for src in sources:
        for url in _URL_IN_TEXT.findall(src or ""):
            known.extend(_url_secrets(url))
    for secret in sorted(set(known), key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0), PROCESS_HASHER), text)


def _redact_params(text: str, hasher: SessionHasher | None) -> str:
    parts = []
    for part in text.split("&"):
        name, eq, value = part.partition("=")
        plain = unquote(name)
        if eq and (is_secret(plain) or plain.lower() == "code"):  # (an OAuth redirect's authorization code)
            if not is_session(plain):
                value = REDACTED
            elif hasher is not None:  # else a session id is kept as it is, for analysis
                value = hasher(value)
        parts.append(name + eq + value)
    return "&".join(parts)


def redact_http(http: Any, hasher: SessionHasher | None = PROCESS_HASHER) -> Any:
    """A record's `http` member as it is stored: headers and URL redacted, session ids hashed."""
    if not isinstance(http, dict):
        return http
    out = dict(http)
    for key in ("req_headers", "resp_headers"):
        if out.get(key) is not None:
            out[key] = redact_headers(out[key], hasher)
    if "url" in out:
        out["url"] = redact_url(out["url"], hasher)
    return out


def redact_event_data(data: Any, hasher: SessionHasher | None = PROCESS_HASHER) -> Any:
    """An event record's `data` as it is stored: the HTTP+SSE `endpoint` event's URLs are redacted
    like the request URLs they are compared with (MCP902)."""
    if not isinstance(data, dict) or data.get("event") != "endpoint":
        return data
    out = dict(data)
    for key in ("uri", "url"):
        if key in out:
            out[key] = redact_url(out[key], hasher)
    return out


def redact_header_record(header: dict[str, Any]) -> dict[str, Any]:
    """A capture's header record as it is stored: its `upstream` URL and `command` line redacted
    (whichever door wrote it: proxy, tee, replay)."""
    out = dict(header)
    if "upstream" in out:
        out["upstream"] = redact_url(out["upstream"], PROCESS_HASHER)
    if isinstance(out.get("command"), list):
        out["command"] = redact_argv(out["command"])
    return out


# -- command lines ------------------------------------------------------------------------------

_ENV_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_HEADER_LINE = re.compile(r"^\s*([A-Za-z0-9!#$%&'*+.^_`|~-]+)\s*:\s?(.*)$", re.S)
_BEARER = re.compile(r"(?i)^bearer\s+\S")


def redact_header_line(text: str) -> str:
    """`Name: value` (a curl-style header argument) with the value redacted when Name is a credential."""
    m = _HEADER_LINE.match(text)
    if m is None or not is_secret(m.group(1)):
        return text
    name = m.group(1)
    return f"{name}: {redact_value(name, m.group(2), PROCESS_HASHER)}"


def _redact_json(value: Any, depth: int = 0) -> Any:
    if depth > 50:
        return REDACTED
    if isinstance(value, dict):
        return {
            k: REDACTED if is_secret(k) and not isinstance(v, dict | list) else _redact_json(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact_json(v, depth + 1) for v in value]
    return _redact_word(value) if isinstance(value, str) else value


def _redact_word(arg: str) -> str:
    """A command-line word that is not a flag: `NAME=value`, `Name: value`, `Bearer x`, a URL, a
    JSON object (`--config '{"apiKey": "..."}'`: its credential members)."""
    if arg[:1] in ("{", "[") and len(arg) < 1 << 16:
        try:
            parsed = json.loads(arg)
        except (ValueError, RecursionError):
            pass
        else:
            shown = _redact_json(parsed)
            return arg if shown == parsed else json.dumps(shown, ensure_ascii=False)
    env = _ENV_ASSIGNMENT.match(arg)
    if env and is_secret(env.group(1)):
        return f"{env.group(1)}={REDACTED}"
    if "://" not in arg and _HEADER_LINE.match(arg):
        return redact_header_line(arg)
    if _BEARER.match(arg):
        return arg.split(None, 1)[0] + " " + REDACTED
    return redact_url(arg, PROCESS_HASHER) if "://" in arg else arg


def _secret_flag(name: str) -> bool:
    if name in _SECRET_SHORT_FLAGS:
        return True
    return len(name) > 2 and is_secret(name.lstrip("-"))


def redact_argv(argv: list[str]) -> list[str]:
    """A command line fit for a capture header: the value after (or `=`-joined to) a flag named like
    a credential (`--api-key X`, `--token=X`, `-p X`, `--auth X`, `--pat X`), the credential headers
    of `-H`/`--header` values, `NAME=value` assignments (`env API_KEY=... server`), `Bearer` values
    and credentials in URLs (userinfo, `?api_key=`) are replaced by `<redacted>`."""
    out: list[str] = []
    pending: str | None = None  # "value": hide the next word; "header": redact it as a header
    for arg in argv:
        if type(arg) is not str:
            out.append(arg)
            continue
        if pending is not None:
            kind, pending = pending, None
            if kind == "header":
                out.append(redact_header_line(arg))
                continue
            if not arg.startswith("-") or arg == "-":
                out.append(REDACTED)
                continue
        if arg.startswith("-") and arg not in ("-", "--"):
            name, eq, value = arg.partition("=")
            if name in _HEADER_FLAGS:
                if eq:
                    out.append(f"{name}={redact_header_line(value)}")
                else:
                    out.append(arg)
                    pending = "header"
                continue
            if _secret_flag(name):
                if eq:
                    out.append(f"{name}={REDACTED}")
                else:
                    out.append(arg)
                    pending = "value"
                continue
            out.append(f"{name}={_redact_word(value)}" if eq else arg)
            continue
        out.append(_redact_word(arg))
    return out


# A secret shorter than this is not looked for in free text: "1" or "yes" would blank out words.
_MIN_ECHOED_SECRET = 4
_MIN_ENV_SECRET = 8  # (an environment's credential-named variables hold flags like "true" too)


def argv_secrets(argv: list[str]) -> list[str]:
    """The credential values `redact_argv` hides in ARGV: what a server may echo on its stderr
    (`error: unrecognized arguments: --api-key=...`), so the capture can hide them there too."""
    found: list[str] = []
    for arg, shown in zip(argv, redact_argv(argv), strict=True):
        if type(arg) is not str or shown == arg:
            continue
        if arg[:1] in ("{", "[") and shown[:1] == arg[:1]:
            try:
                _json_hidden(json.loads(arg), json.loads(shown), found, 0)
            except (ValueError, RecursionError):
                pass
            continue
        pieces = shown.split(REDACTED)
        m = re.fullmatch("(.+?)".join(re.escape(piece) for piece in pieces), arg, re.S)
        if m is None:
            # shown with spaces the argument lacks ("Authorization:Bearer X" is shown as
            # "Authorization: Bearer <redacted>"): the same words, any spacing between them
            spaced = ("\\s*".join(re.escape(w) for w in piece.split(" ")) for piece in pieces)
            m = re.fullmatch("(.+?)".join(spaced), arg, re.S)
        if m is not None:
            found.extend(m.groups())
    return [s for s in found if len(s) >= _MIN_ECHOED_SECRET]


def _json_hidden(value: Any, shown: Any, found: list[str], depth: int) -> None:
    """The values of VALUE that SHOWN (its `_redact_json`) replaced by `<redacted>`."""
    if shown == REDACTED and value != REDACTED:
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            found.append(str(value))
    elif depth < 50 and isinstance(value, dict) and isinstance(shown, dict):
        for k, v in value.items():
            _json_hidden(v, shown.get(k), found, depth + 1)
    elif depth < 50 and isinstance(value, list) and isinstance(shown, list):
        for v, s in zip(value, shown, strict=False):
            _json_hidden(v, s, found, depth + 1)


# A credential-named variable that holds where a credential is, not the credential: its name ends
# in a word for a place (SSH_AUTH_SOCK, GPG_KEY_FILE, VAULT_TOKEN_PATH, GNUPG_KEY_DIR)...
_PLACE_NAME = re.compile(r"(?i)(?:^|_)(?:sock|socket|file|filename|path|dir|home)$")
# ...or it names a file that is there (GOOGLE_APPLICATION_CREDENTIALS=/home/me/key.json); either
# way its value is one absolute or home path, no spaces (a PEM key's text, or a token, is none)
_PATH_VALUE = re.compile(r"(?:/|~/|[A-Za-z]:[\\/])[^\s]*")


def _is_place(name: str, value: str) -> bool:
    if _PATH_VALUE.fullmatch(value) is None:
        return False
    if _PLACE_NAME.search(name):
        return True
    try:
        return os.path.exists(os.path.expanduser(value))
    except (OSError, ValueError):  # (a NUL in it, a name too long)
        return False


def env_secrets(environ: Any) -> list[str]:
    """The values of credential-named environment variables (`GITHUB_TOKEN`, `OPENAI_API_KEY`...):
    a host hands a server its keys this way, and a server may print them on its stderr. A value
    that is the path of a credential (`SSH_AUTH_SOCK`, `*_KEY_FILE`, a credentials file that
    exists) is no secret itself: a server's error about it keeps the path that says what went
    wrong. (An AWS secret key may start with "/" too: it is hidden, not being such a name or file.)"""
    try:
        items = list(environ.items())
    except (AttributeError, TypeError):
        return []
    return [
        v
        for k, v in items
        if type(k) is str
        and type(v) is str
        and len(v) >= _MIN_ENV_SECRET
        and is_secret(k)
        and not _is_place(k, v)
    ]


def process_secrets(command: list[str], environ: Any) -> tuple[bytes, ...]:
    """The credentials a server started as COMMAND in ENVIRON is given (its credential arguments,
    its environment's credential variables), which it may print anywhere: each door that starts
    a server (the tee, `mcptrace replay`) learns them here and hides them in its capture."""
    return known_secrets(argv_secrets(command), env_secrets(environ))


def known_secrets(*groups: list[str]) -> tuple[bytes, ...]:
    """Secrets as bytes, longest first, each once (tracer.redact_echo hides them where echoed)."""
    seen = {s.encode("utf-8", "surrogateescape") for group in groups for s in group if s}
    return tuple(sorted(seen, key=len, reverse=True))
