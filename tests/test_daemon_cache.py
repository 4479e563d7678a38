"""KubeCache: watch events -> DB records, translator, change reports to the reconciler."""
from __future__ import annotations

from typing import List

from kube_manager.cache import KubeCache
from kube_manager.db import PENDING, REJECTED, RETRYING, SYNCED, Database
from kube_manager.translator import ClusterTranslator, RefChange
from tests.reconciler_support import allow_from, namespace, pod, policy

PM = "default-policy-management"


class Sink:
    def __init__(self) -> None:
        self.objects: List[tuple] = []
        self.pods: List[tuple] = []
        self.refs: List[RefChange] = []

    def refs_changed(self, changes) -> None:
        self.refs.extend(changes)

    def objects_changed(self, keys) -> None:
        self.objects.extend(keys)

    def pods_changed(self, keys) -> None:
        self.pods.extend(keys)


def make():
    db, sink = Database(), Sink()
    return db, sink, KubeCache(db, ClusterTranslator("k8s", "k8s"), sink)


def listed(cache: KubeCache) -> None:
    for resource in ("namespaces", "pods", "networkpolicies"):
        cache.on_event(resource, "LISTED", {"resourceVersion": "1"})


def test_events_before_the_first_lists_are_held_then_applied_in_dependency_order():
    db, sink, cache = make()
    # a policy with a named port arrives before the pods that resolve it
    named = policy("a", "np", {"podSelector": {"matchLabels": {"app": "web"}},
                               "ingress": [{"ports": [{"port": "http"}]}]})
    cache.on_event("networkpolicies", "ADDED", named)
    cache.on_event("networkpolicies", "LISTED", {"resourceVersion": "3"})
    cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.1", app="web"))
    assert sink.objects == [] and db.pods == {}  # held: the picture is incomplete
    cache.on_event("pods", "LISTED", {"resourceVersion": "3"})
    cache.on_event("namespaces", "ADDED", namespace("a"))
    cache.on_event("namespaces", "LISTED", {"resourceVersion": "3"})
    assert cache.initial_lists_done
    assert db.network_policies[("a", "np")].errors == []  # the named port resolved on the pod
    assert ("firewall-rule", (PM, "k8s-a-ingress-np-0-allow-all-0")) in sink.objects
    assert sink.pods == [("a", "web")]
    assert "namespace=a" in db.pods[("a", "web")].tags and "a" in db.namespaces


def test_records_follow_events_and_the_desired_state_is_the_translators():
    db, sink, cache = make()
    listed(cache)
    cache.on_event("namespaces", "ADDED", namespace("a", team="x"))
    cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.1", app="web"))
    cache.on_event("pods", "ADDED", pod("a", "client", "10.0.0.2", app="client"))
    cache.on_event("networkpolicies", "ADDED", policy("a", "np", allow_from("client", "web")))
    record = db.network_policies[("a", "np")]
    assert record.firewall_policy == [PM, "k8s-a-np"]
    assert record.rules == ["k8s-a-ingress-np-0-podSelector-0-0"]
    assert db.desired is cache.translator.desired()
    assert "app=client" in db.pods[("a", "client")].tags
    sink.pods.clear()
    cache.on_event("pods", "MODIFIED", pod("a", "client", "10.0.0.2", app="other"))
    assert sink.pods == [("a", "client")] and "app=client" not in db.pods[("a", "client")].tags
    cache.on_event("pods", "DELETED", pod("a", "client", "10.0.0.2"))
    cache.on_event("networkpolicies", "DELETED", policy("a", "np", {}))
    assert ("a", "client") not in db.pods and ("a", "np") not in db.network_policies
    assert ("firewall-policy", (PM, "k8s-a-np")) in sink.objects


def test_deny_rules_and_tags_are_mapped_to_their_policy():
    db, sink, cache = make()
    listed(cache)
    cache.on_event("networkpolicies", "ADDED", policy("a", "np", allow_from("client", "web")))
    assert cache.deny_owner((PM, "k8s-a-ingress-np-denyall")) == (PM, "k8s-a-np")
    assert {"app=client", "app=web"} <= set(cache.policy_tags((PM, "k8s-a-np")))
    cache.on_event("networkpolicies", "DELETED", policy("a", "np", {}))
    assert cache.deny_owner((PM, "k8s-a-ingress-np-denyall")) is None
    assert cache.policy_tags((PM, "k8s-a-np")) == ()


def test_an_invalid_policy_is_recorded_rejected_with_its_reason():
    db, sink, cache = make()
    listed(cache)
    cache.on_event("networkpolicies", "ADDED", policy("a", "bad", {
        "podSelector": {"matchExpressions": [{"key": "k", "operator": "Sometimes"}]}}))
    record = db.network_policies[("a", "bad")]
    assert record.state == REJECTED and record.errors and record.firewall_policy == []
    assert any(e["name"] == "bad" for e in db.errors)


def test_policy_states_come_from_the_states_of_their_objects():
    db, sink, cache = make()
    listed(cache)
    cache.on_event("networkpolicies", "ADDED", policy("a", "np", allow_from("client", "web")))
    states = {}

    class Source:
        def state_of(self, key):
            return states.get(key, SYNCED)
    cache.refresh_states(Source())
    assert db.network_policies[("a", "np")].state == SYNCED
    states[("firewall-rule", (PM, "k8s-a-ingress-np-denyall"))] = "pending"
    cache.refresh_states(Source())
    assert db.network_policies[("a", "np")].state == PENDING
    states[("firewall-policy", (PM, "k8s-a-np"))] = RETRYING
    cache.refresh_states(Source())
    assert db.network_policies[("a", "np")].state == RETRYING
