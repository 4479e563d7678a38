"""SPEC 7 "one object never stops the others", through the daemon's own pieces: the watcher's
trimming, EventDispatcher, the incremental ClusterTranslator, a recording sink and the introspect JSON.

A poisoned object, in the initial list or in a watch event, is rejected with its reason (shown as
`rejected` on the introspect page, never `pending`) and every other object still converges: the
lists are marked done, the flush runs, the sink hears of the valid policies' objects.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, List, Tuple

from hypothesis import given

from introspect.app import create_app
from kube_manager.service.dispatcher import EventDispatcher
from kube_manager.records.db import PENDING, REJECTED, SYNCED, Database
from kube_manager.handlers import KINDS
from kube_manager.translator import ClusterTranslator
from tests.support.poison_support import (CLEAN, POISONS, VALID_KEYS, VALID_NAMESPACES, VALID_PODS, VALID_POLICIES,
                            assert_others_converge, fuzz, identify)
from tests.support.builders import policy
from tests.support.introspect_support import call

PM = "default-policy-management"
RESOURCE = {"Namespace": "namespaces", "Pod": "pods", "NetworkPolicy": "networkpolicies"}
POISONED_TYPES = policy("a", "bad-types", {"podSelector": {}, "policyTypes": [["Ingress"]]})
BAD_TYPES_REASON = "spec.policyTypes[0]: expected a string, got list; the policy is rejected whole"


class Sink:
    def __init__(self) -> None:
        self.objects: List[Tuple[str, Tuple[str, ...]]] = []

    def initial_lists_in(self) -> None:
        pass

    def refs_changed(self, changes) -> None:
        pass

    def objects_changed(self, keys) -> None:
        self.objects.extend(keys)

    def pods_changed(self, keys) -> None:
        pass


class AllSynced:
    def state_of(self, key) -> str:
        return SYNCED


def make() -> Tuple[Database, Sink, EventDispatcher]:
    db, sink = Database(), Sink()
    return db, sink, EventDispatcher(db, ClusterTranslator("k8s", "k8s"), sink)


def deliver(cache: EventDispatcher, kind: str, manifest: Any, event: str = "ADDED") -> None:
    """As the watcher delivers an object: trimmed to what the translator reads."""
    resource = RESOURCE[kind]
    cache.on_event(resource, event, KINDS[resource].trimmer(manifest))


def initial_lists(cache: EventDispatcher, extra: Tuple[Tuple[str, Any], ...] = ()) -> None:
    """The valid cluster's lists with `extra` objects held among them (before the valid policies)."""
    for manifest in VALID_NAMESPACES:
        deliver(cache, "Namespace", manifest)
    for manifest in VALID_PODS:
        deliver(cache, "Pod", manifest)
    for kind, manifest in extra:
        deliver(cache, kind, manifest)
    for manifest in VALID_POLICIES:
        deliver(cache, "NetworkPolicy", manifest)
    for resource in KINDS.names():
        cache.on_event(resource, "LISTED", {"resourceVersion": "1"})


def introspect_policies(db: Database) -> Dict[str, Dict[str, Any]]:
    reply = call(create_app(db), "/Snh_NetworkPolicyDatabaseList?format=json")
    return {p["name"]: p for p in reply.json()["network_policies"]}


def assert_valid_policies_written(db: Database, sink: Sink) -> None:
    for manifest in VALID_POLICIES:
        namespace, name = manifest["metadata"]["namespace"], manifest["metadata"]["name"]
        record = db.network_policies[(namespace, name)]
        assert record.errors == [] and record.firewall_policy == [PM, f"k8s-{namespace}-{name}"]
        assert ("firewall-policy", (PM, f"k8s-{namespace}-{name}")) in sink.objects


def test_a_poisoned_policy_in_the_initial_list_is_rejected_and_the_others_converge():
    db, sink, cache = make()
    initial_lists(cache, (("NetworkPolicy", POISONED_TYPES),))
    assert cache.lists_applied.is_set()
    assert_valid_policies_written(db, sink)
    cache.status.objects_progressed(AllSynced(), None)
    shown = introspect_policies(db)
    assert shown["bad-types"]["state"] == REJECTED and shown["bad-types"]["errors"] == [BAD_TYPES_REASON]
    assert {shown[m["metadata"]["name"]]["state"] for m in VALID_POLICIES} == {SYNCED}
    assert {"kind": "NetworkPolicy", "namespace": "a", "name": "bad-types", "reason": BAD_TYPES_REASON} in db.errors


def test_a_poisoned_watch_event_is_rejected_and_the_next_events_still_apply():
    db, sink, cache = make()
    initial_lists(cache)
    deliver(cache, "NetworkPolicy", POISONED_TYPES)
    deliver(cache, "Pod", {"metadata": {"name": "odd", "namespace": "a", "labels": ["app=web"]}})
    late = policy("b", "late", {"podSelector": {}, "ingress": [{"ports": [{"port": 8080}]}]})
    deliver(cache, "NetworkPolicy", late)
    assert ("firewall-policy", (PM, "k8s-b-late")) in sink.objects
    assert db.network_policies[("b", "late")].errors == []
    assert db.network_policies[("a", "bad-types")].state == REJECTED
    assert ("Pod", "a", "odd") in {(e["kind"], e["namespace"], e["name"]) for e in db.errors}
    deliver(cache, "NetworkPolicy", policy("a", "bad-types", {"podSelector": {}, "policyTypes": ["Ingress"]}),
            "MODIFIED")  # fixed: accepted, its rejection gone
    assert db.network_policies[("a", "bad-types")].errors == []
    assert db.network_policies[("a", "bad-types")].state == PENDING
    assert ("a", "bad-types") not in {(e["namespace"], e["name"]) for e in db.errors}


def test_an_unexpected_error_handling_one_object_rejects_it_with_the_exception(monkeypatch, caplog):
    db, sink, cache = make()
    original = cache.translator.upsert

    def failing(kind, manifest):
        if kind == "NetworkPolicy" and manifest["metadata"]["name"] == "boom":
            raise ZeroDivisionError("a bug")
        return original(kind, manifest)
    monkeypatch.setattr(cache.translator, "upsert", failing)
    boom = policy("a", "boom", {"podSelector": {}})
    with caplog.at_level(logging.WARNING):
        initial_lists(cache, (("NetworkPolicy", boom),))  # in the initial list
        deliver(cache, "NetworkPolicy", policy("b", "boom", {"podSelector": {}}))  # in a watch event
    assert cache.lists_applied.is_set()
    assert_valid_policies_written(db, sink)
    cache.status.objects_progressed(AllSynced(), None)
    for key in (("a", "boom"), ("b", "boom")):
        record = db.network_policies[key]
        assert record.state == REJECTED and record.errors == ["internal error: ZeroDivisionError: a bug"]
    logged = [r for r in caplog.records if getattr(r, "kv_fields", {}).get("name") == "boom"]
    assert [(r.kv_fields["kind"], r.kv_fields["namespace"]) for r in logged] == [("NetworkPolicy", "a"),
                                                                                  ("NetworkPolicy", "b")]
    assert all(r.exc_info is not None for r in logged)




@fuzz(250)
@given(POISONS)
def test_fuzz_no_poisoned_object_raises_in_the_daemon_path_and_the_others_converge(poison):
    kind, manifest = poison
    trimmed = KINDS[RESOURCE[kind]].trimmer(manifest)
    for in_initial_list in (True, False):
        db, sink, cache = make()
        if in_initial_list:
            initial_lists(cache, ((kind, manifest),))
        else:
            initial_lists(cache)
            deliver(cache, kind, manifest)
        assert cache.lists_applied.is_set()
        result = cache.translator.translation().to_dict()
        assert_others_converge(kind, trimmed, result, CLEAN)
        key = identify(kind, trimmed)
        if key in VALID_KEYS:
            continue
        assert_valid_policies_written(db, sink)
        if kind == "NetworkPolicy" and any((e["kind"], e["namespace"], e["name"]) == key for e in db.errors):
            cache.status.objects_progressed(AllSynced(), None)
            record = db.network_policies.get(key[1:])
            assert record is not None and record.errors and record.state == REJECTED
