"""Which session-less legacy session a message on a new TCP connection belongs to, by evidence.

A legacy client of a Streamable HTTP server that issues no `Mcp-Session-Id` (the official Python
SDK's `stateless_http=True`) may open a TCP connection per request: the official SDK client does.
Several such clients from one address with one `User-Agent` (a host running several sessions, a
test suite) cannot be told apart by anything HTTP carries. Joining "the last handshake" merged them
(4 SDK clients at once: ~100 false findings). Each handshake of a group (client address,
`User-Agent`, endpoint) is a *track*; a message on a new TCP connection joins one only on evidence:

- a request whose integer id continues exactly one track's sequence (clients number their requests
  1, 2, 3... per session: the official SDKs do), the track's last id + 1;
- `notifications/cancelled` naming a request in progress on exactly one track;
- `notifications/initialized` when exactly one track's handshake awaits it.

A group with a single track takes every message, as before (one client alone is unchanged).

Where two or more tracks fit equally (two clients both at id 7 send 8), nothing can tell which one
sent it, but what follows is still clear: the two sessions go on from the same point. Both tracks
end there (they keep the answers to their exchanges in progress), and the message starts a new
track, announced by a `session-continued` event: "the rest of one of these sessions, which one
cannot be told". The other session's next message starts another. Nothing is guessed, and each
connection still holds one session's messages in order (its handshake is on another connection).

A message no evidence places (a request id that continues no track, another notification, a
cancel of a request in progress on two tracks) goes on a connection of its own, announced by an
`unattributed` event with the reason and the candidate connections: the analysis does not judge
it by a session's state, nor the candidates by its absence (tracer.analyser).

Memory: at most TRACKS_CAP tracks per group, the oldest forgotten first.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

GROUPS_CAP = 10_000  # groups (client address, User-Agent, endpoint) remembered, the oldest forgotten
TRACKS_CAP = 64  # live tracks per group: far beyond the sessions one host runs against one endpoint
NOTES_CAP = 16  # connections named in one note
ID_SHOWN = 40  # characters of a request id a note's reason shows


@dataclass(slots=True, eq=False)
class Track:
    conn: str | None  # None: a session whose next message names its connection
    tip: int | None  # the last integer request id it sent (None: not known)
    awaiting: bool | None  # its handshake awaits notifications/initialized (None: cannot tell)
    of: tuple[str, ...] = ()  # a continued session: the connections it may be the rest of


def int_id(value: object) -> int | None:
    """An integer JSON-RPC id (a bool is not one)."""
    return value if type(value) is int else None


class Tracks:
    """The tracks of every group of one HTTP door (tracer.http.conns)."""

    def __init__(self) -> None:
        self._groups: OrderedDict[tuple, list[Track]] = OrderedDict()
        self._of: dict[str, tuple[tuple, Track]] = {}  # conn -> (group, its live track)
        self._pending: tuple[tuple, Track] | None = None  # the new track `place` asked a name for
        self.retired: list[str] = []  # connections `place` ended (the caller closes them when idle)

    def live(self, conn: str) -> bool:
        """Whether CONN is a live track: later messages on other TCP connections may join it."""
        return conn in self._of

    def drop(self, conn: str) -> None:
        """CONN is no track any more (its session got an Mcp-Session-Id)."""
        entry = self._of.pop(conn, None)
        if entry is not None:
            group, track = entry
            tracks = self._groups.get(group)
            if tracks is not None and track in tracks:
                tracks.remove(track)

    def handshake(self, group: tuple, conn: str, init_id: object) -> None:
        """An `initialize` went out on CONN: a new session of GROUP (or CONN's again)."""
        self.drop(conn)
        self._add(group, Track(conn, int_id(init_id), True))

    def sent(self, conn: str, method: str | None, rid: object) -> None:
        """CONN's session sent a message (whichever way it was placed): its track follows."""
        entry = self._of.get(conn)
        if entry is None:
            return
        track = entry[1]
        n = int_id(rid)
        if method == "notifications/initialized":
            track.awaiting = False
        elif n is not None and method is not None and method != "initialize":
            track.tip = n if track.tip is None or n > track.tip else track.tip

    def place(
        self, group: tuple, method: str | None, rid: object, cancels: object, open_on: list[str]
    ) -> tuple[str, object]:
        """Where a message that presumes a handshake, on a new TCP connection, goes. Returns one of
        ("join", conn), ("new", (why, of)) (a new track: the caller names it and calls `named`),
        ("alone", (why, candidates)), ("none", None) (the group has no track). OPEN_ON: the
        connections with the request a cancel names in progress."""
        tracks = self._groups.get(group)
        if not tracks:
            return "none", None
        named = [t for t in tracks if t.conn is not None]
        if len(tracks) == 1 and named:
            return "join", named[0].conn
        if method == "notifications/cancelled" and open_on:
            if len(open_on) == 1:
                return "join", open_on[0]
            why = (
                f"a cancel of request {_short(cancels)}, in progress in {len(open_on)} session-less sessions"
            )
            return "alone", (why, open_on)
        n = int_id(rid)
        if n is not None and method is not None:
            fits = [t for t in tracks if t.tip is not None and t.tip == n - 1]
            if len(fits) == 1 and fits[0].conn is not None:
                return "join", fits[0].conn
            if fits:
                why = (
                    f"request id {n} continues {len(fits)} session-less sessions that were all at id {n - 1}"
                )
                why = why if len(fits) > 1 else ""
                state = _same(fits)
                return self._continue(group, fits, Track(None, n, state), Track(None, n - 1, state), why)
            why = f"request id {n} continues none of {len(tracks)} session-less sessions"
            return "alone", (why, _names(tracks))
        if method == "notifications/initialized":
            fits = [t for t in tracks if t.awaiting is not False]
            if len(fits) == 1 and fits[0].awaiting and fits[0].conn is not None:
                return "join", fits[0].conn
            if fits and all(t.awaiting for t in fits) and len({t.tip for t in fits}) == 1:
                tip = fits[0].tip
                why = f"notifications/initialized, awaited by {len(fits)} session-less sessions at one point"
                why = why if len(fits) > 1 else ""
                return self._continue(group, fits, Track(None, tip, False), Track(None, tip, True), why)
            for t in fits:  # one of them sent it: none is known to await it any more
                t.awaiting = None
            why = f"notifications/initialized, which {len(fits)} session-less sessions may be awaiting"
            return "alone", (why, _names(fits or tracks))
        what = method if method is not None else "a message without a method"
        return "alone", (
            f"{what}, which any of {len(tracks)} session-less sessions may have sent",
            _names(tracks),
        )

    def _continue(
        self, group: tuple, fits: list[Track], new: Track, rest: Track, why: str
    ) -> tuple[str, object]:
        """FITS were all at the point the message continues (a placeholder alone: its own next
        message). They end there: the message starts NEW, and each of the others a session like
        REST whose next message names its connection. Returns ("new", (why, the connections the
        new one may continue, whether that names them all))."""
        every = tuple(dict.fromkeys(c for t in fits for c in ((t.conn,) if t.conn is not None else t.of)))
        of = every[:NOTES_CAP]
        for t in fits:
            self._retire(group, t)
            if t.conn is not None:
                self.retired.append(t.conn)
        for _ in fits[1:]:
            self._add(group, Track(None, rest.tip, rest.awaiting, of))
        new.of = of
        self._pending = (group, new)
        if not why:  # the next message of a session whose point another one shared
            why = f"the next message of one of {len(of)} session-less sessions that were at one point"
        return "new", (why, list(of), len(every) <= NOTES_CAP)

    def named(self, conn: str) -> None:
        """The new track `place` asked for got its connection, CONN."""
        if self._pending is None:
            return
        (group, track), self._pending = self._pending, None
        track.conn = conn
        self._add(group, track)

    def _add(self, group: tuple, track: Track) -> None:
        tracks = self._groups.get(group)
        if tracks is None:
            tracks = self._groups[group] = []
            if len(self._groups) > GROUPS_CAP:  # (a flood of User-Agents): the oldest group goes
                for old in self._groups.popitem(last=False)[1]:
                    if old.conn is not None and self._of.pop(old.conn, None) is not None:
                        self.retired.append(old.conn)
        tracks.append(track)
        if track.conn is not None:
            self._of[track.conn] = (group, track)
        if len(tracks) > TRACKS_CAP:
            old = tracks.pop(0)
            if old.conn is not None:
                self._of.pop(old.conn, None)
                self.retired.append(old.conn)

    def _retire(self, group: tuple, track: Track) -> None:
        tracks = self._groups.get(group)
        if tracks is not None and track in tracks:
            tracks.remove(track)
        if track.conn is not None:
            self._of.pop(track.conn, None)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= ID_SHOWN else text[: ID_SHOWN - 1] + "…"


def _same(fits: list[Track]) -> bool | None:
    states = {t.awaiting for t in fits}
    return states.pop() if len(states) == 1 else None


def _names(tracks: list[Track]) -> list[str]:
    return [t.conn for t in tracks if t.conn is not None][:NOTES_CAP]
