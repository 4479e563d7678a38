"""The wire JSON codec of the client and the embedded server: orjson's speed, the stdlib's reach."""
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
