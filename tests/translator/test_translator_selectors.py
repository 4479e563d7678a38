"""Label selectors (SPEC 2.1): validation as the API server does it, evaluation, normal form."""
from __future__ import annotations

import pytest

from kube_manager.translator.model import PodScope
from kube_manager.translator.selectors import LabelSelector, parse_selector
from kube_manager.translator.validation import InvalidInput


def sel(raw):
    return parse_selector(raw, "s")


@pytest.mark.parametrize("raw, labels, expected", [
    ({}, {}, True),
    (None, {"a": "1"}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
    ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
    ({"matchLabels": {"a": ""}}, {}, False),
    ({"matchLabels": {"a": ""}}, {"a": ""}, True),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "3"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1", "2"]}]}, {"a": "3"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1", "2"]}]}, {}, True),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1", "2"]}]}, {"a": "1"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"b": "1"}, False),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"b": "1"}, True),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": "1"}, False),
    ({"matchLabels": {"a": "1"}, "matchExpressions": [{"key": "b", "operator": "Exists"}]}, {"a": "1"}, False),
])
def test_every_operator_and_value_is_honoured(raw, labels, expected):
    assert sel(raw).matches(labels) is expected


def test_simple_means_match_labels_and_single_value_in():
    assert sel({"matchLabels": {"a": "1"}}).is_simple
    single = sel({"matchLabels": {"b": "2"}, "matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]})
    assert single.is_simple
    assert single.simple_labels == (("a", "1"), ("b", "2"))
    for expression in ({"key": "a", "operator": "In", "values": ["1", "2"]},
                       {"key": "a", "operator": "NotIn", "values": ["1"]},
                       {"key": "a", "operator": "Exists"}, {"key": "a", "operator": "DoesNotExist"}):
        assert not sel({"matchExpressions": [expression]}).is_simple


def test_normal_form_sorts_and_leaves_out_empty_fields():
    raw = {"matchLabels": {}, "matchExpressions": [
        {"key": "b", "operator": "Exists", "values": None},
        {"key": "a", "operator": "NotIn", "values": ["y", "x"]},
        {"key": "a", "operator": "In", "values": ["z", "w"]},
    ]}
    assert sel(raw).normalised() == {"matchExpressions": [
        {"key": "a", "operator": "In", "values": ["w", "z"]},
        {"key": "a", "operator": "NotIn", "values": ["x", "y"]},
        {"key": "b", "operator": "Exists"},
    ]}
    assert sel(None).normalised() == {}
    assert sel({"matchLabels": {"b": "1", "a": "2"}}).normalised() == {"matchLabels": {"a": "2", "b": "1"}}


def test_hash_input_of_scopes():
    pods = sel({"matchLabels": {"a": "1"}})
    assert PodScope(namespace="n", pod_selector=pods).hash_input() == [{"namespace": "n"}, {"matchLabels": {"a": "1"}}]
    assert PodScope(namespace_selector=sel({})).hash_input() == [{"namespaceSelector": {}}, None]
    assert PodScope(namespace_selector=pods, pod_selector=LabelSelector()).hash_input() == [
        {"namespaceSelector": {"matchLabels": {"a": "1"}}}, {}]


@pytest.mark.parametrize("raw, fragment", [
    ({"matchLabel": {"a": "1"}}, "unknown field"),
    ({"matchLabels": {"a": 1}}, "expected a string, got int"),
    ({"matchLabels": {"Bad Key": "1"}}, "label key"),
    ({"matchLabels": {"a": "-bad"}}, "label value"),
    ({"matchLabels": {"a": "x" * 64}}, "label value"),
    ({"matchLabels": {"a/b/c": "1"}}, "label key"),
    ({"matchExpressions": [{"key": "a", "operator": "in", "values": ["1"]}]}, "not a valid selector operator"),
    ({"matchExpressions": [{"key": "a", "operator": "In"}]}, "must be given"),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, "must be given"),
    ({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["1"]}]}, "may not be given"),
    ({"matchExpressions": [{"key": "", "operator": "Exists"}]}, "label key"),
    ({"matchExpressions": [None]}, "label key"),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["ok", "not ok"]}]}, "label value"),
    ({"matchExpressions": [{"key": "a", "operator": "Exists", "extra": 1}]}, "unknown field"),
    ({"matchExpressions": {"key": "a"}}, "expected a list"),
    ("app=db", "expected an object"),
])
def test_malformed_selectors_are_refused_with_a_reason(raw, fragment):
    with pytest.raises(InvalidInput) as info:
        sel(raw)
    assert fragment in str(info.value)


def test_null_match_label_value_is_the_empty_string():
    assert sel({"matchLabels": {"a": None}}).match_labels == (("a", ""),)
