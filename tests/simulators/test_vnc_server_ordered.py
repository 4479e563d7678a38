"""`OrderedKeys`, the embedded config API's order of a paginated walk: any mix of adds and removes
leaves it iterating, from any marker, exactly the sorted keys after that marker."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from simulators.vnc_api.ordered import OrderedKeys, column, uuid_of

KEYS = st.text(alphabet="ab:-", max_size=4)


@settings(max_examples=200, deadline=None)
@given(initial=st.lists(KEYS, max_size=20, unique=True),
       steps=st.lists(st.tuples(st.booleans(), KEYS), max_size=60),
       markers=st.lists(st.one_of(st.none(), KEYS), max_size=5))
def test_iterates_the_sorted_keys_after_any_marker_through_adds_and_removes(initial, steps, markers):
    keys = OrderedKeys(initial, chunk=2)  # tiny chunks: splits and emptied chunks happen often
    model = set(initial)
    for add, key in steps:
        if add:
            if key not in model:  # a store adds each column once
                keys.add(key)
            model.add(key)
        else:
            keys.discard(key)
            model.discard(key)
    assert len(keys) == len(model)
    for marker in markers:
        assert list(keys.after(marker)) == sorted(k for k in model if marker is None or k > marker)


def test_a_column_is_the_joined_fq_name_then_the_uuid():
    key = column(["default-policy-management", "k8s-a"], "0c4e2a52-0000-4000-8000-000000000001")
    assert key == "default-policy-management:k8s-a:0c4e2a52-0000-4000-8000-000000000001"
    assert uuid_of(key) == "0c4e2a52-0000-4000-8000-000000000001"
    assert uuid_of("0c4e2a52-0000-4000-8000-000000000001") == "0c4e2a52-0000-4000-8000-000000000001"
