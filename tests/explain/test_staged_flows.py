"""The flows a staged policy would open and close (SPEC 17), against the Kubernetes model.

For random clusters and a random staged policy (another staged one beside it, which must be left
out), the flows reported are compared with the reference model (k8s_semantics, which shares no
code with the translator) of the cluster before (every staged policy left out) and after (the
staged policy's annotation removed by hand): on every pod pair, protocol and probe port, and at
the first port of every reported range, a flow is reported opened (closed) exactly when the model
drops (allows) it before and allows (drops) it after. Under `cluster-wide` semantics the model's
verdict is widened by SPEC 6's one deviation: a flow one end's NetworkPolicies allow while the
other end's isolate it and allow nothing is allowed.
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Set, Tuple

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kube_manager.explain.k8s_semantics import (NETWORK_POLICY_TIER, Endpoint, KubernetesModel, PeerBlocks,
                                                SideVerdict)
from kube_manager.explain.staged_flows import StagedFlows, StagedRun
from tests.conformance.cluster import NAMESPACES
from tests.explain.test_explain_random import cluster as xyz_cluster
from tests.explain.test_explain_random import policy_spec
from tests.support import cnp_support
from tests.support.builders import policy
from tests.support.semantics_support import verdict_at

ANNOTATION = "contrail-kube-manager/staged"
PROTOCOLS = ("tcp", "udp", "sctp")
PROBES = (1, 53, 75, 79, 80, 81, 82, 443, 8080, 9003, 65535)
Cell = Tuple[str, str, str, int]  # from, to, protocol, port


def staged(manifest: Dict[str, Any], value: str = "true") -> Dict[str, Any]:
    copied = copy.deepcopy(manifest)
    copied["metadata"]["annotations"] = {ANNOTATION: value}
    return copied


def _network_policy_decides(side: SideVerdict, allowed: bool) -> bool:
    return side.tier == NETWORK_POLICY_TIER and side.allowed == allowed


def enforced_allows(model: KubernetesModel, src: Endpoint, dst: Endpoint, port: int, protocol: str,
                    semantics: str, pair: Optional[Tuple[PeerBlocks, PeerBlocks]] = None) -> bool:
    """`pair`: `model.pair(src, dst)` when the caller already has it."""
    verdict = verdict_at(pair or model.pair(src, dst), dst, port, protocol.upper())
    if verdict.allowed or semantics != "cluster-wide":
        return verdict.allowed
    return any(_network_policy_decides(a, True) and _network_policy_decides(b, False)
               for a, b in ((verdict.egress, verdict.ingress), (verdict.ingress, verdict.egress)))


def model_changes(before: Dict[str, List[Any]], after: Dict[str, List[Any]], semantics: str,
                  extra: Set[Cell]) -> Tuple[Set[Cell], Set[Cell], Set[Cell]]:
    """The cells evaluated (every pod pair, protocol and probe, and `extra`), and those the model
    says are opened and closed."""
    models = KubernetesModel.of(before), KubernetesModel.of(after)
    pods = sorted(f"{m['metadata']['namespace']}/{m['metadata']['name']}" for m in before["Pod"])
    cells = {(s, d, p, port) for s in pods for d in pods if s != d for p in PROTOCOLS for port in PROBES} | extra
    by_pair: Dict[Tuple[str, str], List[Cell]] = {}
    for cell in cells:
        by_pair.setdefault(cell[:2], []).append(cell)
    opened, closed = set(), set()
    for (src, dst), pair_cells in by_pair.items():
        ends = []
        for model in models:
            a, b = (model.pod(*end.split("/")) for end in (src, dst))
            source, destination = Endpoint(a, a.ip), Endpoint(b, b.ip)
            ends.append((model, source, destination, model.pair(source, destination)))
        for cell in pair_cells:
            verdicts = [enforced_allows(model, source, destination, cell[3], cell[2], semantics, pair)
                        for model, source, destination, pair in ends]
            if verdicts == [False, True]:
                opened.add(cell)
            elif verdicts == [True, False]:
                closed.add(cell)
    return cells, opened, closed


def reported(flows: List[Any], cells: Set[Cell]) -> Set[Cell]:
    """The `cells` inside a reported flow."""
    ranges: Dict[Tuple[str, str, str], List[Tuple[int, int]]] = {}
    for f in flows:
        ranges.setdefault((f.source, f.destination, f.protocol), []).append((f.ports[0], f.ports[1]))
    return {cell for cell in cells if any(low <= cell[3] <= high for low, high in ranges.get(cell[:3], ()))}


def check(objects: Dict[str, List[Any]], promoted: Dict[str, List[Any]], key: Tuple[str, str, str],
          semantics: str) -> StagedFlows:
    report = StagedRun(objects, "k8s", semantics, limit=10 ** 6).flows(key)
    assert report.complete and report.pairs_checked == report.pairs
    assert (report.opened, report.closed) == (len(report.opened_listed), len(report.closed_listed))
    listed = report.opened_listed + report.closed_listed
    assert len(set(listed)) == len(listed), "a flow counted twice"
    firsts = {(f.source, f.destination, f.protocol, f.ports[0]) for f in report.opened_listed + report.closed_listed}
    cells, opened, closed = model_changes(objects, promoted, semantics, firsts)
    assert reported(report.opened_listed, cells) == opened
    assert reported(report.closed_listed, cells) == closed
    return report


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(NAMESPACES), policy_spec()), max_size=2),
       st.tuples(st.sampled_from(NAMESPACES), policy_spec()), st.tuples(st.sampled_from(NAMESPACES), policy_spec()),
       st.sampled_from(["kubernetes", "cluster-wide"]))
def test_a_staged_network_policy_changes_what_the_model_says(enforced, chosen, other, semantics):
    policies = [policy(ns, f"p{i}", spec) for i, (ns, spec) in enumerate(enforced)]
    candidate, bystander = policy(chosen[0], "staged", chosen[1]), policy(other[0], "other", other[1])
    objects = xyz_cluster(policies + [staged(candidate), staged(bystander)]).objects
    promoted = xyz_cluster(policies + [candidate, staged(bystander)]).objects
    check(dict(objects), dict(promoted), ("NetworkPolicy", chosen[0], "staged"), semantics)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cnp_support.one_direction_policies(), st.data(), st.sampled_from(["kubernetes", "cluster-wide"]))
def test_a_staged_cluster_network_policy_changes_what_the_model_says(drawn, data, semantics):
    _direction, policies = drawn
    index = data.draw(st.integers(0, len(policies) - 1))
    namespaces, pods = cnp_support.cluster()
    chosen = policies[index]
    name = chosen["metadata"]["name"]
    others = policies[:index] + policies[index + 1:]
    objects = {"Namespace": namespaces, "Pod": pods, "ClusterNetworkPolicy": others + [staged(chosen)]}
    promoted = {"Namespace": namespaces, "Pod": pods, "ClusterNetworkPolicy": others + [chosen]}
    check(objects, promoted, ("ClusterNetworkPolicy", "", name), semantics)


def test_a_deny_all_closes_every_flow_into_its_namespace_and_is_listed_up_to_the_cap():
    deny = policy("x", "deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    objects = xyz_cluster([staged(deny)]).objects
    report = StagedRun(objects, "k8s", "kubernetes", limit=5).flows(("NetworkPolicy", "x", "deny"))
    # Into each of x's 3 pods from the 8 others, on 3 protocols, every port: one flow each.
    assert (report.opened, report.closed) == (0, 3 * 8 * 3)
    assert len(report.closed_listed) == 5 and report.complete
    assert report.note() == "would open 0 and close 72 flows among current pods"
    added = [entry["body"]["fq_name"][-1] for entry in report.objects["added"]]
    assert "k8s-x-deny" in added and report.objects["removed"] == []


def test_a_run_past_its_deadline_says_so_with_what_it_got():
    deny = policy("x", "deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    ticks = iter(range(10 ** 6))  # a tick each time the run looks at the clock: once, then before each class pair
    # x's pods alike to every policy, and y's, and z's: 3 pairs of classes (x->x, y->x, z->x), the third too late
    run = StagedRun(xyz_cluster([staged(deny)]).objects, "k8s", "kubernetes", deadline=2, clock=lambda: next(ticks))
    report = run.flows(("NetworkPolicy", "x", "deny"))
    assert not report.complete and 0 < report.pairs_checked < report.pairs
    assert "too large to compute" in report.note()


def test_the_pairs_are_counted_as_they_are_made():
    both = policy("x", "both", {"podSelector": {"matchLabels": {"pod": "a"}}, "policyTypes": ["Ingress", "Egress"]})
    admin = cnp_support.cnp("admin", "Admin", 1, {"namespaces": {}}, ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}])
    for objects, key in ((xyz_cluster([staged(both)]).objects, ("NetworkPolicy", "x", "both")),
                         ({**xyz_cluster([]).objects, "ClusterNetworkPolicy": [staged(admin)]},
                          ("ClusterNetworkPolicy", "", "admin"))):
        report = StagedRun(objects, "k8s", "kubernetes").flows(key)
        assert report.pairs == report.pairs_checked
    # x/a alone selected, 8 other pods: 8 pairs into it and 8 out; every ordered pair for the tier.
    assert StagedRun(xyz_cluster([staged(both)]).objects, "k8s", "kubernetes").flows(
        ("NetworkPolicy", "x", "both")).pairs == 16
