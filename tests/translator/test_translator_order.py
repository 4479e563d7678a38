"""translate()'s lists come out in SPEC 8's order whatever order the objects came in: objects by
fq_name (so by name), workloads by namespace then name, namespaces that extend one another with
`-` included (`a` < `a-b` < `ab`, whose names compare otherwise once joined)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kube_manager.translator import translate
from tests.support.builders import pod, policy

NAMESPACES = ["a", "a-b", "a-b-c", "ab", "b0"]
NAMES = ["p", "p-1", "p1", "q"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(NAMES)), unique=True, min_size=1,
                max_size=14),
       st.randoms(use_true_random=False))
def test_every_list_is_in_spec_order_whatever_the_input_order(keys, shuffler):
    pods = [pod(ns, name, ip=f"10.0.0.{i + 1}", app=name) for i, (ns, name) in enumerate(keys)]
    policies = [policy(ns, name, {"podSelector": {"matchLabels": {"app": name}},
                                  "ingress": [{"from": [{"podSelector": {}}], "ports": [{"port": 80}, {"port": 443}]}],
                                  "egress": [{"to": [{"ipBlock": {"cidr": f"10.{i}.0.0/16"}}]}]})
                for i, (ns, name) in enumerate(keys)]
    shuffler.shuffle(pods)
    shuffler.shuffle(policies)
    result = translate({"Pod": pods, "NetworkPolicy": policies}, semantics="cluster-wide")
    assert [(w["namespace"], w["name"]) for w in result.workloads] == sorted(keys)
    for objects in (result.tags, result.address_groups, result.firewall_rules, result.firewall_policies):
        names = [body["fq_name"][-1] for body in objects]
        assert names == sorted(names) and len(set(names)) == len(names)
    assert len(result.firewall_policies) == len(keys) + 2  # and <cluster>-allowall, -denyall
