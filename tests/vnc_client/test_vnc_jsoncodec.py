"""The one JSON decoder (and the wire encoder): orjson's speed, the stdlib's values and reach."""
from __future__ import annotations

import json

import pytest

from vnc_client import jsoncodec


def test_round_trips_what_the_stdlib_does_including_integers_orjson_refuses():
    value = {"name": "caf\u00e9", "n": [1, 2.5, None, True], "big": 2 ** 70, "nested": {"t": (1, 2)}}
    assert json.loads(jsoncodec.dumps(value)) == {**value, "nested": {"t": [1, 2]}}
    assert jsoncodec.loads(jsoncodec.dumps(value)) == {**value, "nested": {"t": [1, 2]}}


@pytest.mark.parametrize("bad", [b"{not json", b"", b"[1,", "\"unterminated"])
def test_bad_input_is_a_value_error(bad):
    with pytest.raises(ValueError):
        jsoncodec.loads(bad)


# Texts where orjson alone differs from the stdlib (a float for an integer beyond 64 bits, a refusal)
# and texts it reads alike; the codec must give the stdlib's value, of the same types, for each.
SAME_AS_THE_STDLIB = [
    b'{"a": 100000000000000000001}', b'[-9223372036854775809]', b'[18446744073709551616]',
    b'[18446744073709551615, 9223372036854775807, -9223372036854775808]', b'[1e20, 1.5, -0.0]',
    b'{"uid": "12345678901234567890123", "n": 1}', b'[NaN, Infinity]', '["\\ud800"]',
    '{"caf\u00e9": [true, false, null]}', b'{"a": 1, "a": 2}',
]


@pytest.mark.parametrize("text", SAME_AS_THE_STDLIB)
def test_loads_gives_what_the_stdlib_gives(text):
    expected, got = json.loads(text), jsoncodec.loads(text)
    assert repr(got) == repr(expected)
