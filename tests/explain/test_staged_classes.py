"""A staged policy's flows on clusters of replicas: pods alike to every policy are evaluated once per
pair of classes and their flows counted once per pod pair (SPEC 17). Checked as test_staged_flows
checks them, against the Kubernetes model on every pod pair, and by hand where the counts are big.
"""
from __future__ import annotations

import copy
import ipaddress
from typing import Any, Dict, List

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube_manager.explain.staged_flows import StagedRun
from tests.conformance.cluster import NAMESPACES
from tests.explain.test_explain_random import cluster as xyz_cluster
from tests.explain.test_explain_random import policy_spec
from tests.explain.test_staged_flows import check, staged
from tests.support import cnp_support
from tests.support.builders import policy


def replicated(pods: List[Dict[str, Any]], replicas: int) -> List[Dict[str, Any]]:
    """`replicas` copies of each pod: the same labels, ports and namespace, an address in the same
    /24, and a label of its own no policy names (as a ReplicaSet's pod-template-hash)."""
    made = []
    for manifest in pods:
        for i in range(replicas):
            copied = copy.deepcopy(manifest)
            metadata = copied["metadata"]
            metadata["name"] = f"{metadata['name']}-{i}"
            metadata["uid"] = f"{metadata.get('uid')}-{i}"
            metadata["labels"] = {**metadata.get("labels", {}), "pod-template-hash": f"h{i}"}
            copied["status"]["podIP"] = str(ipaddress.ip_address(copied["status"]["podIP"]) + 30 * i)
            made.append(copied)
    return made


def with_replicas(objects: Dict[str, List[Any]], replicas: int) -> Dict[str, List[Any]]:
    return {**objects, "Pod": replicated(objects["Pod"], replicas)}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.tuples(st.sampled_from(NAMESPACES), policy_spec()), st.tuples(st.sampled_from(NAMESPACES), policy_spec()),
       st.integers(2, 3), st.sampled_from(["kubernetes", "cluster-wide"]))
def test_a_staged_network_policy_over_replicas_changes_what_the_model_says(chosen, other, replicas, semantics):
    enforced = policy(other[0], "enforced", other[1])
    candidate = policy(chosen[0], "staged", chosen[1])
    objects = with_replicas(dict(xyz_cluster([enforced, staged(candidate)]).objects), replicas)
    promoted = {**objects, "NetworkPolicy": [enforced, candidate]}
    check(objects, promoted, ("NetworkPolicy", chosen[0], "staged"), semantics)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cnp_support.one_direction_policies(), st.data(), st.integers(2, 3), st.sampled_from(["kubernetes", "cluster-wide"]))
def test_a_staged_cluster_network_policy_over_replicas_changes_what_the_model_says(drawn, data, replicas, semantics):
    _direction, policies = drawn
    index = data.draw(st.integers(0, len(policies) - 1))
    namespaces, pods = cnp_support.cluster()
    chosen, others = policies[index], policies[:index] + policies[index + 1:]
    objects = {"Namespace": namespaces, "Pod": replicated(pods, replicas), "ClusterNetworkPolicy": others + [staged(chosen)]}
    promoted = {**objects, "ClusterNetworkPolicy": others + [chosen]}
    check(objects, promoted, ("ClusterNetworkPolicy", "", chosen["metadata"]["name"]), semantics)


def test_a_deny_all_over_many_replicas_counts_every_pod_pair_and_lists_pods_by_name():
    deny = policy("x", "deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    replicas = 8
    objects = with_replicas(dict(xyz_cluster([staged(deny)]).objects), replicas)
    report = StagedRun(objects, "k8s", "kubernetes").flows(("NetworkPolicy", "x", "deny"))
    into_x = 3 * replicas * (9 * replicas - 1)  # x's 24 pods, each from the 71 others
    assert report.complete and report.pairs == report.pairs_checked == into_x
    assert (report.opened, report.closed) == (0, 3 * into_x)  # every port of 3 protocols: one flow each
    listed = report.closed_listed
    assert len(listed) == 100 and len(set(listed)) == 100
    names = {m["metadata"]["namespace"] + "/" + m["metadata"]["name"] for m in objects["Pod"]}
    assert all(f.source in names and f.destination in names and f.destination.startswith("x/") and f.source != f.destination
               for f in listed)


def test_each_policy_of_a_run_reads_as_if_it_were_the_only_one_computed():
    """One translator serves the run, each policy promoted in it then staged again: the second
    policy's report is the one a run of its own gives."""
    deny = policy("x", "deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    allow = policy("y", "web", {"podSelector": {"matchLabels": {"tier": "web"}}, "policyTypes": ["Ingress", "Egress"],
                                "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"team": "blue"}}}]}]})
    objects = with_replicas(dict(xyz_cluster([staged(deny), staged(allow)]).objects), 2)
    keys = [("NetworkPolicy", "x", "deny"), ("NetworkPolicy", "y", "web")]
    together = StagedRun(objects, "k8s", "kubernetes")
    reports = [together.flows(key).to_dict() for key in keys]
    alone = [StagedRun(objects, "k8s", "kubernetes").flows(key).to_dict() for key in keys]
    assert reports == alone and reports[1]["closed"] > 0
