"""The long ref lists (APS, `<cluster>-denyall`) stay in (sequence, name) order whether changes
arrive one at a time (binary search) or in bulk (one sort), and the flat string sort key orders
refs exactly as the numeric (sequence_key, name) order does."""
from __future__ import annotations

from typing import Dict, List, Tuple

from hypothesis import given, settings
from hypothesis import strategies as st

from kube_manager.translator.naming import hashed_sequence, sequence_sort_key
from kube_manager.translator.sequenced import SequencedRefs

PM = "default-policy-management"
NAMES = [f"k8s-ns-{i}-np" for i in range(40)]
# The sequences the translator writes: hashed ones of varying names, the cluster policies'
# majors, and minors that are prefixes of each other.
sequences = st.one_of(st.sampled_from(NAMES).map(hashed_sequence),
                      st.sampled_from(["2.0", "3.0", "1.5", "1.50", "1.05", "10.0", "9.0", "100000.0"]))


def sequence_key(sequence: str) -> Tuple[int, str]:
    """The numeric order of `major.minor` sequences (the minor digits compare as decimals): the
    reference the flat key must agree with."""
    major, _, minor = sequence.partition(".")
    return (int(major), minor)


@given(st.lists(st.tuples(sequences, st.sampled_from(NAMES))))
def test_flat_key_orders_as_the_numeric_sequence_order(pairs):
    assert (sorted(pairs, key=lambda p: sequence_sort_key(*p))
            == sorted(pairs, key=lambda p: (sequence_key(p[0]), p[1])))


# Each step: a batch of (name, sequence or None to remove), committed together; small batches go
# through binary search, large ones through one sort.
batches = st.lists(st.lists(st.tuples(st.sampled_from(NAMES), st.one_of(st.none(), sequences)),
                            max_size=60), max_size=8)


@settings(max_examples=150, deadline=None)
@given(batches)
def test_refs_stay_ordered_and_report_their_changes(steps):
    refs: List[Dict] = []
    sequenced = SequencedRefs(refs)
    current: Dict[str, str] = {}
    for batch in steps:
        before = dict(current)
        for name, sequence in batch:
            if sequence is None:
                sequenced.discard((PM, name))
                current.pop(name, None)
            else:
                sequenced.set((PM, name), sequence, [PM, name])
                current[name] = sequence
        operations = sequenced.commit()
        expected: List[Tuple[str, str]] = sorted(current.items(), key=lambda i: (sequence_key(i[1]), i[0]))
        assert [(ref["to"][-1], ref["attr"]["sequence"]) for ref in refs] == expected
        moved = {(op, fq[-1], seq) for op, fq, seq in operations}
        assert moved == ({("DELETE", n, s) for n, s in before.items() if current.get(n) != s}
                         | {("ADD", n, s) for n, s in current.items() if before.get(n) != s})
