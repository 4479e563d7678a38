"""ClusterNetworkPolicy conformance on the model of the upstream suite (kubernetes-sigs/network-policy-api,
conformance/: the Admin tier and Baseline tier tests and the combined Admin + NetworkPolicy +
Baseline test, on namespaces gryffindor, hufflepuff, ravenclaw and slytherin; tests/conformance/
upstream.py names the commit).

Every upstream probe, with its expectation copied from the upstream assertion, is evaluated in the
state upstream probes it in (the test's policies after the changes of the subtests before it):
1. by the Kubernetes reference model (kube_manager.explain.k8s_semantics): it must agree with
   upstream on every probe, except where SPEC 13 prescribes otherwise (the probes marked
   `spec13`: peers of kind `nodes`, which fail closed);
2. on the emitted objects as SPEC 6 evaluates them (`explain` over `translate()`'s output with the
   ClusterNetworkPolicies as input): every probe agrees with upstream (as SPEC 13 reads it) unless
   explain flags it `cluster-wide`, and explain never reports a `mismatch`;
3. beyond upstream's probes, in every state a probe is made in, every ordered pair of the eight
   pods and the node address on every port upstream probes in that test: the emitted objects agree
   with the reference model except on flows flagged `cluster-wide`.
The figures (probes, agreements, flagged) are pinned by the last test.
"""
from __future__ import annotations

import copy
import ipaddress
from collections import Counter
from typing import Dict, List, Tuple

import pytest

from tests.conformance.houses import NODE, NODE_IP, PODS, HouseCluster, address, is_pod, split
from tests.conformance.upstream import P, UpstreamTest, load
from kube_manager.explain.explainer import CLUSTER_WIDE, Explainer
from kube_manager.explain.k8s_semantics import Endpoint, KubernetesModel
from kube_manager.translator import translate

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
    for step, probe, cluster, _state in test.run():
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


def explainer_of(cluster: HouseCluster) -> Explainer:
    translation = translate(copy.deepcopy(cluster.objects), cluster_name="k8s")
    result = translation.to_dict()
    assert [e for e in result["errors"] if "nodes" not in e["reason"]] == [], result["errors"]
    return Explainer(result, cluster, "k8s", translation.selectors)


def where(end: str) -> str:
    """An end as explain takes it: `namespace/pod`, or the node's address."""
    return "/".join(split(end)) if is_pod(end) else address(end)


def contrail_run(test: UpstreamTest) -> Tuple[Counter, List[str]]:
    """Every probe of the test on the emitted objects, then every pair in each probed state."""
    figures: Counter = Counter()
    failures: List[str] = []
    explainers: Dict[int, Explainer] = {}
    probed = sorted({(p.protocol, p.port) for p in test.probes})
    for step, probe, cluster, state in test.run():
        if state not in explainers:
            explainers[state] = explainer_of(cluster)
            for src in PODS + (NODE,):
                for dst in PODS + (NODE,):
                    for protocol, port in probed if src != dst else ():
                        pair = explainers[state].explain(where(src), where(dst), port, protocol)
                        figures["pairs"] += 1
                        if pair["deviation"] == CLUSTER_WIDE:
                            figures["pairs flagged"] += 1
                        if pair["deviation"] not in (None, CLUSTER_WIDE):
                            failures.append(f"{step.title}: {src} -> {dst} {protocol}/{port}: "
                                            f"{pair['reason']}")
        result = explainers[state].explain(where(probe.src), where(probe.dst), probe.port,
                                           probe.protocol)
        figures["probes"] += 1
        if result["allowed"] == probe.ours:
            figures["agree"] += 1
        elif result["deviation"] == CLUSTER_WIDE:
            figures["flagged"] += 1
        else:
            failures.append(f"{step.title}: {probe}: Contrail {'allows' if result['allowed'] else 'drops'} "
                            f"it, upstream expects {probe.expected}: {result['reason']}")
    return figures, failures


def test_the_emitted_objects_agree_except_cluster_wide():
    """All 24 tests; the figures are those of the issue's closing note: every upstream probe
    agrees (none needs the cluster-wide flag: upstream never isolates both ends of a probe), and
    so do the 11,592 flows of the pair sweep."""
    figures: Counter = Counter()
    failures: List[str] = []
    for test in TESTS:
        found, wrong = contrail_run(test)
        figures.update(found)
        failures.extend(f"{test.name}: {line}" for line in wrong)
    assert not failures, "\n".join(failures[:40])
    assert dict(figures) == {"probes": 301, "agree": 301, "pairs": 11592}
