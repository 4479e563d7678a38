"""The kind registry (issue 9): one record per kind; every gap fails loudly at start-up, never a default."""
from __future__ import annotations

import pytest

from kube_manager.cache import KubeCache
from kube_manager.db import Database
from kube_manager.kube.client_factory import api_client_for_url
from kube_manager.kube.kinds import Kind, KindError, KindRegistry
from kube_manager.kube.resources import Resource
from kube_manager.kube.watcher import KINDS, KubeWatcher, make_watchers
from kube_manager.translator import ClusterTranslator

CLUSTER_POLICIES = Resource("clusternetworkpolicies", "ClusterNetworkPolicy", "policy.networking.k8s.io/v1alpha1",
                            namespaced=False)
UNUSED_URL = "http://127.0.0.1:1"  # never connected to: the watchers are built, not run


def lister(api):
    return lambda **kwargs: None


def trimmer(obj):
    return obj


def test_the_watched_kinds_are_registered_in_their_apply_order():
    assert KINDS.names() == ["namespaces", "pods", "networkpolicies"]


@pytest.mark.parametrize("part", ["lister", "trimmer"])
def test_a_kind_registered_without_a_lister_or_trimmer_fails_at_registration(part):
    parts = {"lister": lister, "trimmer": trimmer, part: None}
    with pytest.raises(KindError, match=f"ClusterNetworkPolicy .* without a {part}"):
        KindRegistry([Kind(CLUSTER_POLICIES, **parts)])


def test_a_kind_registered_twice_fails():
    with pytest.raises(KindError, match="registered twice"):
        KindRegistry([Kind(CLUSTER_POLICIES, lister, trimmer), Kind(CLUSTER_POLICIES, lister, trimmer)])


def test_a_kind_registered_without_a_handler_fails_when_the_cache_starts():
    kinds = KindRegistry([KINDS[name] for name in KINDS.names()] + [Kind(CLUSTER_POLICIES, lister, trimmer)])
    with pytest.raises(KindError, match="no handler for the registered kind.* clusternetworkpolicies"):
        KubeCache(Database(), ClusterTranslator("k8s"), kinds=kinds)


def test_a_handler_for_a_kind_that_is_not_registered_fails_when_the_cache_starts():
    kinds = KindRegistry([KINDS["namespaces"], KINDS["pods"]])
    with pytest.raises(KindError, match="not registered: networkpolicies"):
        KubeCache(Database(), ClusterTranslator("k8s"), kinds=kinds)


def test_an_unknown_kind_is_an_error_never_the_network_policy_default():
    with pytest.raises(KindError, match="unknown kind 'clusternetworkpolicies'"):
        KINDS["clusternetworkpolicies"]
    with pytest.raises(KindError, match="unknown kind"):
        KubeWatcher(api_client_for_url(UNUSED_URL), "clusternetworkpolicies", lambda *args: None, Database())
    cache = KubeCache(Database(), ClusterTranslator("k8s"))
    with pytest.raises(KindError, match="unknown kind 'clusternetworkpolicies'"):
        cache.on_event("clusternetworkpolicies", "ADDED", {"metadata": {"name": "x"}})


def test_one_watcher_per_registered_kind():
    watchers = make_watchers(api_client_for_url(UNUSED_URL), lambda *args: None, Database())
    assert [w.resource.name for w in watchers] == KINDS.names()
