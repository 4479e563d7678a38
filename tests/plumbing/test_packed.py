"""Values held packed come back exactly as given, whatever JSON can or cannot say of them."""
from __future__ import annotations

import math

import pytest

from kube_manager.plumbing.packed import pack, unpack


@pytest.mark.parametrize("value, kept_as_bytes", [
    ({"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"port": 80}}, True),
    ({"spec": {"podSelector": None}}, True),                  # a null JSON can say is packed
    ({"metadata": {"name": float("inf")}}, False),            # YAML's .inf: orjson writes null
    ({"spec": {"ports": [1, -math.inf]}}, False),
    ({"spec": {"weight": 10 ** 20 + 1}}, False),              # beyond 64 bits: orjson refuses
    ({1: "a key that is not a string"}, False),
])
def test_a_held_value_comes_back_as_it_was_given(value, kept_as_bytes):
    held = pack(value)
    assert isinstance(held, bytes) is kept_as_bytes
    assert unpack(held) == value


def test_a_nan_comes_back_a_nan():
    back = unpack(pack({"metadata": {"name": math.nan}}))
    assert math.isnan(back["metadata"]["name"])
