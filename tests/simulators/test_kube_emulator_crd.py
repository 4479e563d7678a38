"""The emulated API server's ClusterNetworkPolicy CRD, driven by the official client's
CustomObjectsApi over real HTTP: served with resourceVersions, paging, watch and bookmarks when
installed; absent (404, as a cluster without the CRD) when not; installable and removable live."""
from __future__ import annotations

import json
from typing import Any, Dict, Iterator

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from kube_manager.kube.client_factory import api_client_for_url
from kube_manager.registry import CLUSTER_NETWORK_POLICIES as CNP
from simulators.kube_api.runner import EmulatorRunner
from simulators.kube_api.errors import ApiError
from simulators.kube_api.store import KubeStore
from tests.support.builders import cluster_policy, namespace
from tests.support.kube_helpers import raw_watch, read_events

PLURAL = (CNP.group, CNP.version, CNP.name)


def cnp(name: str, priority: int = 10) -> Dict[str, Any]:
    return cluster_policy(name, priority=priority, ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}])


@pytest.fixture
def kube() -> Iterator[EmulatorRunner]:
    with EmulatorRunner(history_limit=50, system_namespaces=False) as runner:
        yield runner


def custom(kube: EmulatorRunner) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client_for_url(kube.url))


def test_resource_names_the_upstream_crd() -> None:
    assert (CNP.group, CNP.version, CNP.name, CNP.kind) == \
        ("policy.networking.k8s.io", "v1alpha2", "clusternetworkpolicies", "ClusterNetworkPolicy")
    assert CNP.crd and not CNP.namespaced
    assert CNP.api_prefix == "/apis/policy.networking.k8s.io/v1alpha2"


def test_list_and_paging_through_custom_objects_api(kube: EmulatorRunner) -> None:
    api = custom(kube)
    kube.store.create(namespace("dev"))
    for name in ("b", "a", "c"):
        kube.store.create(cnp(name))
    listed = api.list_cluster_custom_object(*PLURAL)
    assert listed["kind"] == "ClusterNetworkPolicyList" and listed["apiVersion"] == CNP.api_version
    assert listed["metadata"]["resourceVersion"] == "4" == str(kube.store.resource_version)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b", "c"]
    item = listed["items"][0]
    assert "namespace" not in item["metadata"]  # cluster-scoped
    assert item["spec"]["tier"] == "Admin" and item["metadata"]["uid"]
    first = api.list_cluster_custom_object(*PLURAL, limit=2)
    assert [i["metadata"]["name"] for i in first["items"]] == ["a", "b"]
    rest = api.list_cluster_custom_object(*PLURAL, limit=2, _continue=first["metadata"]["continue"])
    assert [i["metadata"]["name"] for i in rest["items"]] == ["c"]
    assert "continue" not in rest["metadata"]


def test_watch_from_a_version_with_the_official_watch(kube: EmulatorRunner) -> None:
    api = custom(kube)
    kube.store.create(cnp("a"))
    start = kube.store.resource_version
    kube.store.update(cnp("a", priority=20))
    kube.store.create(namespace("dev"))  # another resource: not in the stream
    kube.store.delete(CNP.name, "", "a")
    seen = []
    w = watch.Watch()
    for event in w.stream(api.list_cluster_custom_object, *PLURAL, resource_version=str(start),
                          _request_timeout=(5, 10)):
        obj = event["object"]
        seen.append((event["type"], obj["metadata"]["name"], obj["spec"]["priority"],
                     obj["metadata"]["resourceVersion"]))
        if len(seen) == 2:
            w.stop()
    assert seen == [("MODIFIED", "a", 20, "2"), ("DELETED", "a", 20, "4")]


def test_live_events_and_bookmarks_of_the_kind(kube: EmulatorRunner) -> None:
    api = custom(kube)
    response = raw_watch(api.list_cluster_custom_object, *PLURAL, resource_version="0",
                         allow_watch_bookmarks=True, timeout_seconds=30)
    kube.store.create(cnp("a"))
    kube.store.send_bookmarks()
    # From "0", as on a real server (WatchList on by default): the initial events (none) end with a
    # marked bookmark.
    events = read_events(response, 3)
    assert [e["type"] for e in events] == ["BOOKMARK", "ADDED", "BOOKMARK"]
    assert events[0]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert events[2]["object"] == {"kind": CNP.kind, "apiVersion": CNP.api_version,
                                   "metadata": {"resourceVersion": "1"}}


def test_created_through_the_client(kube: EmulatorRunner) -> None:
    api = custom(kube)
    created = api.create_cluster_custom_object(*PLURAL, cnp("from-client"))
    assert created["metadata"]["resourceVersion"] == "1"
    assert kube.store.get(CNP.name, "", "from-client")["spec"]["priority"] == 10


def test_without_the_crd_the_resource_is_absent_and_the_others_are_not() -> None:
    with EmulatorRunner(crds=()) as kube:
        api = custom(kube)
        for call in (lambda: api.list_cluster_custom_object(*PLURAL),
                     lambda: raw_watch(api.list_cluster_custom_object, *PLURAL, timeout_seconds=5),
                     lambda: api.create_cluster_custom_object(*PLURAL, cnp("a"))):
            with pytest.raises(ApiException) as info:
                call()
            assert info.value.status == 404
            assert json.loads(info.value.body)["reason"] == "NotFound"
        with pytest.raises(ApiError) as refused:
            kube.store.create(cnp("a"))
        assert refused.value.code == 404
        assert not kube.store.served(CNP.name)
        kube.store.create(namespace("dev"))  # the built-in kinds are served as ever
        assert [n.metadata.name for n in client.CoreV1Api(api.api_client).list_namespace().items] == [
            "default", "dev", "kube-node-lease", "kube-public", "kube-system"]


def test_installed_later_then_listed_and_watched() -> None:
    with EmulatorRunner(crds=(), system_namespaces=False) as kube:
        api = custom(kube)
        kube.store.create(namespace("dev"))
        kube.store.install_crd(CNP.name)
        assert kube.store.served(CNP.name)
        empty = api.list_cluster_custom_object(*PLURAL)
        assert empty["items"] == [] and empty["metadata"]["resourceVersion"] == "1"
        response = raw_watch(api.list_cluster_custom_object, *PLURAL,
                             resource_version=empty["metadata"]["resourceVersion"], timeout_seconds=30)
        kube.store.create(cnp("a"))
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in read_events(response, 1)] == \
            [("ADDED", "a")]


def test_uninstalling_deletes_the_objects_and_ends_the_watches(kube: EmulatorRunner) -> None:
    api = custom(kube)
    kube.store.create(cnp("a"))
    kube.store.create(cnp("b"))
    response = raw_watch(api.list_cluster_custom_object, *PLURAL, resource_version="2",
                         timeout_seconds=30)
    kube.store.uninstall_crd(CNP.name)
    lines = [json.loads(line) for line in response.read().splitlines() if line]  # the stream ended
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in lines] == \
        [("DELETED", "a"), ("DELETED", "b")]
    with pytest.raises(ApiException) as info:
        api.list_cluster_custom_object(*PLURAL)
    assert info.value.status == 404


def test_only_custom_resources_of_the_table_can_be_installed() -> None:
    store = KubeStore()
    with pytest.raises(ValueError):
        store.install_crd("pods")
    with pytest.raises(ValueError):
        KubeStore(crds=["widgets"])
    assert store.served(CNP.name) and store.served("pods") and not store.served("widgets")
