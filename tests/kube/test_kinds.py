"""The kind registry (issue 9): one record per kind; every gap fails loudly at start-up, never a default."""
from __future__ import annotations

from typing import Any, Dict, List

import pytest

from kube_manager.service.dispatcher import EventDispatcher
from kube_manager.records.db import Database
from kube_manager.handlers import KINDS
from kube_manager.handlers.base import Handler
from kube_manager.kube.client_factory import api_client_for_url
from kube_manager.kube.kinds import Kind, KindError, KindRegistry
from kube_manager.registry import REACHES_CLUSTER, WATCH, KindEntry, Kinds, Resource
from kube_manager.kube.watcher import make_watchers
from kube_manager.translator import ClusterTranslator
from tests.support.builders import namespace, pod
from tests.support.toy_kind import TOY, TOYS, kinds_with_toys

# A kind that is not registered: ClusterNetworkPolicy's predecessor.
ADMIN_POLICIES = Resource("adminnetworkpolicies", "AdminNetworkPolicy", "policy.networking.k8s.io/v1alpha1",
                          namespaced=False)
UNUSED_URL = "http://127.0.0.1:1"  # never connected to: the watchers are built, not run


def lister(api):
    return lambda **kwargs: None


def trimmer(obj):
    return obj


def validator(obj):
    return None


class Recording(Handler):
    """A handler of a new kind that records what it was given."""

    kind = ADMIN_POLICIES.kind

    def __init__(self, context) -> None:
        super().__init__(context)
        self.seen: List[tuple] = []

    def upsert(self, obj: Dict[str, Any]) -> None:
        self.seen.append(("upsert", obj["metadata"]["name"]))

    def delete(self, obj: Dict[str, Any]) -> None:
        self.seen.append(("delete", obj["metadata"]["name"]))


PARTS = {"lister": lister, "trimmer": trimmer, "validator": validator, "handler": Recording}


def test_the_watched_kinds_are_registered_in_their_apply_order():
    assert KINDS.names() == ["namespaces", "pods", "networkpolicies", "clusternetworkpolicies"]


@pytest.mark.parametrize("part", list(PARTS))
def test_a_kind_registered_without_any_part_fails_at_registration(part):
    parts = dict(PARTS, **{part: None})
    with pytest.raises(KindError, match=f"AdminNetworkPolicy .* without a {part}"):
        KindRegistry([Kind(ADMIN_POLICIES, **parts)])


def test_a_kind_registered_twice_fails():
    with pytest.raises(KindError, match="registered twice"):
        KindRegistry([Kind(ADMIN_POLICIES, **PARTS), Kind(ADMIN_POLICIES, **PARTS)])


def test_an_unknown_kind_is_an_error_never_the_network_policy_default():
    with pytest.raises(KindError, match="unknown kind 'adminnetworkpolicies'"):
        KINDS["adminnetworkpolicies"]
    cache = EventDispatcher(Database(), ClusterTranslator("k8s"))
    with pytest.raises(KindError, match="unknown kind 'adminnetworkpolicies'"):
        cache.on_event("adminnetworkpolicies", "ADDED", {"metadata": {"name": "x"}})


def test_one_watcher_per_registered_kind():
    watchers = make_watchers(api_client_for_url(UNUSED_URL), KINDS, lambda *args: None, Database())
    assert [w.resource.name for w in watchers] == KINDS.names()


def test_a_new_kind_is_one_record_and_one_handler_and_its_list_is_awaited_too():
    kinds = KindRegistry(list(KINDS) + [Kind(ADMIN_POLICIES, **PARTS)])
    cache = EventDispatcher(Database(), ClusterTranslator("k8s"), kinds=kinds)
    handler = cache._handlers["adminnetworkpolicies"]
    assert isinstance(handler, Recording)
    cache.on_event("adminnetworkpolicies", "ADDED", {"metadata": {"name": "deny-all"}})
    for name in KINDS.names():
        cache.on_event(name, "LISTED", {"resourceVersion": "1"})
    assert not cache.lists_applied.is_set() and handler.seen == []  # held: its list is not in yet
    cache.on_event("adminnetworkpolicies", "LISTED", {"resourceVersion": "1"})
    cache.on_event("adminnetworkpolicies", "DELETED", {"metadata": {"name": "deny-all"}})
    assert cache.lists_applied.is_set() and handler.seen == [("upsert", "deny-all"), ("delete", "deny-all")]


def test_the_validator_refuses_an_object_without_a_readable_identity_and_the_next_ones_go_on():
    db = Database()
    cache = EventDispatcher(db, ClusterTranslator("k8s"))
    for name in KINDS.names():
        cache.on_event(name, "LISTED", {"resourceVersion": "1"})
    nameless = pod("a", "x", "10.0.0.1")
    nameless["metadata"]["name"] = ""
    cache.on_event("pods", "ADDED", nameless)
    cache.on_event("namespaces", "ADDED", namespace("Not_A_Label"))
    cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.2", app="web"))
    assert list(db.pods) == [("a", "web")] and list(db.namespaces) == []  # never recorded
    assert [(e["kind"], e["name"], e["reason"].split(":")[0]) for e in db.errors] == [
        ("Namespace", "Not_A_Label", "metadata.name"), ("Pod", "", "metadata.name")]


@pytest.mark.parametrize("part", ["lister", "handler"])
def test_a_kind_registered_without_a_lister_or_handler_fails_when_the_pipeline_is_built(part):
    from kube_manager.service.pipeline import build_pipeline
    kinds, _ = kinds_with_toys()
    complete = kinds[TOY].hooks[WATCH]
    kinds[TOY].hooks[WATCH] = Kind(complete.resource, **dict(PARTS, **{part: None}))
    with pytest.raises(KindError, match=f"Toy .* without a {part}"):
        build_pipeline("k8s", "k8s", kinds=kinds)
    kinds[TOY].hooks[WATCH] = complete
    assert build_pipeline("k8s", "k8s", kinds=kinds).kinds.names()[-1] == "toys"


def test_a_kind_registered_without_its_watch_record_fails_when_the_pipeline_is_built():
    from kube_manager.service.pipeline import build_pipeline
    kinds, _ = kinds_with_toys()
    del kinds[TOY].hooks[WATCH]
    with pytest.raises(KindError, match="kind Toy is registered without a watch hook"):
        build_pipeline("k8s", "k8s", kinds=kinds)


def test_the_registry_refuses_a_kind_twice_and_a_hook_twice():
    with pytest.raises(KindError, match="kind Toy is registered twice"):
        Kinds([KindEntry(TOYS, REACHES_CLUSTER), KindEntry(TOYS, REACHES_CLUSTER)])
    kinds, _ = kinds_with_toys()
    with pytest.raises(KindError, match="kind Toy has two watch hooks"):
        kinds.register(TOY, WATCH, kinds[TOY].hooks[WATCH])
    with pytest.raises(KindError, match="unknown kind 'Gateway'"):
        kinds.register("Gateway", WATCH, None)
