"""tracer.safejson: one module, two policies for what peers send. `wire_exact` (the mock's answers,
replay's requests) writes a value as sent; `readable` (reports, the viewer, spans) writes it so any
reader can show it. Both always give one valid JSON document, and `loads` reads either back."""

from __future__ import annotations

import json

import pytest

from tracer.safejson import MAX_DEPTH, Unserializable, loads, readable, safe_text, wire_exact

LONE = "\ud800"  # legal in JSON ("\\ud800"), not UTF-8: orjson refuses it


def _nested(depth: int):
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def test_a_lone_surrogate_id_goes_on_the_wire_as_its_escape_and_reads_back_as_sent():
    out = wire_exact.dumps({"id": LONE})
    assert out == b'{"id":"\\ud800"}'
    assert loads(out) == {"id": LONE}  # the host matches its request by this exact id


def test_a_lone_surrogate_is_shown_to_a_reader_as_visible_text():
    out = readable.dumps({"id": LONE})
    out.decode("utf-8")  # valid UTF-8 everywhere
    assert loads(out) == {"id": "\\ud800"}
    assert safe_text(LONE) == "\\ud800"


@pytest.mark.parametrize("policy", [wire_exact, readable], ids=lambda p: p.name)
@pytest.mark.parametrize("big", [2**64 + 1, -(2**63) - 1, 10**400], ids=["2**64+1", "-2**63-1", "10**400"])
def test_an_integer_beyond_64_bits_stays_exact(policy, big):
    back = loads(policy.dumps({"n": big}))
    assert back == {"n": big} and type(back["n"]) is int


def test_deep_nesting_is_cut_for_a_reader_and_kept_on_the_wire_until_the_interpreter_cannot():
    deep = _nested(MAX_DEPTH + 100)
    assert "nested deeper than" in readable.dumps(deep).decode()
    assert json.loads(wire_exact.dumps(deep)) == deep
    with pytest.raises(Unserializable):
        wire_exact.dumps(_nested(100_000))


@pytest.mark.parametrize("policy", [wire_exact, readable], ids=lambda p: p.name)
def test_a_one_line_rendering_stays_short(policy):
    assert len(policy.compact({"q": "x" * 1000}, 40)) == 40


def test_a_one_line_rendering_of_a_value_too_deep_to_write_says_so_instead_of_raising():
    assert wire_exact.compact(_nested(100_000)) == "<list too deep to show>"
    assert readable.compact(_nested(100_000)).startswith("[[[")
