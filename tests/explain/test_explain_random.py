"""Random NetworkPolicies on the x/y/z cluster: `explain` never reports a mismatch.

Where the conformance cases follow upstream's hand-picked policies, this draws policies from the
whole grammar (every selector operator, combined peers, ipBlocks with excepts over pod IPs, numbered,
ranged and named ports on every protocol, default and explicit policyTypes, a few invalid parts) on a
cluster with uneven labels and named ports, and runs the same pair-by-pair checks.
"""
from __future__ import annotations

from typing import Any, Dict, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conformance.cases import SCTP80, TCP80, TCP81, UDP81
from tests.conformance.checks import PerPolicy, run_pairs
from tests.support.builders import namespace, pod, policy
from tests.conformance.cluster import ManifestSet, NAMESPACES, pod_ip, serve_ports

POD_LABELS = {
    "x/a": {"pod": "a", "tier": "web"}, "x/b": {"pod": "b", "tier": "db", "Tier_X": "1"},
    "x/c": {"pod": "c", "canary": ""}, "y/a": {"pod": "a", "tier": "web", "canary": ""},
    "y/b": {"pod": "b"}, "y/c": {"pod": "c", "tier": "db"}, "z/a": {"pod": "a", "Tier_X": "2"},
    "z/b": {"pod": "b", "tier": "web"}, "z/c": {"pod": "c"},
}
NAMESPACE_LABELS = {"x": {"ns": "x", "team": "blue"}, "y": {"ns": "y", "team": ""}, "z": {"ns": "z"}}
SWAPPED = [("serve-80-tcp", 81, "TCP"), ("serve-81-tcp", 80, "TCP")]  # z/c names its ports the other way


def cluster(policies: List[Dict[str, Any]]) -> ManifestSet:
    pods = []
    for key, labels in POD_LABELS.items():
        ns, name = key.split("/")
        ports = {"x/c": [], "z/c": SWAPPED}.get(key, serve_ports())
        pods.append(pod(ns, name, pod_ip(ns, name), labels, ports))
    return ManifestSet({"Namespace": [namespace(n, **NAMESPACE_LABELS[n]) for n in NAMESPACES],
                        "Pod": pods,
                        "NetworkPolicy": list(policies)})


def selector(keys: List[str], values: List[str]) -> st.SearchStrategy:
    requirement = st.one_of(
        st.fixed_dictionaries({"key": st.sampled_from(keys), "operator": st.sampled_from(["In", "NotIn"]),
                               "values": st.lists(st.sampled_from(values), min_size=1, max_size=3,
                                                  unique=True)}),
        st.fixed_dictionaries({"key": st.sampled_from(keys),
                               "operator": st.sampled_from(["Exists", "DoesNotExist"])}))
    return st.one_of(
        st.just({}),
        st.fixed_dictionaries({"matchLabels": st.dictionaries(st.sampled_from(keys), st.sampled_from(values),
                                                              min_size=1, max_size=2)}),
        st.fixed_dictionaries({"matchExpressions": st.lists(requirement, min_size=1, max_size=2)}),
        st.fixed_dictionaries({"matchLabels": st.dictionaries(st.sampled_from(keys), st.sampled_from(values),
                                                              max_size=1),
                               "matchExpressions": st.lists(requirement, min_size=1, max_size=1)}))


pod_selectors = selector(["pod", "tier", "Tier_X", "canary"], ["a", "b", "c", "web", "db", "1", "2", ""])
namespace_selectors = selector(["ns", "team", "kubernetes.io/metadata.name"], ["x", "y", "z", "blue", ""])
ip_blocks = st.sampled_from([
    {"cidr": "10.244.0.0/16"}, {"cidr": "10.244.0.0/16", "except": ["10.244.2.0/24"]},
    {"cidr": "10.244.2.0/24", "except": [f"{pod_ip('y', 'b')}/32"]}, {"cidr": f"{pod_ip('x', 'a')}/32"},
    {"cidr": "192.0.2.0/24"}, {"cidr": "0.0.0.0/0", "except": ["10.244.0.0/16"]},
    {"cidr": f"{pod_ip('x', 'a')}/4", "except": [f"{pod_ip('x', 'b')}/32"]},
    {"cidr": "10.244.0.0/16", "except": ["10.0.0.0/8"]},  # invalid: except is not a subset
])
peers = st.one_of(
    st.fixed_dictionaries({"podSelector": pod_selectors}),
    st.fixed_dictionaries({"namespaceSelector": namespace_selectors}),
    st.fixed_dictionaries({"namespaceSelector": namespace_selectors, "podSelector": pod_selectors}),
    st.fixed_dictionaries({"ipBlock": ip_blocks}),
)
ports = st.sampled_from([
    {"port": 80}, {"port": 81, "protocol": "UDP"}, {"port": 80, "endPort": 81}, {"protocol": "SCTP"},
    {"port": "serve-81-tcp"}, {"port": "serve-80-tcp"}, {"port": "serve-80-sctp", "protocol": "SCTP"},
    {"port": 81, "protocol": "SCTP"}, {"port": 81, "endPort": 80},  # the last is invalid
])


def block(peer_field: str) -> st.SearchStrategy:
    return st.builds(
        lambda chosen_peers, chosen_ports: {
            **({} if chosen_peers is None else {peer_field: chosen_peers}),
            **({} if chosen_ports is None else {"ports": chosen_ports})},
        st.one_of(st.none(), st.just([]), st.lists(peers, min_size=1, max_size=2)),
        st.one_of(st.none(), st.lists(ports, min_size=1, max_size=2)))


def policy_spec() -> st.SearchStrategy:
    return st.builds(
        lambda selected, types, ingress, egress: {
            "podSelector": selected, "ingress": ingress, "egress": egress,
            **({} if types is None else {"policyTypes": types})},
        pod_selectors,
        st.sampled_from([None, ["Ingress"], ["Egress"], ["Ingress", "Egress"]]),
        st.lists(block("from"), max_size=2), st.lists(block("to"), max_size=2))


policy_sets = st.lists(st.tuples(st.sampled_from(NAMESPACES), policy_spec()), min_size=1, max_size=3) \
    .map(lambda drawn: [policy(ns, f"p{i}", spec) for i, (ns, spec) in enumerate(drawn)])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(policy_sets, st.sampled_from(["cluster-wide", "kubernetes"]))
def test_random_policies_never_mismatch(policies, semantics):
    from kube_manager.translator import translate
    run = run_pairs(cluster(policies), PerPolicy.build(policies, cluster), translate,
                    [TCP80, TCP81, UDP81, SCTP80], semantics)
    assert not run.failures, run.report(f"policies: {policies}")
