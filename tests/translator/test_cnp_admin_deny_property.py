"""Property: an Admin tier Deny is never bypassed (SPEC 13, issue 10); and beyond it, the emitted
objects agree with the Kubernetes semantics on every flow but the cluster-wide ones.

Random clusters (namespaces and pods with random labels, IPs and named ports), random
ClusterNetworkPolicies of both tiers (subjects by namespace or pod selectors, every action, peers
by namespace, pods, networks and, now and then, nodes, which fail closed; numbered, ranged and named
ports) and random NetworkPolicies. For every ordered pair of pods and an outside address, and a set
of ports over TCP, UDP and SCTP: whenever the Kubernetes reference model says an Admin tier rule
denies the flow at one end, the emitted objects, evaluated as SPEC 6 does, drop it too. And every
other verdict of the emitted objects is the reference model's, except where explain's cluster-wide
condition holds (what admits the flow at one end comes first in the APS; SPEC 6 and 13).

Every example holds at least one Admin tier Deny rule, so no example is vacuous. The number of
examples is set so that the test costs a few seconds on two loaded cores (see EXAMPLES).
"""
from __future__ import annotations

import ipaddress
from typing import Any, Dict, List, Optional, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube_manager.explain.explainer import cluster_wide_policies
from kube_manager.explain.flow import ContrailEvaluator, Workload
from kube_manager.explain.k8s_cnp import ADMIN
from kube_manager.explain.k8s_semantics import Endpoint, KubernetesModel, SideVerdict
from kube_manager.translator import translate

pytestmark = pytest.mark.slow  # seconds per test: out of the inner loop

EXAMPLES = 150
NAMESPACES = ("red", "blue", "green")
OUTSIDE = "192.0.2.7"
PROBES = (("TCP", 80), ("TCP", 443), ("TCP", 8080), ("UDP", 53), ("UDP", 80), ("SCTP", 80))
NUMBERS = (53, 80, 443, 8080)
NETWORKS = ("10.9.0.0/16", "10.9.1.0/24", "10.9.2.11/32", "0.0.0.0/0", "192.0.2.0/24")
KEYS = ("app", "tier")
VALUES = ("a", "b")

labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2)


@st.composite
def selectors(draw: Any) -> Dict[str, Any]:
    """matchLabels, or one expression of any operator."""
    if draw(st.booleans()):
        return {"matchLabels": draw(labels)}
    key, operator = draw(st.sampled_from(KEYS)), draw(st.sampled_from(("In", "NotIn", "Exists",
                                                                       "DoesNotExist")))
    expression: Dict[str, Any] = {"key": key, "operator": operator}
    if operator in ("In", "NotIn"):
        expression["values"] = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=2,
                                             unique=True))
    return {"matchExpressions": [expression]}


@st.composite
def pod_sets(draw: Any) -> Dict[str, Any]:
    """A `namespaces` or `pods` subject or peer."""
    if draw(st.booleans()):
        return {"namespaces": draw(selectors())}
    return {"pods": {"namespaceSelector": draw(selectors()), "podSelector": draw(selectors())}}


@st.composite
def protocols(draw: Any) -> Optional[List[Dict[str, Any]]]:
    if draw(st.booleans()):
        return None
    entries = []
    for _ in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(("tcp", "udp", "sctp", "named", "range")))
        if kind == "named":
            entries.append({"destinationNamedPort": draw(st.sampled_from(("web", "dns")))})
        elif kind == "range":
            start = draw(st.sampled_from((53, 80, 443)))
            entries.append({"tcp": {"destinationPort": {"range": {"start": start, "end": 8080}}}})
        else:
            entries.append({kind: {"destinationPort": {"number": draw(st.sampled_from(NUMBERS))}}})
    return entries


@st.composite
def cnp_rules(draw: Any, direction: str, action: Optional[str] = None) -> Dict[str, Any]:
    peers = []
    for _ in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(("set", "set", "networks", "nodes") if direction == "egress"
                                    else ("set",)))
        if kind == "networks":
            peers.append({"networks": draw(st.lists(st.sampled_from(NETWORKS), min_size=1,
                                                    max_size=2, unique=True))})
        elif kind == "nodes":
            peers.append({"nodes": {"matchLabels": {"kubernetes.io/os": "linux"}}})
        else:
            peers.append(draw(pod_sets()))
    rule: Dict[str, Any] = {"action": action or draw(st.sampled_from(("Accept", "Deny", "Pass"))),
                            ("from" if direction == "ingress" else "to"): peers}
    ports = draw(protocols())
    if ports is not None:
        rule["protocols"] = ports
    return rule


@st.composite
def cluster_policies(draw: Any, index: int, deny_first: bool = False) -> Dict[str, Any]:
    tier = ADMIN if deny_first else draw(st.sampled_from((ADMIN, "Baseline")))
    spec: Dict[str, Any] = {"tier": tier, "priority": draw(st.integers(0, 3)),
                            "subject": draw(pod_sets())}
    forced = draw(st.sampled_from(("ingress", "egress"))) if deny_first else None
    for direction in ("ingress", "egress"):
        rules = draw(st.lists(cnp_rules(direction), max_size=3))
        if direction == forced:
            rules.append(draw(cnp_rules(direction, "Deny")))
        if rules:
            spec[direction] = draw(st.permutations(rules))
    return {"kind": "ClusterNetworkPolicy", "metadata": {"name": f"cnp-{index}"}, "spec": spec}


@st.composite
def network_policies(draw: Any, index: int) -> Dict[str, Any]:
    namespace = draw(st.sampled_from(NAMESPACES))
    types = draw(st.sampled_from((["Ingress"], ["Egress"], ["Ingress", "Egress"])))
    spec: Dict[str, Any] = {"podSelector": draw(selectors()), "policyTypes": types}
    for direction, field in (("Ingress", "from"), ("Egress", "to")):
        if direction in types:
            blocks = []
            for _ in range(draw(st.integers(0, 2))):
                peer = ({"namespaceSelector": {"matchLabels": {"team": draw(st.sampled_from(VALUES))}}}
                        if draw(st.booleans()) else {"podSelector": draw(selectors())})
                blocks.append({field: [peer]})
            spec[direction.lower()] = blocks
    return {"kind": "NetworkPolicy", "metadata": {"namespace": namespace, "name": f"np-{index}"},
            "spec": spec}


@st.composite
def clusters(draw: Any) -> Tuple[List[Dict[str, Any]], ...]:
    namespaces = [{"kind": "Namespace", "metadata": {"name": name, "labels": {
        "team": draw(st.sampled_from(VALUES))}}} for name in NAMESPACES]
    pods = []
    for n, namespace in enumerate(NAMESPACES):
        for i in range(draw(st.integers(1, 2))):
            web = draw(st.sampled_from((80, 8080)))
            pods.append({"kind": "Pod", "metadata": {"namespace": namespace, "name": f"p{i}",
                                                     "uid": f"uid-{namespace}-{i}",
                                                     "labels": draw(labels)},
                         "spec": {"containers": [{"name": "c", "ports": [
                             {"name": "web", "containerPort": web, "protocol": "TCP"},
                             {"name": "dns", "containerPort": 53, "protocol": "UDP"}]}]},
                         "status": {"podIP": f"10.9.{n}.{10 + i}"}})
    cnps = [draw(cluster_policies(0, deny_first=True))]
    cnps += [draw(cluster_policies(i)) for i in range(1, draw(st.integers(1, 3)))]
    nps = [draw(network_policies(i)) for i in range(draw(st.integers(0, 2)))]
    return namespaces, pods, nps, cnps


def _denied_by_admin(side: SideVerdict) -> bool:
    return side.tier == ADMIN and not side.allowed


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_no_admin_deny_is_ever_bypassed_and_only_cluster_wide_flows_differ(cluster):
    namespaces, pods, nps, cnps = cluster
    translation = translate({"Namespace": namespaces,
                             "Pod": pods,
                             "NetworkPolicy": nps,
                             "ClusterNetworkPolicy": cnps}, cluster_name="k8s").to_dict()
    contrail = ContrailEvaluator(translation, "k8s")
    model = KubernetesModel.build(namespaces, pods, nps, cnps)
    ends: List[Tuple[Endpoint, Workload]] = []
    for manifest in pods:
        metadata = manifest["metadata"]
        pod = model.pod(metadata["namespace"], metadata["name"])
        workload = contrail.workload(metadata["namespace"], metadata["name"])
        assert pod is not None and workload is not None
        ends.append((Endpoint(pod, pod.ip), workload))
    outside = ipaddress.ip_address(OUTSIDE)
    ends.append((Endpoint(None, outside), Workload(outside, frozenset())))
    bypassed, mismatched = [], []
    for src, src_workload in ends:
        for dst, dst_workload in ends:
            if src is dst:
                continue
            for protocol, port in PROBES:
                verdict = model.verdict(src, dst, port, protocol)
                decision = contrail.evaluate(src_workload, dst_workload, port, protocol.lower())
                flow = (f"{src.describe()} -> {dst.describe()} {protocol} {port}: Contrail "
                        f"{'allows' if decision.allowed else 'drops'} ({decision.rule} of "
                        f"{decision.policy}), Kubernetes tiers {verdict.egress.tier}/"
                        f"{verdict.ingress.tier}")
                if _denied_by_admin(verdict.egress) or _denied_by_admin(verdict.ingress):
                    if decision.allowed:
                        bypassed.append(flow)
                elif decision.allowed != verdict.allowed and not (
                        decision.allowed and cluster_wide_policies(verdict) is not None):
                    mismatched.append(flow)
    assert not bypassed, "an Admin tier Deny bypassed:\n" + "\n".join(bypassed[:20])
    assert not mismatched, "not cluster-wide, yet different:\n" + "\n".join(mismatched[:20])
