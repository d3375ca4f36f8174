"""The framers see copies of the wire bytes in any chunking and frame them identically."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.framing import LineFramer, SseParser


def _frame_all(data: bytes, cuts: list[int]):
    f = LineFramer()
    frames = []
    prev = 0
    for c in [*sorted(set(min(c, len(data)) for c in cuts)), len(data)]:
        frames.extend(f.feed(data[prev:c]))
        prev = c
    tail = f.finish()
    if tail is not None:
        frames.append(tail)
    return frames


@settings(max_examples=300, deadline=None)  # no timed assertion: the machine is shared
@given(st.binary(max_size=2000), st.lists(st.integers(min_value=0, max_value=2000), max_size=20))
def test_line_framer_reassembles_any_bytes_split_anywhere(data, cuts):
    frames = _frame_all(data, cuts)
    rebuilt = b"".join(fr.data + (b"\n" if fr.eol else b"") for fr in frames)
    assert rebuilt == data
    for fr in frames:
        assert data[fr.offset : fr.offset + len(fr.data)] == fr.data
    assert frames == _frame_all(data, [])


def test_line_framer_reports_offsets_and_the_missing_final_newline():
    frames = _frame_all(b'{"a":1}\r\nbanner\n{"b"', [3, 9])
    assert [(fr.data, fr.offset, fr.eol) for fr in frames] == [
        (b'{"a":1}\r', 0, True),
        (b"banner", 9, True),
        (b'{"b"', 16, False),
    ]


def test_line_framer_caps_what_it_keeps_of_a_huge_line_but_keeps_offsets_exact():
    f = LineFramer(max_line=10)
    frames = f.feed(b"x" * 25 + b"\nok\n")
    assert frames[0].data == b"x" * 10 and frames[0].offset == 0
    assert frames[1].data == b"ok" and frames[1].offset == 26
    assert f.truncated == 1


def _sse_all(data: bytes, cuts: list[int]):
    p = SseParser()
    out = []
    prev = 0
    for c in [*sorted(set(min(c, len(data)) for c in cuts)), len(data)]:
        out.extend(p.feed(data[prev:c]))
        prev = c
    return [(e.event, e.data, e.id) for e in out]


SSE = (
    'event: message\nid: 7\ndata: {"jsonrpc":"2.0","id":1,"result":{"t":"caf\u00e9"}}\n\n'
    ": keep-alive\n\n"
    "data: line1\r\ndata: line2\r\n\r\n"
    "event: endpoint\rdata: /messages?sid=1\r\r"
).encode()


@settings(max_examples=300, deadline=None)  # no timed assertion: the machine is shared
@given(st.lists(st.integers(min_value=0, max_value=len(SSE)), max_size=12))
def test_sse_parser_gives_the_same_events_for_any_chunking_even_mid_utf8(cuts):
    assert _sse_all(SSE, cuts) == [
        ("message", '{"jsonrpc":"2.0","id":1,"result":{"t":"caf\u00e9"}}', "7"),
        ("message", "line1\nline2", None),
        ("endpoint", "/messages?sid=1", None),
    ]


def test_sse_parser_keeps_comments_out_of_data_and_reports_an_unterminated_event():
    p = SseParser()
    assert p.feed(b": ping\n\ndata: {}\n") == []
    tail = p.finish()
    assert tail is not None and tail.data == "{}"


def test_sse_parser_keeps_an_event_that_never_ends_to_its_cap_and_counts_the_rest():
    # a server streaming one event without its blank line (a bug, or hostile) must not take the
    # proxy's memory: the event's start is kept up to the cap and the rest is counted as cut
    p = SseParser(max_event=1000)
    line = b"data: " + b"x" * 99 + b"\n"  # 100 characters of data with its newline
    for _ in range(1000):
        assert p.feed(line) == []
    assert p._size <= 1000 and len(p._data) <= 10
    ev, after = p.feed(b"\ndata: after\n\n")
    assert ev.data == "\n".join(["x" * 99] * 10)
    assert len(ev.data) + ev.cut == 1000 * 100 - 1  # every byte of the event: kept or counted
    assert after.data == "after" and after.cut == 0  # the next event starts afresh


def test_sse_parser_keeps_a_line_that_never_ends_to_its_cap_and_later_offsets_exact():
    p = SseParser(max_event=1000)
    p.feed(b"data: ")
    for _ in range(500):
        assert p.feed(b"y" * 1000) == []
    assert len(p._buf) <= 1000
    first, second = p.feed(b"\n\ndata: next\n\n")
    assert first.data == "y" * (1000 - len("data: ")) and first.cut == 500 * 1000 - len(first.data)
    assert second.data == "next" and second.cut == 0
    assert second.offset == len("data: ") + 500 * 1000 + 2  # the stream offset counts what was cut


def test_sse_parser_keeps_a_bounded_number_of_comments_of_an_event_that_never_ends():
    p = SseParser()
    for _ in range(100):
        p.feed(b": keep-alive\n" * 1000)
    assert len(p._comments) <= 1024


def test_sse_parser_keeps_only_the_start_of_a_line_cut_at_the_cap_not_what_follows_the_cut():
    # the line outgrows the cap before its end arrives: the bytes after the cut must not be spliced
    # onto its start (the capture would hold data the server never sent at that place)
    p = SseParser(max_event=16)
    assert p.feed(b"data: " + b"A" * 30) == []
    (ev,) = p.feed(b"B" * 10 + b"\n\n")
    assert ev.data == "A" * 10
    assert len(ev.data) + ev.cut == 40  # every byte of the data: kept or counted


def test_sse_parser_counts_its_cap_in_bytes_of_utf8_not_characters():
    p = SseParser(max_event=1000)
    line = ("data: " + "\U0001f600" * 99 + "\n").encode()  # 396 bytes of data a line
    for _ in range(100):
        p.feed(line)
    (ev,) = p.feed(b"\n")
    kept = len(ev.data.encode())
    assert kept <= 1000
    assert kept + ev.cut == 100 * 396 + 99


def test_sse_parser_counts_a_line_kept_in_part_exactly():
    (ev,) = SseParser(max_event=10).feed(b"data: " + b"x" * 20 + b"\n\n")
    assert ev.data == "x" * 10 and ev.cut == 10
