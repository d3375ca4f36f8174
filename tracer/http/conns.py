"""Which connection (`Record.conn`, what pairing and session state key on) an HTTP exchange joins.

A request and its answers always share one. Beyond that, in this order:
- a request carrying `Mcp-Session-Id` joins that session's connection (the one its `initialize`
  used, or a new one for a session that began before the capture), whichever TCP connection the
  client sent it on;
- session-less traffic is grouped by the real client connection (mitmproxy's client connection id,
  else the peer's address and port) and endpoint: concurrent clients, or concurrent sessions of one
  client process, never share a connection (their request ids may collide). A request that starts
  afresh (`initialize`, `server/discover`, a modern request carrying its `_meta` protocolVersion) on
  a TCP connection whose previous traffic became a session starts a new connection;
- a legacy message that presumes a handshake (not `initialize`, no modern `_meta`) arriving on a
  new TCP connection joins a session-less handshake of the same client address, User-Agent and
  endpoint: a legacy client of a server without session ids opens several TCP connections for
  one session. With one such handshake it joins it; with several, only on evidence (request id
  continuity, the request a cancel names), else it is said not to be attributable
  (tracer.http.tracks);
- without any client identity (a HAR file) session-less traffic is grouped by (client address,
  User-Agent, endpoint), modern requests apart, and one whose id is in progress there on a
  connection of its own (another client's).
Modern Streamable HTTP is stateless: facts about the server (its tools) belong to the endpoint and
are shared across connections by the analysis (tracer.http.state), not by merging connections.

When a client's TCP connection closes, the connections only it carried (session-less, not a legacy
handshake others may join) end with a `connection-closed` event once their exchanges are done, so
the analysis forgets them: memory stays bounded however many TCP connections come and go.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson

from tracer.classify import id_key
from tracer.http.headers import authority_path, endpoint_of
from tracer.http.tracks import Tracks
from tracer.session import BoundedMap

META_VERSION = "io.modelcontextprotocol/protocolVersion"
FRESH_METHODS = ("initialize", "server/discover")
NAMES_CAP = 200_000  # connection names remembered for uniqueness
SESSIONS_CAP = 100_000  # Mcp-Session-Ids remembered
CANCELS_KEPT = 256  # characters of a string request id an `unattributed` note keeps
UNANSWERED_CAP = 1024  # ids sent and never answered a HAR's shared modern connection remembers


def client_ip(client: str) -> str:
    if not client:
        return ""
    host = client.rsplit(":", 1)[0] if client.count(":") == 1 or client.startswith("[") else client
    return host.strip("[]")


def body_facts(body: bytes | None) -> tuple[str | None, bool, bool, object, object]:
    """(the JSON-RPC method, whether the body starts afresh, whether it presumes a legacy handshake,
    its id, the `requestId` a cancel names) of a request body. Untrusted bytes: anything that is not
    one JSON-RPC object presumes nothing; an id or requestId that is not a string or integer is None."""
    try:
        obj = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return None, False, False, None, None
    if type(obj) is not dict:
        return None, False, False, None, None
    method = obj.get("method")
    method = method if type(method) is str else None
    params = obj.get("params")
    meta = params.get("_meta") if type(params) is dict else None
    modern = type(meta) is dict and META_VERSION in meta
    fresh = modern or method in FRESH_METHODS
    cancels = (
        params.get("requestId") if method == "notifications/cancelled" and type(params) is dict else None
    )
    return method, fresh, not fresh, _id(obj.get("id")), _id(cancels)


def has_result(body: bytes | bytearray) -> bool:
    """Whether BODY is a JSON-RPC object with a `result` (untrusted bytes: anything else is not)."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return type(obj) is dict and "result" in obj


def answers(body: bytes | bytearray, key: tuple) -> bool:
    """Whether BODY is the JSON-RPC response (a `result` or an `error`) to the request whose id key
    is KEY (untrusted bytes: anything else is not)."""
    try:
        obj = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    if type(obj) is not dict or "method" in obj or ("result" not in obj and "error" not in obj):
        return False
    return id_key(obj.get("id")) == key


def _id(value: object) -> object:
    return value if type(value) is int or type(value) is str else None


class Connections:
    """The connection table of one HTTP door (recorder). `close` is called with a connection whose
    last carrier went away and whose exchanges are done."""

    def __init__(self, close: Callable[[str, str], object]):
        self._close = close
        self._names: BoundedMap = BoundedMap(NAMES_CAP)
        self._next: BoundedMap = BoundedMap(NAMES_CAP)  # base -> the number its next name tries first
        self._tcp: dict[tuple, str] = {}  # (client connection, endpoint) -> conn
        self._carriers: dict[str, set[tuple]] = {}  # conn -> the TCP keys bound to it
        self._clients: dict[str, set[tuple]] = {}  # client connection -> its TCP keys
        self._groups: BoundedMap = BoundedMap(SESSIONS_CAP)  # (client ip, User-Agent, endpoint) -> conn
        self._group_of: dict[str, tuple] = {}  # conn -> its key in _groups
        self._sid: BoundedMap = BoundedMap(SESSIONS_CAP)  # Mcp-Session-Id -> conn
        self._owned: BoundedMap = BoundedMap(SESSIONS_CAP)  # conns a session id owns
        self._active: dict[str, int] = {}  # conn -> exchanges in progress
        self._closing: dict[str, str] = {}  # conn -> client, closed once its exchanges are done
        self.tracks = Tracks()  # session-less legacy handshakes new TCP connections may join
        self._open: dict[tuple, dict[str, int]] = {}  # request id key -> conns it is in progress on
        self._track_group: dict[str, tuple] = {}  # a track's conn (live or ended) -> its group
        self.notes: list[tuple[str, dict]] = []  # (conn, event data) to record before the message
        self._modern: BoundedMap = BoundedMap(SESSIONS_CAP)  # group -> its modern requests' conn (HAR)
        # such a conn -> ids of its requests in progress (forgotten with its `_modern` entry)
        self._busy: BoundedMap = BoundedMap(SESSIONS_CAP)
        # such a conn -> ids of its requests whose exchange ended unanswered (the newest UNANSWERED_CAP)
        self._unanswered: BoundedMap = BoundedMap(SESSIONS_CAP)

    def unique(self, base: str) -> str:
        """BASE, else BASE#2, BASE#3...: the first name not taken. The search starts after the
        number BASE last got: a client that opens a TCP connection per request has one base for
        all of them, and probing from #2 each time made the Nth connection cost N lookups."""
        n = self._next.get(base, 1)
        name = base if n == 1 else f"{base}#{n}"
        while name in self._names:
            n += 1
            name = f"{base}#{n}"
        self._names.put(name, True)
        self._next.put(base, n + 1)
        return name

    @staticmethod
    def base(client: str, url: str) -> str:
        return f"{client_ip(client) or 'client'}→{authority_path(url)}"

    # -- assignment ------------------------------------------------------------------------------

    def for_session(self, sid: str, client: str, url: str) -> str:
        conn = self._sid.get(sid)
        if conn is None:  # a session that began before the capture did
            # numbered, not named after the id: the name is stored in clear, the id is a credential
            conn = self.unique(f"{self.base(client, url)} session {len(self._sid) + 1}")
            self._sid.put(sid, conn)
            self._owned.put(conn, sid)
        return conn

    def for_sessionless(
        self,
        client_id: str,
        client: str,
        url: str,
        user_agent: str | None,
        fresh: bool,
        presumes: bool,
        method: str | None = None,
        rid: object = None,
        cancels: object = None,
    ) -> str:
        conn = self._sessionless(client_id, client, url, user_agent, fresh, presumes, method, rid, cancels)
        self.tracks.sent(conn, method, rid)
        return conn

    def _sessionless(self, client_id, client, url, user_agent, fresh, presumes, method, rid, cancels) -> str:
        endpoint = endpoint_of(url)
        group = (client_ip(client), user_agent, endpoint)
        carrier = client_id or client
        if not carrier:
            return self._unseen(group, client, url, fresh, presumes, method, rid, cancels)
        key = (carrier, endpoint)
        bound = self._tcp.get(key)
        if bound is not None and not (fresh and bound in self._owned):
            return bound
        conn = self._place(group, client, url, method, rid, cancels) if bound is None and presumes else None
        if conn is None and bound is None and method == "initialize":
            conn = self.tracks.reinitialized(group, rid)  # (a session initializing again: MCP402's)
        if conn is None:  # named after the client's address and port: one per TCP connection
            conn = self.unique(f"{client or 'client'}→{authority_path(url)}")
        self._bind(key, carrier, conn)
        return conn

    def _unseen(self, group: tuple, client: str, url: str, fresh, presumes, method, rid, cancels) -> str:
        """A message with no client identity (a HAR entry without `connection`: mitmproxy's HAR
        export writes none). Each one is as a request on a TCP connection of its own (what the
        official SDK client does against a server without session ids), so the same evidence
        places it: a second session-less `initialize` of the group starts a connection of its own
        and a legacy message joins the handshake its ids continue (tracer.http.tracks). A modern
        request: `_modern_conn`. The rest (a group without a handshake) goes on the group's
        connection, as before."""
        if fresh and method != "initialize":
            return self._modern_conn(group, client, url, id_key(rid))
        conn = self._groups.get(group)
        if presumes and conn is not None:
            placed = self._place(group, client, url, method, rid, cancels)
            if placed is not None:
                return placed
        if conn is not None and method == "initialize" and self.tracks.known(group):
            again = self.tracks.reinitialized(group, rid)  # (a session initializing again: MCP402's)
            if again is not None:
                return again
            return self.unique(self.base(client, url))  # (another handshake of the group is on it)
        if conn is None:
            conn = self.unique(self.base(client, url))
            self._groups.put(group, conn)
        return conn

    def _modern_conn(self, group: tuple, client: str, url: str, key: tuple | None) -> str:
        """A modern request with no client identity. It stands alone (stateless): the group's
        modern requests share a connection of their own, never a legacy handshake's (a legacy
        answer was paired with a modern request there), and one whose id is in progress on it is
        another client's, so it is on a connection of its own, which ends with its exchange (memory
        stays bounded). Before, 24 concurrent modern SDK clients in stock mitmdump's HAR were judged
        as one session: 278 false MCP202/MCP204. An id whose exchange ended without its answer (a
        stream the client gave up on: mitmproxy writes it as 200 with an empty body) is still
        pending for the analysis, so it is taken too: 8 concurrent modern SDK clients whose
        cancelled `tools/call` id 13 went unanswered were read as one client reusing id 13 (false
        MCP202/MCP511)."""
        conn = self._modern.get(group)
        if conn is None:
            conn = self.unique(self.base(client, url))
            self._modern.put(group, conn)
            self._busy.put(conn, {})
            self._unanswered.put(conn, BoundedMap(UNANSWERED_CAP))
        elif key is not None and (key in self._busy.get(conn, ()) or key in self._unanswered.get(conn, ())):
            conn = self.unique(self.base(client, url))
            self._closing[conn] = "entry"
        return conn

    def _place(self, group: tuple, client: str, url: str, method, rid, cancels) -> str | None:
        """The connection a legacy message on a new TCP connection joins (tracer.http.tracks), a new
        one with its note, or None (no handshake to join: a connection of its own, as any)."""
        key = id_key(cancels)
        on = self._open.get(key, ()) if key is not None else ()
        open_on = [c for c in on if self._track_group.get(c) == group]
        how, what = self.tracks.place(group, method, rid, cancels, open_on)
        if how == "join":
            if open_on:  # a cancelled request: another cancel naming its id points no more at it
                self._open[key].pop(what, None)
                if not self._open[key]:
                    del self._open[key]
            return what
        if how == "none":
            return None
        why, of = what[:2]
        if how == "new":
            conn = self.unique(f"{client or 'client'}→{authority_path(url)}")
            self.tracks.named(conn)
            self._track_group[conn] = group
            # (the ended connections close after this note is recorded, `settle`: the analysis reads
            # their handshakes at the note)
            note = {"event": "session-continued", "why": why, "of": of}
            if not what[2]:
                note["partial"] = True  # `of` does not name every session it may continue
            self.notes.append((conn, note))
            return conn
        conn = self.unique(f"{client or 'client'}→{authority_path(url)} (unattributed)")
        note = {"event": "unattributed", "why": why, "candidates": of}
        if method is not None:
            note["method"] = method
        if cancels is not None and (type(cancels) is int or len(cancels) <= CANCELS_KEPT):
            note["cancels"] = cancels  # (the analysis finds the request by it; an absurd one is left out)
        if method is None and rid is not None and (type(rid) is int or len(rid) <= CANCELS_KEPT):
            note["answers"] = rid  # an answer to a server's request: the asked session may be any
        self.notes.append((conn, note))
        return conn

    def _ended(self, conn: str) -> None:
        """A track that ended (tracer.http.tracks): nothing joins it any more; it closes once no TCP
        connection carries it and its exchanges are done."""
        if self._carriers.get(conn) or conn in self._owned:
            return
        if self._active.get(conn):
            self._closing[conn] = ""
        else:
            self._closed(conn, "")

    def handshake(
        self, conn: str, client: str, url: str, user_agent: str | None, init_id: object = None
    ) -> None:
        """A session-less `initialize` went out on CONN: later legacy messages of that client on
        other TCP connections may join it."""
        if conn not in self._owned:
            group = (client_ip(client), user_agent, endpoint_of(url))
            self._groups.put(group, conn)
            self._group_of[conn] = group
            self.tracks.handshake(group, conn, init_id)
            self._track_group[conn] = group
            self._drain_retired()

    def refused(self, conn: str, carried: bool) -> None:
        """The `initialize` on CONN got no result (a JSON-RPC error, an HTTP error, no answer): no
        session began there, so nothing joins it. Left a track, a client that tried again (another
        protocol version) had two handshakes, and its whole session went to continued connections
        judged by no handshake. CARRIED: it came on a TCP connection (not from a HAR file, whose
        session-less connections never end)."""
        if not self.tracks.live(conn):
            return
        self.tracks.drop(conn)
        idle = not self._carriers.get(conn) and conn not in self._owned and not self._active.get(conn)
        if carried and idle:
            self._closed(conn, "closed")  # (its TCP connection closed while it was a track)

    def minted(self, sid: str, conn: str) -> None:
        """A response assigned SID on CONN's exchange: the session keeps the connection."""
        if sid in self._sid:
            return
        self._sid.put(sid, conn)
        self._owned.put(conn, sid)
        group = self._group_of.pop(conn, None)
        if group is not None and self._groups.get(group) == conn:
            del self._groups[group]
        self.tracks.drop(conn)
        self._track_group.pop(conn, None)
        self._closing.pop(conn, None)

    def keep(self, conn: str) -> None:
        """CONN is a session of its own (HTTP+SSE): it never ends with a TCP connection."""
        self._owned.put(conn, "")

    def _bind(self, key: tuple, carrier: str, conn: str) -> None:
        old = self._tcp.get(key)
        if old is not None:
            self._carriers.get(old, set()).discard(key)
        self._tcp[key] = conn
        self._carriers.setdefault(conn, set()).add(key)
        self._clients.setdefault(carrier, set()).add(key)

    # -- lifetimes -------------------------------------------------------------------------------

    def started(self, conn: str, key: tuple | None = None) -> None:
        """An exchange of CONN began (KEY: the id key of the request it carries, for cancels)."""
        self._active[conn] = self._active.get(conn, 0) + 1
        busy = self._busy.get(conn) if key is not None else None
        if busy is not None:
            busy[key] = busy.get(key, 0) + 1
        if key is not None and conn in self._track_group:
            on = self._open.setdefault(key, {})
            on[conn] = on.get(conn, 0) + 1

    def watches(self, conn: str) -> bool:
        """Whether CONN is a HAR's shared modern connection: `finished` wants to know whether its
        exchanges' requests were answered (`_modern_conn`)."""
        return conn in self._busy

    def finished(self, conn: str, key: tuple | None = None, answered: bool = True) -> None:
        busy = self._busy.get(conn) if key is not None else None
        if busy is not None and key in busy:
            if busy[key] > 1:
                busy[key] -= 1
            else:
                del busy[key]
            unanswered = self._unanswered.get(conn)
            if unanswered is not None:
                if answered:
                    unanswered.pop(key, None)
                else:
                    unanswered.put(key, None)
        if key is not None:
            on = self._open.get(key)
            if on is not None and conn in on:
                if on[conn] > 1:
                    on[conn] -= 1
                else:
                    del on[conn]
                    if not on:
                        del self._open[key]
        n = self._active.get(conn, 0) - 1
        if n > 0:
            self._active[conn] = n
            return
        self._active.pop(conn, None)
        client = self._closing.pop(conn, None)
        if client is not None:
            self._closed(conn, client)

    def client_closed(self, carrier: str) -> None:
        """The client's TCP connection CARRIER closed: connections only it carried end."""
        for key in self._clients.pop(carrier, ()):
            conn = self._tcp.pop(key, None)
            if conn is None:
                continue
            left = self._carriers.get(conn)
            if left is not None:
                left.discard(key)
                if left:
                    continue
                del self._carriers[conn]
            if conn in self._owned or self.tracks.live(conn):
                continue  # a session (or a handshake other TCP connections join) outlives it
            if self._active.get(conn):
                self._closing[conn] = carrier
            else:
                self._closed(conn, carrier)

    def _closed(self, conn: str, client: str) -> None:
        self._track_group.pop(conn, None)
        self._group_of.pop(conn, None)
        self._close(conn, client)

    def settle(self) -> None:
        """Close the tracks that ended, once the notes about them are recorded."""
        self._drain_retired()

    def _drain_retired(self) -> None:
        retired = self.tracks.retired
        while retired:
            self._ended(retired.pop())
