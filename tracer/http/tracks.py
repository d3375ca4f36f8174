"""Which session-less legacy session a message on a new TCP connection belongs to, by evidence.

A legacy client of a Streamable HTTP server that issues no `Mcp-Session-Id` (the official Python
SDK's `stateless_http=True`) may open a TCP connection per request: the official SDK client does.
Several such clients from one address with one `User-Agent` (a host running several sessions, a
test suite) cannot be told apart by anything HTTP carries. Joining "the last handshake" merged them
(4 SDK clients at once: ~100 false findings). Each handshake of a group (client address,
`User-Agent`, endpoint) is a *track*; a message on a new TCP connection joins one only on evidence:

- a request whose integer id continues exactly one track's sequence (clients number their requests
  1, 2, 3... per session: the official SDKs do), the track's last id + 1;
- a request of one session's concurrent requests that reached the proxy out of order (the SDK
  client's `asyncio.gather` of `tools/call`s: one TCP connection each, and the proxy reads them in
  whatever order they arrive). A track's *open window* is its last id + 1 and the ids below its
  last one it has not sent yet (its *holes*: requests still on their way). A request joins a track
  - when its id is a hole of exactly one track and continues none (the late one of a pair);
  - when exactly one track has not used its id yet: a session never reuses an id (the spec's
    MUST), so a session that already sent it cannot be the one (the early one of a pair, beside
    sessions further on);
  - when it continues exactly one track through ids the group saw but could not place (an early
    request no evidence placed, the track's next id: the rest of that session is not lost to it);
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

Memory: at most TRACKS_CAP tracks per group, the oldest forgotten first; at most HOLES_CAP holes
per track and HOLES_TOTAL in all, and ORPHANS_CAP unplaced ids. A track past those no longer knows
which ids below its last one it has not sent: every one of them may still be its own, so it is a
candidate for each (more "cannot tell", never a wrong join).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

GROUPS_CAP = 10_000  # groups (client address, User-Agent, endpoint) remembered, the oldest forgotten
TRACKS_CAP = 64  # live tracks per group: far beyond the sessions one host runs against one endpoint
NOTES_CAP = 16  # connections named in one note
ID_SHOWN = 40  # characters of a request id a note's reason shows
HOLES_CAP = 16  # ids below a track's last one it may still send (concurrent requests in flight)
HOLES_TOTAL = 65_536  # holes kept across every track (the rest: "any id below its last one")
ORPHANS_CAP = 4096  # request ids of a group no evidence placed, that a later id may continue


@dataclass(slots=True, eq=False)
class Track:
    conn: str | None  # None: a session whose next message names its connection
    tip: int | None  # the last integer request id it sent (None: not known)
    awaiting: bool | None  # its handshake awaits notifications/initialized (None: cannot tell)
    of: tuple[str, ...] = ()  # a continued session: the connections it may be the rest of
    holes: set[int] | None = None  # ids below `tip` not sent yet (None: none)
    blur: bool = False  # which ids below `tip` it has not sent is not known (past the caps)
    init_id: int | None = None  # the integer id of its `initialize`

    def late(self, n: int) -> bool:
        """Whether N is below this track's last id and may still be one of its own."""
        if self.tip is None or n >= self.tip:
            return False
        return self.blur or (self.holes is not None and n in self.holes)

    def unused(self, n: int) -> bool:
        """Whether this track may still send id N (it has not sent it, as far as is known)."""
        return self.tip is None or n > self.tip or self.late(n)


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
        self._holes = 0  # holes kept across every track
        self._orphans: OrderedDict[tuple, None] = OrderedDict()  # (group, request id) not placed

    def live(self, conn: str) -> bool:
        """Whether CONN is a live track: later messages on other TCP connections may join it."""
        return conn in self._of

    def known(self, group: tuple) -> bool:
        """Whether GROUP had a session-less handshake (still remembered)."""
        return group in self._groups

    def drop(self, conn: str) -> None:
        """CONN is no track any more (its session got an Mcp-Session-Id)."""
        entry = self._of.pop(conn, None)
        if entry is not None:
            group, track = entry
            self._forget_holes(track)
            tracks = self._groups.get(group)
            if tracks is not None and track in tracks:
                tracks.remove(track)

    def handshake(self, group: tuple, conn: str, init_id: object) -> None:
        """An `initialize` went out on CONN: a new session of GROUP (or CONN's again)."""
        self.drop(conn)
        n = int_id(init_id)
        self._add(group, Track(conn, n, True, init_id=n))

    def reinitialized(self, group: tuple, rid: object) -> str | None:
        """The connection of the session that sends this `initialize` again, or None (a new
        client's). A client that re-initializes numbers it as its next request (the official SDKs
        keep one counter per session), while a new client starts its own count at its first id:
        so an integer id that continues exactly one track's requests, a track that has sent some
        since its own `initialize` (a new client starting one past another's `initialize` id is
        not taken for it), with no track still awaiting that id, is that track's session."""
        tracks = self._groups.get(group)
        n = int_id(rid)
        if not tracks or n is None:
            return None
        fits = [
            t
            for t in tracks
            if t.conn is not None and t.tip == n - 1 and t.init_id is not None and t.tip > t.init_id
        ]
        if len(fits) != 1 or any(t.late(n) or (t.tip is None and t is not fits[0]) for t in tracks):
            return None
        return fits[0].conn

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
            if track.tip is not None and n > track.tip + 1:
                self._skipped(track, n)
            elif track.holes is not None and n in track.holes:
                track.holes.discard(n)
                self._holes -= 1
            track.tip = n if track.tip is None or n > track.tip else track.tip

    def _skipped(self, track: Track, n: int) -> None:
        """TRACK's session sent N past its next id: the ids between are still on their way."""
        gap = n - track.tip - 1
        kept = len(track.holes) if track.holes is not None else 0
        if track.blur or gap + kept > HOLES_CAP or self._holes + gap > HOLES_TOTAL:
            self._forget_holes(track)
            track.blur = True
            return
        if track.holes is None:
            track.holes = set()
        track.holes.update(range(track.tip + 1, n))
        self._holes += gap

    def _forget_holes(self, track: Track) -> None:
        if track.holes is not None:
            self._holes -= len(track.holes)
            track.holes = None

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
            holes = [t for t in tracks if t.holes is not None and t.late(n)]
            if fits and holes:  # the next request of one, or one another still had on its way
                why = f"request id {n} continues {len(fits)} session-less sessions and is awaited by {len(holes)}"
                return self._alone(group, n, why, fits + holes)
            if len(fits) == 1 and fits[0].conn is not None:
                return "join", fits[0].conn
            if fits:
                why = (
                    f"request id {n} continues {len(fits)} session-less sessions that were all at id {n - 1}"
                )
                why = why if len(fits) > 1 else ""
                state = _same(fits)
                return self._continue(group, fits, Track(None, n, state), Track(None, n - 1, state), why)
            return self._out_of_order(group, tracks, n)
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

    def _out_of_order(self, group: tuple, tracks: list[Track], n: int) -> tuple[str, object]:
        """Request id N continues no track's last id: one of a session's concurrent requests that
        reached the proxy out of order, placed when exactly one track can have sent it."""
        late = [t for t in tracks if t.late(n)]
        if late:
            if len(late) == 1 and late[0].conn is not None:
                return "join", late[0].conn  # the one it had on its way
            why = f"request id {n} is awaited by {len(late)} session-less sessions"
            return self._alone(group, n, why, late)
        through = [t for t in tracks if self._through(group, t, n)]
        if len(through) == 1 and through[0].conn is not None:
            for m in range(through[0].tip + 1, n):  # (the links it went through are its own now)
                self._orphans.pop((group, m), None)
            return "join", through[0].conn
        unused = [t for t in tracks if t.unused(n)]
        if len(unused) == 1 and unused[0].conn is not None:
            return "join", unused[0].conn  # every other session already sent this id
        why = f"request id {n} continues none of {len(tracks)} session-less sessions"
        return self._alone(group, n, why, tracks)

    def _through(self, group: tuple, track: Track, n: int) -> bool:
        """Whether N continues TRACK once the ids between its last one and N, all seen in GROUP
        and placed nowhere, are taken as its own (at most HOLES_CAP of them)."""
        if track.tip is None or not 0 < n - track.tip - 1 <= HOLES_CAP:
            return False
        return all((group, m) in self._orphans for m in range(track.tip + 1, n))

    def _alone(self, group: tuple, n: int, why: str, candidates: list[Track]) -> tuple[str, object]:
        """Request id N goes on a connection of its own; a later id of its session may continue it."""
        self._orphans[(group, n)] = None
        self._orphans.move_to_end((group, n))
        if len(self._orphans) > ORPHANS_CAP:
            self._orphans.popitem(last=False)
        return "alone", (why, _names(candidates))

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
                    self._forget_holes(old)
                    if old.conn is not None and self._of.pop(old.conn, None) is not None:
                        self.retired.append(old.conn)
        tracks.append(track)
        if track.conn is not None:
            self._of[track.conn] = (group, track)
        if len(tracks) > TRACKS_CAP:
            old = tracks.pop(0)
            self._forget_holes(old)
            if old.conn is not None:
                self._of.pop(old.conn, None)
                self.retired.append(old.conn)

    def _retire(self, group: tuple, track: Track) -> None:
        self._forget_holes(track)
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
