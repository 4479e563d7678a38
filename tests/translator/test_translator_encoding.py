"""Tag type encoding (SPEC 2): injective, lower-case, bounded, never a reserved type."""
from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube_manager.translator.encoding import (EMPTY_VALUE, encode_key, encode_namespace_key, encode_value,
                                              selector_tag, split_tag)


def h8(key: str) -> str:
    return hashlib.sha1(key.encode()).hexdigest()[:8]


@pytest.mark.parametrize("key, expected", [
    ("role", "role"),
    ("app.kubernetes.io/name", "app.kubernetes.io__slash__name"),
    ("a-b.c", "a-b.c"),
    ("9", "9"),
])
def test_plain_keys_keep_their_spelling_with_slash_written_out(key, expected):
    assert encode_key(key) == expected


@pytest.mark.parametrize("key", ["Role", "my_key", "a--b", "example.com/Some_Key", "-x", "x-"])
def test_other_keys_are_lower_cased_and_suffixed_with_the_hash_of_the_original(key):
    assert encode_key(key) == key.lower().replace("/", "__slash__") + "--" + h8(key)


def test_case_variants_get_distinct_types():
    assert len({encode_key(k) for k in ("role", "Role", "ROLE", "rOle")}) == 4


@pytest.mark.parametrize("key", ["application", "namespace", "label", "tier", "deployment", "site",
                                 "namespace.x", "label.x"])
def test_reserved_types_and_prefixes_get_label_prefix(key):
    encoded = encode_key(key)
    assert encoded.startswith("label.")
    assert encoded not in {"application", "namespace", "label", "tier", "deployment", "site"}


def test_reserved_examples_exactly():
    assert encode_key("application") == "label.application"
    assert encode_key("namespace.team") == "label.namespace.team"
    assert encode_key("Application") == "application--" + h8("Application")  # already suffixed


def test_long_keys_are_cut_to_118_characters_plus_the_hash():
    plain = "a" * 120 + "/" + "b" * 40
    assert encode_key(plain) == plain.replace("/", "__slash__")[:118] + "--" + h8(plain)
    upper = "B" * 200
    assert encode_key(upper) == "b" * 118 + "--" + h8(upper)
    assert len(encode_key(upper)) == 128


def test_a_long_reserved_looking_key_is_at_most_134_characters():
    key = "label." + "x" * 300
    encoded = encode_key(key)
    assert encoded.startswith("label.label.")
    assert len(encoded) == 134


def test_namespace_labels_have_their_own_types():
    assert encode_namespace_key("project") == "namespace.project"
    assert encode_namespace_key("kubernetes.io/metadata.name") == "namespace.kubernetes.io__slash__metadata.name"
    # A pod label can never produce a namespace-label type.
    assert not encode_key("namespace.project").startswith("namespace.")


def test_values_and_tag_names():
    assert encode_value("") == EMPTY_VALUE
    assert encode_value("db") == "db"
    assert selector_tag("k8s", "0123456789ab") == "label=k8s-sel-0123456789ab"
    assert split_tag("namespace.a=b=c") == ("namespace.a", "b=c")


label_keys = st.one_of(
    st.from_regex(r"\A[a-z0-9]([-a-z0-9./]{0,20}[a-z0-9])?\Z"),
    st.from_regex(r"\A[A-Za-z0-9][-A-Za-z0-9_./]{0,20}\Z"),
    st.text(min_size=1, max_size=150),
    st.sampled_from(["application", "namespace", "label", "namespace.a", "label.a", "Label", "a/b", "a__slash__b"]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(label_keys, min_size=2, max_size=8, unique=True))
def test_encoding_is_injective(keys):
    encoded = [encode_key(k) for k in keys]
    assert len(set(encoded)) == len(keys)
    namespace_types = {encode_namespace_key(k) for k in keys}
    assert not namespace_types & set(encoded)


@settings(max_examples=200, deadline=None)
@given(label_keys)
def test_encoded_types_are_lower_case_bounded_and_unreserved(key):
    encoded = encode_key(key)
    assert encoded == encoded.lower()
    assert len(encoded) <= 134
    assert encoded not in {"application", "namespace", "label", "tier", "deployment", "site"}
    assert not encoded.startswith("namespace.")
