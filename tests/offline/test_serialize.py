"""translate -o json|yaml through the fast serialisers prints the bytes of the reference ones (SPEC 8)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from kube_manager.offline import serialize
from kube_manager.offline.manifests import load_manifests
from kube_manager.offline.serialize import json_bytes, yaml_bytes
from kube_manager.offline.yaml_block import BlockWriter, Unsupported
from kube_manager.translator import translate
from tests.support.paths import EXAMPLES

EXAMPLES = str(EXAMPLES)


class ReferenceDumper(yaml.SafeDumper):
    """PyYAML's pure-Python dumper, as `translate -o yaml` used before libyaml."""

    def ignore_aliases(self, data):
        return True


def reference_json(data) -> bytes:
    return (json.dumps(data, indent=2) + "\n").encode()


def reference_yaml(data) -> bytes:
    return yaml.dump(data, Dumper=ReferenceDumper, sort_keys=False, default_flow_style=False).encode()


@pytest.fixture(scope="module")
def examples_translation():
    manifests = load_manifests([EXAMPLES])
    return translate(manifests.objects).to_dict()


def test_examples_print_the_reference_bytes_on_the_fast_paths(examples_translation):
    if serialize.orjson is None:
        pytest.skip("orjson is not installed")
    assert serialize._plain_strings(examples_translation), "the examples take libyaml's emitter"
    assert json_bytes(examples_translation) == reference_json(examples_translation)
    assert yaml_bytes(examples_translation) == reference_yaml(examples_translation)


def test_the_json_text_in_parts_is_the_reference_text(examples_translation, monkeypatch):
    monkeypatch.setattr(serialize, "CHUNK", 3)  # every list longer than 3 comes in several parts
    parts = list(serialize.json_chunks(examples_translation))
    assert len(parts) > 4 * len(examples_translation)
    assert b"".join(parts) == reference_json(examples_translation)


def test_without_orjson_the_bytes_are_the_same(examples_translation, monkeypatch):
    expected = json_bytes(examples_translation), yaml_bytes(examples_translation)
    monkeypatch.setattr(serialize, "orjson", None)
    assert (json_bytes(examples_translation), yaml_bytes(examples_translation)) == expected


TEXT = st.one_of(st.text(max_size=120), st.text(st.characters(max_codepoint=127), max_size=200),
                 st.sampled_from(["", "yes", "null", "1.5", "- a", "a: b", "#x", "'q'", '"d"', "a\\b"]))
VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | TEXT,
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                      max_leaves=25)


@pytest.mark.slow
@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.dictionaries(TEXT, VALUES, max_size=5))
def test_any_data_prints_the_reference_bytes(monkeypatch, data):
    monkeypatch.setattr(serialize, "CHUNK", 2)  # long top-level lists are dumped in chunks
    # Strings with escapes, non-ASCII, DEL, lone surrogates, empty keys and huge integers are where
    # orjson and libyaml differ from the reference; the serialisers must hide it.
    assert json_bytes(data) == reference_json(data)
    assert yaml_bytes(data) == reference_yaml(data)


WORDS = st.one_of(st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7e), min_size=1, max_size=30),
                  st.sampled_from(["yes", "No", "null", "~", "1.5", "0x1F", "1_000", "2024-01-01", "-", "-a", "?",
                                   "?a", ":", "a:", "a:b", "#x", "a#b", "'q'", '"d"', "---", "...", "=", "<<", "!t",
                                   "&a", "*a", "[x]", "{x}", ",", "|", ">", "%", "@", "`", "1e3", ".inf", "0o17"]))
BLOCK_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | WORDS | st.just(""),
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(WORDS, inner, max_size=3),
                            max_leaves=25)


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.dictionaries(WORDS, BLOCK_VALUES, min_size=1, max_size=4),
                 st.lists(BLOCK_VALUES, min_size=1, max_size=4)))
def test_the_block_writer_prints_what_pyyaml_prints(data):
    # Names, numbers and the strings YAML reads as something else (quoted), nested every way.
    assert BlockWriter().document(data) == reference_yaml(data)


def test_the_block_writer_takes_the_translation_and_refuses_what_it_cannot_print(examples_translation):
    writer = BlockWriter()
    without_errors = dict(examples_translation, errors=[])
    assert writer.document(without_errors) == reference_yaml(without_errors)
    for refused in ({"a": "two words"}, {"a": "caf\u00e9"}, {"": 1}, {"a": 1.5}, {"k" * 128: 1}, {1: "a"}):
        with pytest.raises(Unsupported):
            writer.document(refused)
