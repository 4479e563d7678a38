"""ClusterNetworkPolicy conformance on the model of the upstream suite (kubernetes-sigs/network-policy-api,
conformance/: the Admin tier and Baseline tier tests and the combined Admin + NetworkPolicy +
Baseline test, on namespaces gryffindor, hufflepuff, ravenclaw and slytherin; tests/conformance/
upstream.py names the commit).

Every upstream probe, with its expectation copied from the upstream assertion, is evaluated in the
state upstream probes it in (the test's policies after the changes of the subtests before it):
1. by the Kubernetes reference model (kube_manager.explain.k8s_semantics): it must agree with
   upstream on every probe, except where SPEC 13 prescribes otherwise (the probes marked
   `spec13`: peers of kind `nodes`, which fail closed);
"""
from __future__ import annotations

import ipaddress
from typing import List

import pytest

from conformance.houses import NODE, NODE_IP, HouseCluster, is_pod, split
from conformance.upstream import P, UpstreamTest, load
from kube_manager.explain.k8s_semantics import Endpoint, KubernetesModel

TESTS = load()


def model_of(cluster: HouseCluster) -> KubernetesModel:
    return KubernetesModel.build(cluster.namespaces, cluster.pods, cluster.network_policies,
                                 cluster.cluster_network_policies)


def endpoint(model: KubernetesModel, end: str) -> Endpoint:
    if not is_pod(end):
        return Endpoint(None, ipaddress.ip_address(NODE_IP))
    pod = model.pod(*split(end))
    assert pod is not None, end
    return Endpoint(pod, pod.ip)


def oracle_allows(cluster: HouseCluster, probe: P) -> bool:
    model = model_of(cluster)
    return model.verdict(endpoint(model, probe.src), endpoint(model, probe.dst), probe.port,
                         probe.protocol.upper()).allowed


@pytest.mark.parametrize("test", TESTS, ids=lambda t: t.name)
def test_the_reference_model_agrees_with_upstream(test: UpstreamTest):
    failures: List[str] = []
    for step, probe, cluster in test.run():
        got = oracle_allows(cluster, probe)
        if got != probe.ours:
            failures.append(f"{step.title}: {probe}: the model says {got}, upstream expects "
                            f"{probe.expected}" + (f" ({probe.spec13})" if probe.spec13 else ""))
    assert not failures, "\n".join([test.name] + failures)


def test_the_tables_hold_every_upstream_probe():
    """Guards the tables: the 301 PokeServer calls of the 24 upstream tests, and SPEC 13 departs
    from upstream only on probes towards a node."""
    probes = [p for test in TESTS for p in test.probes]
    assert len(TESTS) == 24 and len(probes) == 301
    departures = [p for p in probes if p.spec13]
    assert len(departures) == 4 and all(p.dst == NODE and p.expected for p in departures)
    assert sum(p.expected for p in probes) == 166  # upstream: 166 shouldConnect true, 135 false
