"""A spec's digest (SPEC 1: sha256 of its canonical JSON) is the same whichever writer makes the text:
`spec_digest` takes orjson where its text is provably the stdlib's, and must never tell a value
apart from `sha256_hex(canonical_json(value))`, whatever a JSON or YAML decoder can give."""
from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube_manager.translator.canonical import canonical_json, sha256_hex, spec_digest

# What the writers may spell differently: escapes, non-ASCII, DEL, quotes, and keys that sort by code point.
TEXT = st.text(st.sampled_from(['a', 'B', 'z', '_', '-', '.', '/', '0', '"', '\\', '\x00', '\n', '\x7f', '\xe9',
                                '\u2028', '\U0001F600', 'e', 'n', 'u', 'l']), max_size=6)
INTEGERS = st.integers(-2**70, 2**70) | st.sampled_from([2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64, 0, -1])
LEAVES = (st.none() | st.booleans() | INTEGERS | st.floats(allow_nan=True, allow_infinity=True) | TEXT
          | st.dates() | st.binary(max_size=3))
KEYS = TEXT | st.sampled_from(["podSelector", "ingress", "from", "ports", "port", "Ports", "a", "A", "_"])
VALUES = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(KEYS, inner, max_size=4)
                      | st.dictionaries(KEYS | st.integers(0, 3), inner, max_size=3), max_leaves=12)


@settings(max_examples=600, deadline=None)
@given(VALUES)
def test_the_digest_is_the_stdlib_canonical_texts(value: Any) -> None:
    assert spec_digest(value) == sha256_hex(canonical_json(value))


PLAIN = {"podSelector": {"matchLabels": {"app": "db"}}, "policyTypes": ["Ingress", "Egress"],
         "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                      "ports": [{"protocol": "TCP", "port": 5432, "endPort": -1}, {"port": "http"}]}],
         "z": [True, False, [], {}]}


@pytest.mark.parametrize("value", [
    PLAIN,  # orjson's text
    {**PLAIN, "port": 1e16},  # a float: the stdlib writes 1e+16, orjson 1e16
    {**PLAIN, "port": float("nan")},  # NaN (orjson writes null)
    {**PLAIN, "podSelector": None},  # null
    {**PLAIN, "name": "caf\xe9"},  # non-ASCII (the stdlib escapes it)
    {**PLAIN, "name": 'a"b\\c\x7f'},  # escapes, and DEL (the stdlib escapes it)
    {**PLAIN, "port": 2**64},  # beyond 64 bits (orjson refuses it)
    {**PLAIN, 1: "x"},  # a key that is not a string (YAML)
    {**PLAIN, "date": datetime.date(2026, 1, 5)},  # a YAML date
    {"b": 1, "B": 2, "_": 3, "a": {"Z": 0, "y": 1}},  # keys sorted by code point
])
def test_each_kind_of_value_has_the_stdlib_digest(value: Any) -> None:
    assert spec_digest(value) == sha256_hex(canonical_json(value))
