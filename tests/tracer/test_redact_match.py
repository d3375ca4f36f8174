"""The one-pass matcher (tracer.redact_match.KnownForms) finds exactly the known forms a text holds,
as looking for each one by one does, whatever their lengths, wherever they sit (glued to other
bytes, at the very end, overlapping), through additions and removals."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tracer.redact_match import KnownForms

ALPHABET = b"ab0-"  # (few letters: forms overlap and share slices, texts hold them by chance)
forms_st = st.lists(
    st.binary(min_size=1, max_size=80).map(lambda b: bytes(ALPHABET[x % 4] for x in b)), max_size=12
)


# forms no text here holds (not of ALPHABET), so many that texts are cut, not searched form by form
FILLER = tuple(b"zy%06dxw%06d" % (i, i) * (1 + i % 5) for i in range(64))


def _matcher(forms) -> KnownForms:
    match = KnownForms()
    match.add(FILLER)
    match.add(tuple(forms))
    return match


def _brute(forms, raw: bytes) -> set[bytes]:
    return {f for f in forms if f and f in raw}


@settings(max_examples=400, deadline=None)
@given(
    forms=forms_st,
    pieces=st.lists(st.integers(0, 11) | st.binary(max_size=40), max_size=8),
    pad=st.integers(0, 3000),  # (long texts too: cut by blocks of 64 slices)
    drop=st.data(),
)
def test_found_is_exactly_the_forms_the_text_holds_through_adds_and_removes(forms, pieces, pad, drop):
    match = _matcher(forms)
    raw = b"".join(p if isinstance(p, bytes) else (forms[p] if p < len(forms) else b"") for p in pieces)
    raw = b"0a-" * (pad // 3) + raw + b"b" * (pad % 7)
    assert set(match.found(raw)) == _brute(forms, raw)
    gone = drop.draw(st.lists(st.sampled_from(forms), max_size=len(forms), unique=True)) if forms else []
    kept = list(forms)
    for f in gone:
        kept.remove(f)
    match.remove(tuple(gone))
    assert set(match.found(raw)) == _brute(kept, raw)
    assert set(match.all()) == {f for f in kept if f} | set(FILLER)
    found = match.found(raw)
    assert [len(f) for f in found] == sorted((len(f) for f in found), reverse=True)  # longest first


@settings(max_examples=200, deadline=None)
@given(forms=forms_st, text=st.binary(max_size=60), cut_at=st.integers(0, 80), which=st.integers(0, 11))
def test_every_form_a_cut_text_may_end_with_the_start_of_is_a_tail_candidate(forms, text, cut_at, which):
    match = _matcher(forms)
    if not forms:
        return
    form = forms[which % len(forms)]
    raw = text + form[:cut_at]
    k = min(cut_at, len(form))
    if k >= 4 and k < len(form):  # (from 4 bytes on: what hide_cut_tail hides)
        assert form in match.tail_candidates(raw)


def test_a_form_glued_to_other_bytes_at_the_end_of_a_long_text_is_found():
    match = KnownForms()
    sid = b"4ead6e5b0bca48c38ab8459cfcc57344"
    match.add((sid, b"tok-ABCDEF012", b"pin7"))
    match.add(FILLER)
    texts = (b"x" * 1000 + sid, b"%22" + sid + b"%22", sid[:-1], b"a" * 17 + sid + b"0", b"pin7" + sid[:31])
    for raw in (*texts, b"y" * 1100 + sid + b"y" * 7, b"y" * 1087 + sid):  # (past a block of 64 slices)
        assert set(match.found(raw)) == _brute((sid, b"tok-ABCDEF012", b"pin7"), raw)
