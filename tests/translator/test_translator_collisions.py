"""Name collisions (SPEC 4) against an oracle that knows nothing of the translator's shortcuts.

The translator only looks names up for namespaces with a prefix relative (`a` and `a-b`), on
the argument that no other pair of policies can share a name. The oracle here renders each
policy alone (where nothing can collide), gathers its names, and declares colliding exactly the
policies sharing a name with another; the translator, fed the same policies in any order with
deletions in between, must suffix exactly those.
"""
from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any, Dict, Set, Tuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kube_manager.translator import ClusterTranslator, translate
from kube_manager.translator.naming import collision_label
from tests.support.builders import policy

# Namespaces and names chosen so that names often meet: `a`/`a-b`/`a-b-c` extend each other
# (`a-b/c-0`, `a/b-c-0` and `a-b-c/0` are all `k8s-a-b-c-0`), `a-ingress/c` and `a/ingress-c` share
# a policy name and their ingress rule names. `z` has no relative: its policies, with names that
# look like rule tails of each other (`c`, `c-1-allow-all`), must never collide.
KEYS = ([(ns, np) for ns in ("a", "a-b", "a-b-c", "a-ingress")
         for np in ("c", "b-c", "0", "c-0", "b-c-0", "ingress-c", "ingress-b-c")]
        + [("z", np) for np in ("c", "c-0", "c-1-allow-all", "c-denyall", "ingress-c")])
SPECS = [
    {"podSelector": {}},
    {"podSelector": {}, "policyTypes": ["Ingress", "Egress"], "ingress": [{}],
     "egress": [{"to": [{"podSelector": {}}]}, {"ports": [{"port": 53}, {"port": 80}]}]},
    {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}},
                                              {"namespaceSelector": {}}]}, {}]},
]

Key = Tuple[str, str]


def names_alone(key: Key, spec: Dict[str, Any]) -> Set[str]:
    """The policy and rule names of one policy rendered on its own (nothing to collide with)."""
    result = translate({"NetworkPolicy": [policy(*key, copy.deepcopy(spec))]}).to_dict()
    names = {p["fq_name"][-1] for p in result["firewall_policies"]} - {"k8s-allowall", "k8s-denyall"}
    names |= {r["fq_name"][-1] for r in result["firewall_rules"]} - {"k8s-allowall-ingress", "k8s-allowall-egress"}
    return {name for name in names if not name.startswith("k8s--")}  # SPEC 14's own, never a policy's


def expected_collisions(policies: Dict[Key, Dict[str, Any]]) -> Set[Key]:
    owners: Dict[str, Set[Key]] = defaultdict(set)
    for key, spec in policies.items():
        for name in names_alone(key, spec):
            owners[name].add(key)
    return {key for keys in owners.values() if len(keys) > 1 for key in keys}


def suffixed(translator: ClusterTranslator, policies: Dict[Key, Dict[str, Any]]) -> Set[Key]:
    """The policies suffixed once the events so far are flushed."""
    translator.flush()
    found = {fq[-1] for fq in translator.desired()["firewall-policy"]}
    return {(ns, np) for ns, np in policies if f"k8s-{ns}-{collision_label(ns, np)}" in found}


operations = st.lists(st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.sampled_from(range(len(SPECS)))),
                                st.booleans()), max_size=30)


@settings(max_examples=200, deadline=None)
@given(operations)
def test_exactly_the_policies_sharing_a_name_are_suffixed(ops):
    translator = ClusterTranslator()
    policies: Dict[Key, Dict[str, Any]] = {}
    for (namespace, name), spec_index, then_read in ops:
        if spec_index is None:
            policies.pop((namespace, name), None)
            translator.delete("NetworkPolicy", namespace, name)
        else:
            policies[(namespace, name)] = SPECS[spec_index]
            translator.upsert("NetworkPolicy", policy(namespace, name, copy.deepcopy(SPECS[spec_index])))
        if then_read:
            translator.flush()
    assert suffixed(translator, policies) == expected_collisions(policies)


@pytest.mark.parametrize("first", [("a", "b-c"), ("a-b", "c")])
def test_related_namespaces_collide_and_stop_colliding(first):
    """`k8s-a-b-c` twice, whichever namespace comes first; the collision ends with either."""
    both = [("a", "b-c"), ("a-b", "c")]
    second = both[1 - both.index(first)]
    for gone in both:
        translator = ClusterTranslator()
        translator.upsert("NetworkPolicy", policy(*first, {"podSelector": {}}))
        assert suffixed(translator, dict.fromkeys(both)) == set()
        translator.upsert("NetworkPolicy", policy(*second, {"podSelector": {}}))
        assert suffixed(translator, dict.fromkeys(both)) == set(both)
        translator.delete("NetworkPolicy", *gone)
        assert suffixed(translator, dict.fromkeys(both)) == set()
