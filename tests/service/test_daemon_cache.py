"""EventDispatcher: watch events -> DB records, translator, change reports to the reconciler."""
from __future__ import annotations

from typing import List

import pytest

from kube_manager.service.dispatcher import EventDispatcher
from kube_manager.records.db import PENDING, REJECTED, RETRYING, SYNCED, Database
from kube_manager.handlers import KINDS
from kube_manager.translator import ClusterTranslator, RefChange
from tests.support.builders import HTTP_8080, allow_from, cluster_policy, cnp_rule, namespace, namespace_named, pod, policy

PM = "default-policy-management"


class Sink:
    def __init__(self) -> None:
        self.objects: List[tuple] = []
        self.pods: List[tuple] = []
        self.refs: List[RefChange] = []

    def initial_lists_in(self) -> None:
        pass

    def refs_changed(self, changes) -> None:
        self.refs.extend(changes)

    def objects_changed(self, keys) -> None:
        self.objects.extend(keys)

    def pods_changed(self, keys) -> None:
        self.pods.extend(keys)


def make():
    db, sink = Database(), Sink()
    return db, sink, EventDispatcher(db, ClusterTranslator("k8s", "k8s"), sink)


def listed(cache: EventDispatcher) -> None:
    for resource in KINDS.names():
        cache.on_event(resource, "LISTED", {"resourceVersion": "1"})


def test_events_before_the_first_lists_are_held_then_applied_in_dependency_order():
    db, sink, cache = make()
    # a policy with a named port arrives before the pods that resolve it
    named = policy("a", "np", {"podSelector": {"matchLabels": {"app": "web"}},
                               "ingress": [{"ports": [{"port": "http"}]}]})
    cache.on_event("networkpolicies", "ADDED", named)
    cache.on_event("networkpolicies", "LISTED", {"resourceVersion": "3"})
    cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.1", app="web", ports=HTTP_8080))
    assert sink.objects == [] and db.pods == {}  # held: the picture is incomplete
    cache.on_event("pods", "LISTED", {"resourceVersion": "3"})
    cache.on_event("clusternetworkpolicies", "LISTED", {"resourceVersion": "3"})
    cache.on_event("namespaces", "ADDED", namespace("a"))
    assert not cache.lists_applied.is_set() and db.namespaces == {}  # held
    cache.on_event("namespaces", "LISTED", {"resourceVersion": "3"})
    assert cache.lists_applied.is_set()
    assert db.network_policies[("a", "np")].errors == []  # the named port resolved on the pod
    assert ("firewall-rule", (PM, "k8s-a-ingress-np-0-allow-all-0")) in sink.objects
    assert sink.pods == [("a", "web")]
    assert "namespace=a" in db.pods[("a", "web")].tags and "a" in db.namespaces


def test_the_sink_hears_the_lists_are_in_before_they_are_applied_and_what_comes_meanwhile_joins_them():
    """The reconciler sends its first listings when it hears the lists are in, and may yield
    meanwhile: events delivered then (another watcher's) are held and applied with the others, in
    order, once; the lists count as done only once applied."""
    db, sink, cache = make()
    heard = []

    def lists_in() -> None:
        heard.append((cache.lists_applied.is_set(), dict(db.namespaces), list(sink.objects)))
        cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.1", app="web"))  # as if another greenlet ran
        cache.on_event("pods", "MODIFIED", pod("a", "web", "10.0.0.1", app="db"))
        cache.on_event("pods", "RELISTED", {"resourceVersion": "4"})
        heard.append((cache.lists_applied.is_set(), dict(db.pods), list(sink.objects)))
    sink.initial_lists_in = lists_in  # type: ignore[method-assign]
    cache.on_event("namespaces", "ADDED", namespace("a"))
    cache.on_event("networkpolicies", "ADDED", policy("a", "np", {"podSelector": {"matchLabels": {"app": "db"}}}))
    listed(cache)
    assert heard == [(False, {}, []), (False, {}, [])]
    assert cache.lists_applied.is_set() and "a" in db.namespaces
    assert "app=db" in db.pods[("a", "web")].tags  # the later event applied after the earlier one
    assert len(sink.objects) == len(set(sink.objects))  # applied and reported once


def test_held_events_are_kept_packed_and_applied_as_delivered_even_one_json_cannot_hold():
    """Memory (issue 12): the whole cluster waits here at start; it waits as compact JSON, each
    object decoded when applied, so what the watcher does with its copy afterwards changes nothing.
    An object JSON cannot hold (an int key: never from a watch) is held as it is, and refused as
    any invalid object is, without stopping the others."""
    db, sink, cache = make()
    web = pod("a", "web", "10.0.0.1", app="web", ports=HTTP_8080)
    cache.on_event("pods", "ADDED", web)
    odd = pod("a", "odd", "10.0.0.2", app="odd")
    odd["metadata"]["labels"] = {1: "not a string key"}
    cache.on_event("pods", "ADDED", odd)
    assert isinstance(cache._held["pods"][0][1], bytes) and cache._held["pods"][1][1] is odd
    web["metadata"]["labels"]["app"] = "changed after delivery"
    listed(cache)
    assert db.pods[("a", "web")].labels == {"app": "web"}
    assert [e["name"] for e in db.errors if e["kind"] == "Pod"] == ["odd"]


def test_records_follow_events_and_the_desired_state_is_the_translators():
    db, sink, cache = make()
    listed(cache)
    cache.on_event("namespaces", "ADDED", namespace("a", team="x"))
    cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.1", app="web", ports=HTTP_8080))
    cache.on_event("pods", "ADDED", pod("a", "client", "10.0.0.2", app="client", ports=HTTP_8080))
    cache.on_event("networkpolicies", "ADDED", policy("a", "np", allow_from("client", "web")))
    record = db.network_policies[("a", "np")]
    assert record.firewall_policy == [PM, "k8s-a-np"]
    assert record.rules == ["k8s-a-ingress-np-0-podSelector-0-0", "k8s-a-ingress-np-denyall"]  # SPEC 10
    assert db.desired is cache.translator.desired()  # the live view, never a copy
    assert "app=client" in db.pods[("a", "client")].tags
    sink.pods.clear()
    cache.on_event("pods", "MODIFIED", pod("a", "client", "10.0.0.2", app="other", ports=HTTP_8080))
    assert sink.pods == [("a", "client")] and "app=client" not in db.pods[("a", "client")].tags
    cache.on_event("pods", "DELETED", pod("a", "client", "10.0.0.2", ports=HTTP_8080))
    cache.on_event("networkpolicies", "DELETED", policy("a", "np", {}))
    assert ("a", "client") not in db.pods and ("a", "np") not in db.network_policies
    assert ("firewall-policy", (PM, "k8s-a-np")) in sink.objects


def test_the_published_desired_state_maps_deny_rules_and_tags_to_their_policy():
    db, sink, cache = make()
    listed(cache)
    desired = cache.translator.published()
    assert db.desired is desired.objects
    cache.on_event("networkpolicies", "ADDED", policy("a", "np", allow_from("client", "web")))
    assert desired.deny_owner((PM, "k8s-a-ingress-np-denyall")) == (PM, "k8s-a-np")
    assert {"app=client", "app=web"} <= set(desired.policy_tags((PM, "k8s-a-np")))
    cache.on_event("networkpolicies", "DELETED", policy("a", "np", {}))
    assert desired.deny_owner((PM, "k8s-a-ingress-np-denyall")) is None
    assert desired.policy_tags((PM, "k8s-a-np")) == ()


def test_a_name_handed_over_in_one_flush_keeps_its_new_owner_in_the_published_state():
    """a/b-c and a-b/c both render as k8s-a-b-c (SPEC 4): while both exist they are suffixed;
    when one leaves, the other takes the plain names, and the maps must name it, not the leaver."""
    db, sink, cache = make()
    listed(cache)
    desired = cache.translator.published()
    spec = allow_from("client", "web")
    cache.on_event("networkpolicies", "ADDED", policy("a", "b-c", spec))
    cache.on_event("networkpolicies", "ADDED", policy("a-b", "c", spec))
    survivor = db.network_policies[("a-b", "c")]
    assert survivor.firewall_policy[-1] != "k8s-a-b-c"  # suffixed while the names collide
    cache.on_event("networkpolicies", "DELETED", policy("a", "b-c", spec))
    assert survivor.firewall_policy == [PM, "k8s-a-b-c"]
    deny = next(fq for fq in (tuple(survivor.firewall_policy[:-1]) + (rule,) for rule in survivor.rules)
                if fq[-1].endswith("denyall"))
    assert desired.deny_owner(deny) == (PM, "k8s-a-b-c")
    assert {"app=client", "app=web"} <= set(desired.policy_tags((PM, "k8s-a-b-c")))


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
    cache.status.objects_progressed(Source(), None)
    assert db.network_policies[("a", "np")].state == SYNCED
    states[("firewall-rule", (PM, "k8s-a-ingress-np-denyall"))] = "pending"
    cache.status.objects_progressed(Source(), None)
    assert db.network_policies[("a", "np")].state == PENDING
    states[("firewall-policy", (PM, "k8s-a-np"))] = RETRYING
    cache.status.objects_progressed(Source(), None)
    assert db.network_policies[("a", "np")].state == RETRYING


class Reconciling(Sink):
    """A sink that, like the reconciler, pushes the sync states after each report it hears
    (every object synced)."""

    def __init__(self, db: Database) -> None:
        super().__init__()
        self.cache = EventDispatcher(db, ClusterTranslator("k8s", "k8s"), self)

    def objects_changed(self, keys) -> None:
        super().objects_changed(keys)
        self.cache.status.objects_progressed(self, list(keys))

    def state_of(self, key):
        return SYNCED


class Observer:
    """A status observer (the publisher's place): each observation's generation, and whether it
    came from the reconciler's push of sync states."""

    def __init__(self) -> None:
        self.heard: List[tuple] = []

    def policy_observed(self, record, settled: bool) -> None:
        self.heard.append((record.name, record.generation, settled))

    def policy_forgotten(self, kind, key) -> None:
        pass


@pytest.mark.parametrize("change", [
    {"priority": 30},  # the tier blocks' rules stay as they were: no object changes
    {"ingress": [cnp_rule("Accept", namespace_named("c"))]},
])
def test_a_new_generation_of_a_cluster_network_policy_is_settled_even_with_no_object_changed(change):
    db = Database()
    sink = Reconciling(db)
    observer = Observer()
    sink.cache.status.observers.append(observer)
    listed(sink.cache)
    sink.cache.on_event("namespaces", "ADDED", namespace("a"))
    manifest = cluster_policy("guard", "Admin", 20, namespace_named("a"), ingress=[cnp_rule("Accept", namespace_named("b"))])
    sink.cache.on_event("clusternetworkpolicies", "ADDED", dict(manifest, metadata=dict(manifest["metadata"], generation=1)))
    assert ("guard", 1, True) in observer.heard
    changed = dict(manifest, metadata=dict(manifest["metadata"], generation=2), spec={**manifest["spec"], **change})
    sink.cache.on_event("clusternetworkpolicies", "MODIFIED", changed)
    assert observer.heard[-1] == ("guard", 2, True)  # the reconciler's word on generation 2: Programmed


_BY_KIND = ("upsert", "delete", "reject", "status_of")  # the translator's calls whose first argument is a kind


class Recorder:
    """The translator with a log of the calls made to it (names, with the kind of those given one)."""

    def __init__(self, translator: ClusterTranslator) -> None:
        self._translator = translator
        self.calls: List[str] = []

    def __getattr__(self, name):
        attr = getattr(self._translator, name)
        if not callable(attr):
            return attr

        def recorded(*args, **kwargs):
            self.calls.append(f"{name} {args[0]}" if name in _BY_KIND else name)
            return attr(*args, **kwargs)
        return recorded


def test_the_initial_lists_are_translated_in_one_flush_then_read_once_each():
    db, sink = Database(), Sink()
    recorder = Recorder(ClusterTranslator("k8s", "k8s"))
    cache = EventDispatcher(db, recorder, sink)  # type: ignore[arg-type]
    cache.on_event("namespaces", "ADDED", namespace("a"))
    for i in range(5):
        cache.on_event("pods", "ADDED", pod("a", f"web-{i}", f"10.0.0.{i + 1}", app="web", ports=HTTP_8080))
        cache.on_event("networkpolicies", "ADDED", policy("a", f"np-{i}", allow_from("client", "web", 80 + i)))
    recorder.calls.clear()
    listed(cache)
    first_read = recorder.calls.index("flush")
    # (each pod record takes the translator's labels as it gives them: `pod_labels`, no flush)
    assert set(recorder.calls[:first_read]) == {"upsert Namespace", "upsert Pod", "pod_labels", "upsert NetworkPolicy"}
    assert recorder.calls.count("flush") == 1 and recorder.calls.count("errors") == 1
    assert recorder.calls[first_read:].count("status_of NetworkPolicy") == 5
    assert all(db.network_policies[("a", f"np-{i}")].rules for i in range(5))
    assert all("app=web" in db.pods[("a", f"web-{i}")].tags for i in range(5))
    # from then on, the errors are read again only when some may have come or gone
    recorder.calls.clear()
    cache.on_event("pods", "MODIFIED", pod("a", "web-0", "10.0.0.1", app="client", ports=HTTP_8080))
    cache.on_event("networkpolicies", "ADDED", policy("a", "np-9", allow_from("client", "web", 99)))
    cache.on_event("networkpolicies", "DELETED", policy("a", "np-1", {}))
    assert "errors" not in recorder.calls
    cache.on_event("networkpolicies", "ADDED", policy("a", "bad", {"podSelector": {"matchLabels": {"x": "y"}},
                                                                   "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]}))
    assert recorder.calls.count("errors") == 1
    assert db.errors == cache.translator.errors() and any(e["name"] == "bad" for e in db.errors)


def test_rejected_pods_are_listed_until_fixed_or_deleted():
    db, sink, cache = make()
    listed(cache)
    cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.300", app="web", ports=HTTP_8080))
    assert [(e["kind"], e["name"]) for e in db.errors] == [("Pod", "web")]
    cache.on_event("pods", "MODIFIED", pod("a", "web", "10.0.0.3", app="web", ports=HTTP_8080))
    assert db.errors == [] and "app=web" not in db.pods[("a", "web")].tags
    cache.on_event("pods", "ADDED", pod("a", "other", "not-an-ip", ports=HTTP_8080))
    cache.on_event("networkpolicies", "ADDED", policy("a", "bad", {
        "podSelector": {"matchExpressions": [{"key": "k", "operator": "Sometimes"}]}}))
    assert db.errors == cache.translator.errors() and len(db.errors) == 2
    cache.on_event("pods", "DELETED", pod("a", "other", "not-an-ip", ports=HTTP_8080))
    cache.on_event("networkpolicies", "DELETED", policy("a", "bad", {}))
    assert db.errors == []


def test_a_recreated_pod_keeps_its_tags_when_they_do_not_change():
    db, sink, cache = make()
    listed(cache)
    cache.on_event("networkpolicies", "ADDED", policy("a", "np", allow_from("client", "web")))
    cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.1", app="web", ports=HTTP_8080))
    tags = list(db.pods[("a", "web")].tags)
    recreated = pod("a", "web", "10.0.0.2", app="web", ports=HTTP_8080)
    recreated["metadata"]["uid"] = "another-uid"
    cache.on_event("pods", "MODIFIED", recreated)
    assert db.pods[("a", "web")].uid == "another-uid" and db.pods[("a", "web")].tags == tags


def test_pod_records_share_the_translators_labels_once_flushed_and_a_rejected_pod_keeps_its_own():
    """Memory (issue 12): a pod's labels are held once, by the translator, not again by its record."""
    db, sink, cache = make()
    listed(cache)
    cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.1", app="web"))
    cache.on_event("pods", "ADDED", pod("a", "bad", "10.0.0.300", app="bad"))
    web, bad = db.pods[("a", "web")], db.pods[("a", "bad")]
    assert web.labels == {"app": "web"} and web.labels is cache.translator.pod_labels("a", "web")
    assert bad.labels == {"app": "bad"} and cache.translator.pod_labels("a", "bad") is None
    cache.on_event("pods", "MODIFIED", pod("a", "web", "10.0.0.1", app="other"))
    assert db.pods[("a", "web")].labels == {"app": "other"}
    assert db.pods[("a", "web")].labels is cache.translator.pod_labels("a", "web")
