"""shapes.conform's fast path: well-formed input is returned as it is, and is then the value the
full path would have built for every field a shape names (so no caller can tell the paths apart)."""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube_manager.translator import shapes
from kube_manager.translator.shapes import Fields, ListOf, MapOf, conform
from kube_manager.translator.validation import InvalidInput

TABLE = [value for name, value in vars(shapes).items() if name.isupper() and isinstance(value, shapes.Shape)]
SCALARS = st.none() | st.booleans() | st.integers(-3, 70000) | st.sampled_from(["", "a", "TCP", "80"])
ANY = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=2)
                   | st.dictionaries(st.sampled_from(["extra", "name", "cidr"]), inner, max_size=2), max_leaves=4)


def near(shape: shapes.Shape) -> st.SearchStrategy:
    """Values of `shape`'s form, any part of them now and then replaced by arbitrary JSON."""
    if isinstance(shape, shapes.Scalar):
        right = st.sampled_from([v for v in ("a", 80, True) if isinstance(v, shape.types)])
    elif isinstance(shape, ListOf):
        right = st.lists(near(shape.item), max_size=3)
    elif isinstance(shape, MapOf):
        right = st.dictionaries(st.sampled_from(["app", "tier"]), near(shape.value), max_size=2)
    else:
        assert isinstance(shape, Fields)
        right = st.fixed_dictionaries({}, optional={k: near(s) for k, s in shape.fields.items()})
        if not shape.closed:
            right = right | st.builds(lambda d, v: {**d, "extra": v}, right, ANY)
    return st.one_of(right, right, right, ANY)


def _seen(value: Any, shape: shapes.Shape) -> Any:
    """What a caller reading `value` by `shape`'s field names can observe of it."""
    if isinstance(shape, Fields):
        return {k: _seen(value[k], s) for k, s in shape.fields.items() if value.get(k) is not None}
    if isinstance(shape, ListOf) and not shape.each:
        return [_seen(entry, shape.item) for entry in value]
    if isinstance(shape, MapOf):
        return {k: _seen(v, shape.value) for k, v in value.items()}
    return value


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.sampled_from(TABLE).flatmap(lambda shape: st.tuples(st.just(shape), near(shape))))
def test_input_that_fits_is_returned_as_it_is_and_reads_as_the_full_path_would_build_it(case):
    shape, raw = case
    try:
        full = shape.conform(raw)
    except shapes._Mismatch:
        full = InvalidInput
    if not shape.fits(raw):
        return
    assert full is not InvalidInput, "the fast path let through a value the full path refuses"
    assert conform(raw, shape, "x") is raw
    assert _seen(raw, shape) == _seen(full, shape)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.sampled_from(TABLE).flatmap(lambda shape: st.tuples(st.just(shape), near(shape))))
def test_what_the_full_path_builds_takes_the_fast_path(case):
    """The fast check is no stricter than it must be: a conformed value (plain JSON classes, nulls
    resolved, no unknown field of a closed object) is its own conformed value."""
    shape, raw = case
    try:
        full = shape.conform(raw)
    except shapes._Mismatch:
        return
    assert shape.fits(full)


@pytest.mark.parametrize("raw, conformed", [
    ({"metadata": {"name": "p", "labels": {"app": None}}}, {"metadata": {"name": "p", "labels": {"app": ""}}}),
    ({"metadata": {"name": "p", "labels": None}, "spec": None}, {"metadata": {"name": "p"}}),
    ({"metadata": {"name": True}}, None),  # bool is no string: refused
])
def test_input_that_does_not_fit_takes_the_full_path(raw, conformed):
    assert not shapes.POD.fits(raw)
    if conformed is None:
        with pytest.raises(InvalidInput, match="metadata.name: expected a string, got bool"):
            conform(raw, shapes.POD, "")
    else:
        assert conform(raw, shapes.POD, "") == conformed


def test_a_closed_object_with_an_unknown_field_does_not_fit_and_is_refused():
    raw = {"cidr": "10.0.0.0/8", "exept": []}
    assert not shapes.IP_BLOCK.fits(raw)
    with pytest.raises(InvalidInput, match="unknown field 'exept'"):
        conform(raw, shapes.IP_BLOCK, "ipBlock")


def test_well_formed_manifests_take_the_fast_path():
    manifest = {"metadata": {"name": "p", "namespace": "a", "uid": "u", "labels": {"app": "web"},
                             "annotations": {"x": "y"}},
                "spec": {"containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 80}]}]},
                "status": {"podIP": "10.0.0.1", "phase": "Running"}}
    assert conform(manifest, shapes.POD, "") is manifest
    port = {"protocol": "TCP", "port": 80, "endPort": 90}
    assert conform(port, shapes.POLICY_PORT, "p") is port
