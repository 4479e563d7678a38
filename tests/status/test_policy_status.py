"""The status book (kube_manager/status/): policies' states from the translator's report and the
reconciler's progress, each change told to the listeners once, with the object's generation."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import pytest

from kube_manager.handlers import KINDS
from kube_manager.handlers.cluster_network_policy import trim_cluster_network_policy
from kube_manager.handlers.network_policy import trim_network_policy
from kube_manager.records.db import PARKED, PENDING, REJECTED, STAGED, SYNCED, Database
from kube_manager.service.dispatcher import EventDispatcher
from kube_manager.translator import ClusterTranslator
from tests.support.builders import allow_from, cluster_policy, namespace, pod, policy

PM = "default-policy-management"
CNP, NP = "clusternetworkpolicies", "networkpolicies"
DENY_ALL_TCP = {"action": "Deny", "from": [{"namespaces": {}}],
                "protocols": [{"tcp": {"destinationPort": {"range": {"start": 1, "end": 65535}}}}]}
BAD_CIDR = {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]}
Heard = Tuple[str, Tuple[str, str], str, List[str], Optional[int]]


class States:
    """A reconciler's published `ObjectStates`: synced unless told otherwise."""

    def __init__(self) -> None:
        self.of: Dict[Tuple[str, Tuple[str, ...]], str] = {}

    def state_of(self, key: Tuple[str, Tuple[str, ...]]) -> str:
        return self.of.get(key, SYNCED)


class Listener:
    def __init__(self) -> None:
        self.heard: List[Heard] = []

    def policy_status_changed(self, kind: str, key: Tuple[str, str], state: str, errors: List[str],
                              generation: Optional[int]) -> None:
        self.heard.append((kind, key, state, errors, generation))


def listed() -> Tuple[Database, EventDispatcher, Listener]:
    db = Database()
    cache = EventDispatcher(db, ClusterTranslator("k8s", "k8s"))
    listener = Listener()
    cache.status.listeners.append(listener)
    for resource in KINDS.names():
        cache.on_event(resource, "LISTED", {"resourceVersion": "1"})
    cache.on_event("namespaces", "ADDED", namespace("a", team="x"))
    cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.1", app="web"))
    return db, cache, listener


def with_generation(manifest: Dict[str, Any], generation: int) -> Dict[str, Any]:
    manifest["metadata"]["generation"] = generation
    return manifest


def test_a_network_policy_is_heard_pending_then_synced_with_its_generation() -> None:
    db, cache, listener = listed()
    cache.on_event(NP, "ADDED", with_generation(policy("a", "web", allow_from("client", "web")), 3))
    assert listener.heard == []  # a new record is pending, as it starts: nothing changed
    states = States()
    cache.status.objects_progressed(states, None)
    assert listener.heard == [("NetworkPolicy", ("a", "web"), SYNCED, [], 3)]
    cache.status.objects_progressed(states, None)  # nothing moved: nothing heard
    assert len(listener.heard) == 1


def test_errors_and_write_errors_are_heard_with_the_state() -> None:
    db, cache, listener = listed()
    cache.on_event(NP, "ADDED", with_generation(policy("a", "bad", BAD_CIDR), 1))
    (kind, key, state, errors, generation), = listener.heard
    assert (kind, key, state, generation) == ("NetworkPolicy", ("a", "bad"), PENDING, 1)
    assert errors and "not a valid CIDR" in errors[0]
    states = States()
    cache.status.objects_progressed(states, None)
    assert listener.heard[-1][2:4] == (REJECTED, errors)  # written, but part of it was refused
    record = db.network_policies[("a", "bad")]
    policy_key = ("firewall-policy", tuple(record.firewall_policy))
    states.of[policy_key] = PARKED
    db.parked[policy_key] = "BadRequest: refused"
    cache.status.objects_progressed(states, [policy_key])
    assert listener.heard[-1][2] == PARKED and listener.heard[-1][3][-1].endswith("BadRequest: refused")


def test_a_cluster_network_policy_rejected_whole_is_heard_once() -> None:
    db, cache, listener = listed()
    cache.on_event(CNP, "ADDED", with_generation(cluster_policy("bad", tier="Middle"), 2))
    (kind, key, state, errors, generation), = listener.heard
    assert (kind, key, state, generation) == ("ClusterNetworkPolicy", ("", "bad"), REJECTED, 2)
    assert errors and "spec.tier" in errors[0]
    cache.status.objects_progressed(States(), None)
    assert len(listener.heard) == 1  # still rejected whole: nothing new


def test_sync_state_follows_the_states_of_its_objects() -> None:
    db, cache, _listener = listed()
    cache.on_event(CNP, "ADDED", cluster_policy("deny-tcp", ingress=[DENY_ALL_TCP]))
    cache.on_event(CNP, "ADDED", cluster_policy("bad", tier="Middle"))
    states = States()
    cache.status.objects_progressed(states, None)
    assert db.cluster_network_policies["deny-tcp"].state == SYNCED
    assert db.cluster_network_policies["bad"].state == REJECTED
    rule = ("firewall-rule", (PM, db.cluster_network_policies["deny-tcp"].rules[0]))
    states.of[rule] = PARKED
    db.parked[rule] = "BadRequest: refused"
    cache.status.objects_progressed(states, [rule])
    record = db.cluster_network_policies["deny-tcp"]
    assert record.state == PARKED and record.write_errors == [
        f"firewall-rule default-policy-management:{rule[1][-1]}: BadRequest: refused"]


@pytest.mark.parametrize("trimmer, manifest", [
    (trim_network_policy, policy("a", "web", allow_from("client", "web"))),
    (trim_cluster_network_policy, cluster_policy("deny-tcp", ingress=[DENY_ALL_TCP])),
])
def test_the_policy_trimmers_keep_the_generation_a_status_reports(trimmer: Any, manifest: Dict[str, Any]) -> None:
    assert trimmer(with_generation(manifest, 7))["metadata"]["generation"] == 7


class Observer:
    """A `PolicyObserver`, as the status publisher is one."""

    def __init__(self) -> None:
        self.heard: List[Tuple[str, str, bool]] = []

    def policy_observed(self, record: Any, settled: bool) -> None:
        self.heard.append((record.name, record.state, settled))

    def policy_forgotten(self, kind: str, key: Tuple[str, str]) -> None:
        self.heard.append((kind, key[1], False))


def test_observers_hear_each_settling_whether_the_reconciler_spoke_and_each_deletion() -> None:
    db, cache, _listener = listed()
    observer = Observer()
    cache.status.observers.append(observer)
    cache.on_event(NP, "ADDED", with_generation(policy("a", "web", allow_from("client", "web")), 1))
    assert observer.heard == [("web", PENDING, False)]  # a flush: not the reconciler's word
    cache.status.objects_progressed(States(), None)
    cache.status.objects_progressed(States(), None)  # nothing moved, yet heard: a new generation needs it
    assert observer.heard[1:] == [("web", SYNCED, True), ("web", SYNCED, True)]
    cache.on_event(NP, "DELETED", policy("a", "web", allow_from("client", "web")))
    assert observer.heard[-1] == ("NetworkPolicy", "web", False)


def staged(manifest: Dict[str, Any], value: str = "true") -> Dict[str, Any]:
    manifest["metadata"]["annotations"] = {"contrail-kube-manager/staged": value}
    return manifest


@pytest.mark.parametrize("resource, manifest, records", [
    (NP, policy("a", "web", allow_from("client", "web")), "network_policies"),
    (CNP, cluster_policy("deny-tcp", ingress=[DENY_ALL_TCP]), "cluster_network_policies"),
])
def test_a_staged_policy_is_staged_until_promoted(resource: str, manifest: Dict[str, Any], records: str) -> None:
    db, cache, listener = listed()
    cache.on_event(resource, "ADDED", with_generation(staged(manifest), 1))
    key = ("a", "web") if resource == NP else "deny-tcp"
    record = getattr(db, records)[key]
    assert (record.state, record.firewall_policy, record.errors) == (STAGED, [], [])
    cache.status.objects_progressed(States(), None)  # the reconciler's word changes nothing
    assert record.state == STAGED and listener.heard[-1][2] == STAGED
    del manifest["metadata"]["annotations"]
    cache.on_event(resource, "MODIFIED", with_generation(manifest, 2))
    assert record.firewall_policy and record.state == PENDING
    cache.status.objects_progressed(States(), None)
    assert record.state == SYNCED


def test_a_misspelt_staged_value_is_an_error_of_an_enforced_policy() -> None:
    db, cache, listener = listed()
    cache.on_event(NP, "ADDED", with_generation(staged(policy("a", "web", allow_from("client", "web")), "yes"), 1))
    record = db.network_policies[("a", "web")]
    assert record.firewall_policy and len(record.errors) == 1 and "'yes'" in record.errors[0]
    assert [e["name"] for e in db.errors] == ["web"]
    cache.status.objects_progressed(States(), None)
    assert record.state == REJECTED  # written, with a part reported: as any policy with errors
