"""SPEC 14's pair rules of NetworkPolicies whose services meet none of the other direction's: such
a policy's allows are not read at all (a cluster whose egress is DNS and whose ingress is its apps'
ports has no pair to find), and a policy that comes later with a meeting service brings their
pairs in, as a translation from scratch has them. Verdicts are checked against the independent
Kubernetes model (`kube_manager/explain/k8s_semantics.py`, through `semantics_support.wrong`)."""
from __future__ import annotations

from typing import Any, Dict, List

import pytest

from kube_manager.offline.manifests import Manifests
from kube_manager.translator import ClusterTranslator, translate
from kube_manager.translator.exact.allows import AllowItems
from tests.support.builders import namespace, pod, policy
from tests.support.semantics_support import wrong

PROBES = [("UDP", 53), ("TCP", 80), ("TCP", 53)]
BOTH = ["Ingress", "Egress"]


def dns_client(ns: str) -> Dict[str, Any]:
    """`ns`'s pods: DNS out to kube-system, port 80 in from anywhere."""
    return policy(ns, "app", {"podSelector": {}, "policyTypes": BOTH,
                              "egress": [{"to": [{"namespaceSelector": {}}], "ports": [{"protocol": "UDP", "port": 53}]}],
                              "ingress": [{"ports": [{"protocol": "TCP", "port": 80}]}]})


DNS_SERVER = policy("kube-system", "dns", {"podSelector": {}, "policyTypes": ["Ingress"],
                                           "ingress": [{"ports": [{"protocol": "UDP", "port": 53}]}]})


def cluster(with_dns_server: bool) -> Manifests:
    namespaces = ["a", "b", "kube-system"]
    return Manifests({
        "Namespace": [namespace(ns) for ns in namespaces],
        "Pod": [pod(ns, "p", f"10.2.0.{i + 1}", {"app": ns}) for i, ns in enumerate(namespaces)],
        "NetworkPolicy": [dns_client("a"), dns_client("b")] + ([DNS_SERVER] if with_dns_server else [])})


def pair_rules(translation: Dict[str, Any]) -> List[Dict[str, Any]]:
    return [rule for rule in translation["firewall_rules"] if "--pair-" in rule["fq_name"][1]]


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """The policies whose allows are read as items, as they are read."""
    seen: List[str] = []
    split = AllowItems.split

    def counting(self: AllowItems, parsed: Any) -> Any:
        seen.append(f"{parsed.namespace}/{parsed.name}")
        return split(self, parsed)
    monkeypatch.setattr(AllowItems, "split", counting)
    return seen


def loaded(manifests: Manifests) -> ClusterTranslator:
    translator = ClusterTranslator(semantics="kubernetes")
    for kind, objects in manifests.objects.items():
        for manifest in objects:
            translator.upsert(kind, manifest)
    translator.flush()
    return translator


def test_policies_whose_services_meet_nothing_across_are_not_read(reads: List[str]) -> None:
    found = translate(cluster(False).objects, semantics="kubernetes").to_dict()
    assert reads == [] and pair_rules(found) == []  # UDP 53 out meets no ingress (TCP 80)
    assert not wrong(cluster(False), "kubernetes", PROBES)


def test_a_policy_meeting_their_services_brings_their_pairs(reads: List[str]) -> None:
    translator = loaded(cluster(False))
    assert reads == []
    translator.upsert("NetworkPolicy", DNS_SERVER)
    translator.flush()
    assert sorted(reads) == ["a/app", "b/app", "kube-system/dns"]  # the event woke a and b
    found = translator.translation().to_dict()
    assert len(pair_rules(found)) == 2  # a and b each to kube-system on UDP 53
    assert found == translate(cluster(True).objects, semantics="kubernetes").to_dict()
    assert not wrong(cluster(True), "kubernetes", PROBES)
    translator.delete("NetworkPolicy", "kube-system", "dns")
    translator.flush()
    assert translator.translation().to_dict() == translate(cluster(False).objects, semantics="kubernetes").to_dict()


def test_a_policy_whose_own_allows_meet_is_read(reads: List[str]) -> None:
    """Its egress and its ingress meet each other: a pair between its own pods."""
    own = policy("a", "self", {"podSelector": {}, "policyTypes": BOTH,
                               "egress": [{"ports": [{"protocol": "TCP", "port": 80}]}],
                               "ingress": [{"ports": [{"protocol": "TCP", "port": 80}]}]})
    manifests = Manifests({"Namespace": [namespace("a")], "Pod": [pod("a", "p", "10.2.0.1"), pod("a", "q", "10.2.0.2")],
                           "NetworkPolicy": [own]})
    found = translate(manifests.objects, semantics="kubernetes").to_dict()
    assert reads == ["a/self"] and len(pair_rules(found)) == 1
    assert not wrong(manifests, "kubernetes", PROBES)
