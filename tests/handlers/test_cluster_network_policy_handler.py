"""The ClusterNetworkPolicy kind through the event dispatcher (EventDispatcher) into the real translator:
records (tier, priority, emitted firewall policy and rules, errors, sync state), the desired state,
a rejection confined to the bad one, and records refreshed when another policy of the tier moves
their rules."""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from tests.support.builders import cluster_policy, namespace, pod, policy
from kube_manager.service.dispatcher import EventDispatcher
from kube_manager.records.db import PENDING, REJECTED, Database
from kube_manager.handlers import KINDS
from kube_manager.handlers.cluster_network_policy import trim_cluster_network_policy
from kube_manager.translator import ClusterTranslator
from kube_manager.registry import CLUSTER_NETWORK_POLICIES

CNP_KIND = CLUSTER_NETWORK_POLICIES.kind

PM = "default-policy-management"
CNP = "clusternetworkpolicies"
DENY_ALL_TCP = {"action": "Deny", "from": [{"namespaces": {}}],
                "protocols": [{"tcp": {"destinationPort": {"range": {"start": 1, "end": 65535}}}}]}
PASS_80 = {"action": "Pass", "from": [{"namespaces": {}}], "protocols": [{"tcp": {"destinationPort": {"number": 80}}}]}


def listed() -> Tuple[Database, EventDispatcher]:
    db = Database()
    cache = EventDispatcher(db, ClusterTranslator("k8s", "k8s"))
    for resource in KINDS.names():
        cache.on_event(resource, "LISTED", {"resourceVersion": "1"})
    cache.on_event("namespaces", "ADDED", namespace("a", team="x"))
    cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.1", app="web"))
    return db, cache


def rule_names(db: Database, name: str) -> List[str]:
    return db.cluster_network_policies[name].rules


def test_a_cluster_network_policy_becomes_a_record_and_desired_objects() -> None:
    db, cache = listed()
    cache.on_event(CNP, "ADDED", cluster_policy("deny-tcp", priority=7, ingress=[DENY_ALL_TCP]))
    record = db.cluster_network_policies["deny-tcp"]
    assert (record.tier, record.priority, record.namespace, record.errors) == ("Admin", 7, "", [])
    assert record.firewall_policy == [PM, "k8s--admin"]
    (rule,) = record.rules
    assert rule.startswith("k8s--admin-")
    assert (PM, "k8s--admin") in db.desired["firewall-policy"]
    assert all((PM, rule) in db.desired["firewall-rule"] for rule in record.rules)
    assert record.state == PENDING


def test_another_policy_of_the_tier_refreshes_the_rules_it_changed() -> None:
    db, cache = listed()
    cache.on_event(CNP, "ADDED", cluster_policy("deny-tcp", priority=10, ingress=[DENY_ALL_TCP]))
    (deny,) = rule_names(db, "deny-tcp")
    cache.on_event(CNP, "ADDED", cluster_policy("pass-web", priority=5, ingress=[PASS_80]))
    # The Pass comes first in the block, continued by the lower tiers; the Deny is the same rule.
    assert rule_names(db, "deny-tcp") == [deny]
    passed = rule_names(db, "pass-web")
    assert passed and all((PM, rule) in db.desired["firewall-rule"] for rule in passed)
    cache.on_event(CNP, "DELETED", cluster_policy("pass-web"))
    assert "pass-web" not in db.cluster_network_policies
    assert rule_names(db, "deny-tcp") == [deny]
    assert not [rule for rule in passed if (PM, rule) in db.desired["firewall-rule"]]


def test_the_change_report_names_the_policies_of_the_re_rendered_tier_only() -> None:
    db, cache = listed()
    cache.on_event(CNP, "ADDED", cluster_policy("admin-a", priority=10, ingress=[DENY_ALL_TCP]))
    cache.on_event(CNP, "ADDED", cluster_policy("admin-b", priority=20, ingress=[DENY_ALL_TCP]))
    cache.on_event(CNP, "ADDED", cluster_policy("base-c", tier="Baseline", ingress=[DENY_ALL_TCP]))
    cache.translator.upsert("ClusterNetworkPolicy", cluster_policy("admin-b", priority=30, ingress=[DENY_ALL_TCP]))
    assert cache.translator.flush().policies.get(CNP_KIND, ()) == (("", "admin-a"), ("", "admin-b"))
    cache.translator.delete("ClusterNetworkPolicy", "", "base-c")
    assert cache.translator.flush().policies.get(CNP_KIND, ()) == (("", "base-c"),)  # gone, its tier re-rendered
    cache.translator.upsert("NetworkPolicy", policy("a", "np", {"podSelector": {}, "policyTypes": ["Ingress"]}))
    assert cache.translator.flush().policies.get(CNP_KIND, ()) == ()


def test_a_networkpolicy_event_reads_no_cluster_network_policy_status() -> None:
    """The records refreshed after a flush are those of re-rendered tiers: a NetworkPolicy event
    costs nothing per ClusterNetworkPolicy."""
    db, cache = listed()
    for n in range(3):
        cache.on_event(CNP, "ADDED", cluster_policy(f"deny-{n}", priority=n, ingress=[DENY_ALL_TCP]))
    asked: List[str] = []
    status = cache.translator.status_of

    def counting(kind: str, namespace: str, name: str) -> Any:
        if kind == "ClusterNetworkPolicy":
            asked.append(name)
        return status(kind, namespace, name)
    cache.translator.status_of = counting  # type: ignore[method-assign]
    cache.on_event("networkpolicies", "ADDED", policy("a", "np", {"podSelector": {}, "policyTypes": ["Ingress"]}))
    assert ("a", "np") in db.network_policies and asked == []
    cache.on_event(CNP, "MODIFIED", cluster_policy("deny-1", priority=5, ingress=[DENY_ALL_TCP]))
    assert sorted(asked) == ["deny-0", "deny-1", "deny-2"]  # the whole Admin tier, once each


def test_a_malformed_one_is_rejected_alone_and_shown() -> None:
    db, cache = listed()
    cache.on_event(CNP, "ADDED", cluster_policy("bad-tier", tier="Middle"))
    nameless = cluster_policy("x", ingress=[DENY_ALL_TCP])
    nameless["metadata"]["name"] = "Not_A_Name"
    cache.on_event(CNP, "ADDED", nameless)
    cache.on_event(CNP, "ADDED", cluster_policy("good", ingress=[DENY_ALL_TCP]))
    bad = db.cluster_network_policies["bad-tier"]
    assert bad.state == REJECTED and bad.firewall_policy == [] and bad.rules == []
    assert "Middle" in bad.errors[0]
    refused = db.cluster_network_policies["Not_A_Name"]
    assert refused.state == REJECTED and refused.errors and refused.errors[0].startswith("metadata.name")
    assert {(e["kind"], e["name"]) for e in db.errors} == {
        ("ClusterNetworkPolicy", "bad-tier"), ("ClusterNetworkPolicy", "Not_A_Name")}
    assert db.cluster_network_policies["good"].rules and db.cluster_network_policies["good"].errors == []
    # Fixed: no longer rejected, its error gone.
    cache.on_event(CNP, "MODIFIED", cluster_policy("bad-tier", tier="Baseline", ingress=[DENY_ALL_TCP]))
    fixed = db.cluster_network_policies["bad-tier"]
    assert fixed.state == PENDING and fixed.errors == [] and fixed.firewall_policy == [PM, "k8s--baseline"]
    assert {e["name"] for e in db.errors} == {"Not_A_Name"}


def test_the_trimmer_keeps_the_spec_and_drops_the_status() -> None:
    manifest: Dict[str, Any] = {**cluster_policy("a", ingress=[DENY_ALL_TCP]),
                                "status": {"conditions": [{"type": "Accepted"}]}}
    manifest["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    trimmed = trim_cluster_network_policy(manifest)
    assert trimmed["spec"] == manifest["spec"] and "status" not in trimmed
    assert set(trimmed["metadata"]) == {"name", "uid"}
