"""The emulated Kubernetes API server, driven over real HTTP by the official `kubernetes` client."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, List

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from kube_manager.kube.client_factory import api_client_for_url
from simulators.kube_api.runner import EmulatorRunner
from simulators.kube_api.errors import ApiError
from simulators.kube_api.store import KubeStore
from kube_manager.offline.manifests import load_manifests
from tests.support.builders import namespace, pod, policy
from tests.support.kube_helpers import raw_watch, read_events
from tests.support.waiting import wait_until


@pytest.fixture
def kube() -> Iterator[EmulatorRunner]:
    with EmulatorRunner(history_limit=50, system_namespaces=False) as runner:
        yield runner


@pytest.fixture
def core(kube: EmulatorRunner) -> client.CoreV1Api:
    return client.CoreV1Api(api_client_for_url(kube.url))


def test_list_returns_objects_and_resource_version(kube: EmulatorRunner,
                                                   core: client.CoreV1Api) -> None:
    kube.store.create(namespace("dev", team="a"))
    kube.store.create(pod("dev", "web", "10.0.0.5", app="web"))
    kube.store.create(policy("dev", "deny"))
    namespaces = core.list_namespace()
    assert [n.metadata.name for n in namespaces.items] == ["dev"]
    assert namespaces.items[0].metadata.labels == {"team": "a", "kubernetes.io/metadata.name": "dev"}
    assert namespaces.metadata.resource_version == "3" == str(kube.store.resource_version)
    pods = core.list_namespaced_pod("dev")
    assert pods.items[0].status.pod_ip == "10.0.0.5"
    assert pods.items[0].metadata.uid and pods.items[0].metadata.resource_version == "2"
    assert core.list_namespaced_pod("other").items == []
    policies = client.NetworkingV1Api(core.api_client).list_network_policy_for_all_namespaces()
    assert [(p.metadata.namespace, p.metadata.name) for p in policies.items] == [("dev", "deny")]


def test_list_items_are_api_server_form(kube: EmulatorRunner, core: client.CoreV1Api) -> None:
    kube.store.create(namespace("dev"))
    kube.store.create(pod("dev", "web"))
    response = core.list_pod_for_all_namespaces(_preload_content=False)
    data = json.loads(response.data)
    assert data["kind"] == "PodList" and data["apiVersion"] == "v1"
    item = data["items"][0]
    assert "kind" not in item  # as the real server: list items carry no kind
    assert set(item["metadata"]) == {"name", "namespace", "labels", "uid", "resourceVersion",
                                     "creationTimestamp", "generation"}


def test_paging_with_limit_and_continue(kube: EmulatorRunner, core: client.CoreV1Api) -> None:
    kube.store.create(namespace("dev"))
    for i in range(5):
        kube.store.create(pod("dev", f"p{i}"))
    names, token, versions = [], None, set()
    while True:
        page = core.list_pod_for_all_namespaces(limit=2, _continue=token)
        assert len(page.items) <= 2
        names += [p.metadata.name for p in page.items]
        versions.add(page.metadata.resource_version)
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"p{i}" for i in range(5)]
    assert versions == {"6"}  # every page reports the version of the first


def test_expired_continue_token_is_410(kube: EmulatorRunner, core: client.CoreV1Api) -> None:
    kube.store.create(namespace("dev"))
    for i in range(3):
        kube.store.create(pod("dev", f"p{i}"))
    token = core.list_pod_for_all_namespaces(limit=1).metadata._continue
    kube.store.create(pod("dev", "later"))
    kube.store.compact()
    with pytest.raises(ApiException) as info:
        core.list_pod_for_all_namespaces(limit=1, _continue=token)
    assert info.value.status == 410
    assert json.loads(info.value.body)["reason"] == "Expired"


def test_watch_replays_history_in_order_for_the_official_watch(kube: EmulatorRunner,
                                                               core: client.CoreV1Api) -> None:
    kube.store.create(namespace("dev"))
    start = kube.store.resource_version
    kube.store.create(pod("dev", "web"))
    kube.store.update(pod("dev", "web", "10.0.0.9"))
    kube.store.delete("pods", "dev", "web")
    kube.store.create(namespace("other"))  # another resource: not in the pod stream
    seen = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_pod, "dev", resource_version=str(start),
                          _request_timeout=(5, 10)):
        seen.append((event["type"], event["object"].metadata.name,
                     event["object"].metadata.resource_version))
        if len(seen) == 3:
            w.stop()
    assert seen == [("ADDED", "web", "2"), ("MODIFIED", "web", "3"), ("DELETED", "web", "4")]


def test_watch_delivers_live_events_and_bookmarks(kube: EmulatorRunner,
                                                  core: client.CoreV1Api) -> None:
    kube.store.create(namespace("dev"))
    response = raw_watch(core.list_pod_for_all_namespaces, resource_version="1",
                         allow_watch_bookmarks=True, timeout_seconds=30)
    # The headers came back before any event: the call returned. Now write while it is open.
    kube.store.create(pod("dev", "a"))
    kube.store.send_bookmarks()
    kube.store.create(namespace("quiet"))  # bumps the version without a pod event
    kube.store.send_bookmarks()
    events = read_events(response, 3)
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK", "BOOKMARK"]
    assert events[1]["object"] == {"kind": "Pod", "apiVersion": "v1",
                                   "metadata": {"resourceVersion": "2"}}
    assert events[2]["object"]["metadata"]["resourceVersion"] == "3"


def test_no_bookmarks_unless_allowed(kube: EmulatorRunner, core: client.CoreV1Api) -> None:
    kube.store.create(namespace("dev"))
    response = raw_watch(core.list_pod_for_all_namespaces, resource_version="1",
                         timeout_seconds=30)
    kube.store.send_bookmarks()
    kube.store.create(pod("dev", "a"))
    assert [e["type"] for e in read_events(response, 1)] == ["ADDED"]


def test_periodic_bookmarks() -> None:
    with EmulatorRunner(bookmark_interval=0.05) as kube:
        core = client.CoreV1Api(api_client_for_url(kube.url))
        # From the version before the last write: bookmarks past it keep coming (one at the
        # version itself would never come, as from the real server).
        response = raw_watch(core.list_namespace, resource_version=str(kube.store.resource_version - 1),
                             allow_watch_bookmarks=True, timeout_seconds=30)
        assert [e["type"] for e in read_events(response, 3)] == ["ADDED", "BOOKMARK", "BOOKMARK"]


def test_watch_without_version_starts_with_current_objects(kube: EmulatorRunner,
                                                           core: client.CoreV1Api) -> None:
    kube.store.create(namespace("b"))
    kube.store.create(namespace("a"))
    response = raw_watch(core.list_namespace, timeout_seconds=30)
    kube.store.create(namespace("c"))
    events = read_events(response, 3)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == \
        [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]


def test_compacted_version_gets_410_in_stream(kube: EmulatorRunner,
                                              core: client.CoreV1Api) -> None:
    kube.store.create(namespace("dev"))
    kube.store.create(namespace("dev2"))
    kube.store.compact()
    response = raw_watch(core.list_namespace, resource_version="1", timeout_seconds=30)
    assert response.status == 200
    (event,) = read_events(response, 1)
    assert event["type"] == "ERROR"
    assert event["object"]["code"] == 410 and event["object"]["reason"] == "Expired"
    # The official helper turns it into ApiException(410) (after its one retry).
    with pytest.raises(ApiException) as info:
        for _ in watch.Watch().stream(core.list_namespace, resource_version="1",
                                      _request_timeout=(5, 10)):
            pass
    assert info.value.status == 410


def test_bounded_history() -> None:
    store = KubeStore(history_limit=3, system_namespaces=False)
    for name in "abcde":
        store.create(namespace(name))   # versions 1..5; 1 and 2 fall out of the history
    assert store.compacted_resource_version == 2
    replay, sub = store.subscribe("namespaces", None, 2)
    assert [json.loads(line)["object"]["metadata"]["name"] for line in replay] == ["c", "d", "e"]
    store.unsubscribe(sub)
    with pytest.raises(ApiError) as info:
        store.subscribe("namespaces", None, 1)
    assert info.value.code == 410 and "too old resource version: 1 (2)" in info.value.message
    # A version the store has not reached is accepted, as by the real watch cache: nothing is
    # sent until the store passes it.
    replay, sub = store.subscribe("namespaces", None, 7)
    store.create(namespace("f"))  # version 6: not sent
    store.create(namespace("g"))  # version 7: not sent
    store.create(namespace("h"))
    assert replay == [] and [json.loads(line)["object"]["metadata"]["name"] for line in
                            [sub.queue.get_nowait() for _ in range(sub.queue.qsize())]] == ["h"]


def test_server_timeout_ends_the_stream_cleanly(kube: EmulatorRunner,
                                                core: client.CoreV1Api) -> None:
    response = raw_watch(core.list_namespace, resource_version="0", timeout_seconds=1)
    assert list(iter_resp_lines(response)) == []  # ends without error after ~1 s


def test_close_and_drop_watches(kube: EmulatorRunner, core: client.CoreV1Api) -> None:
    response = raw_watch(core.list_namespace, resource_version="0", timeout_seconds=30)
    wait_until(lambda: kube.store.watch_count == 1, "the watch to be registered")
    assert kube.store.close_watches() == 1
    assert list(iter_resp_lines(response)) == []
    wait_until(lambda: kube.store.watch_count == 0, "the closed watch to be unregistered")
    response = raw_watch(core.list_namespace, resource_version="0", timeout_seconds=30)
    wait_until(lambda: kube.store.watch_count == 1, "the second watch")
    kube.store.drop_watches()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        list(iter_resp_lines(response))


def test_writes_through_the_client(kube: EmulatorRunner, core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "dev"}})
    created = core.create_namespaced_pod("dev", {"metadata": {"name": "web"},
                                                 "spec": {"containers": [{"name": "c"}]}})
    assert created.metadata.namespace == "dev" and created.metadata.uid
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("dev", {"metadata": {"name": "web"}})
    assert info.value.status == 409
    body = core.read_namespaced_pod("web", "dev").to_dict()
    body["metadata"]["labels"] = {"app": "web"}
    replaced = core.replace_namespaced_pod("web", "dev", body)
    assert replaced.metadata.labels == {"app": "web"} and replaced.metadata.uid == created.metadata.uid
    with pytest.raises(ApiException) as info:  # body still carries the old resourceVersion
        core.replace_namespaced_pod("web", "dev", body)
    assert info.value.status == 409
    core.delete_namespaced_pod("web", "dev")
    with pytest.raises(ApiException) as info:
        core.read_namespaced_pod("web", "dev")
    assert info.value.status == 404
    with pytest.raises(ApiException) as info:
        core.create_namespaced_pod("missing", {"metadata": {"name": "x"}})
    assert info.value.status == 404
    networking = client.NetworkingV1Api(core.api_client)
    networking.create_namespaced_network_policy("dev", policy("dev", "np"))
    assert networking.read_namespaced_network_policy("np", "dev").spec.pod_selector.to_dict() == \
        {"match_expressions": None, "match_labels": None}


def test_bad_requests_get_status_objects(kube: EmulatorRunner, core: client.CoreV1Api) -> None:
    http = urllib3.PoolManager()
    for path, code in [("/api/v1/nodes", 404), ("/api/v1/pods?limit=x", 400),
                       ("/api/v1/namespaces?watch=1&resourceVersion=abc", 400),
                       ("/api/v1/pods/x", 404)]:
        response = http.request("GET", kube.url + path)
        assert response.status == code, path
        assert json.loads(response.data)["kind"] == "Status"
    response = http.request("POST", kube.url + "/api/v1/namespaces", body=b"[1]")
    assert response.status == 400
    response = http.request("PATCH", kube.url + "/api/v1/namespaces/x")
    assert response.status == 405
    assert http.request("GET", kube.url + "/healthz").data == b"ok"


def test_objects_are_kept_as_given_and_uids_are_stable(kube: EmulatorRunner) -> None:
    spec = {"podSelector": None, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.1/8"}}]}]}
    kube.store.create(namespace("dev"))
    first = kube.store.create(policy("dev", "np", spec, uid=None))
    assert first["spec"] == spec  # no defaulting of policyTypes, protocols or selectors
    assert first["apiVersion"] == "networking.k8s.io/v1"
    kube.store.delete("networkpolicies", "dev", "np")
    second = kube.store.create(policy("dev", "np", spec, uid=None))
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    other = KubeStore()
    other.create(namespace("dev"))
    assert other.create(policy("dev", "np", spec, uid=None))["metadata"]["uid"] == first["metadata"]["uid"]
    given = kube.store.create(dict(pod("dev", "p"), metadata={"name": "p", "namespace": "dev",
                                                              "uid": "fixed-uid"}))
    assert given["metadata"]["uid"] == "fixed-uid"


def test_namespace_delete_cascades(kube: EmulatorRunner) -> None:
    events: List[tuple] = []
    kube.store.create(namespace("dev"))
    kube.store.create(pod("dev", "a"))
    kube.store.create(policy("dev", "np"))
    kube.store.create(namespace("keep"))
    kube.store.create(pod("keep", "b"))
    kube.call(lambda store: store.add_listener(
        lambda resource, event_type, obj: events.append((resource, event_type,
                                                         obj["metadata"]["name"]))))
    kube.store.delete("namespaces", "", "dev")
    # Terminating first, then the namespace controller deletes the content, then the namespace.
    assert events == [("namespaces", "MODIFIED", "dev"), ("pods", "DELETED", "a"),
                      ("networkpolicies", "DELETED", "np"), ("namespaces", "DELETED", "dev")]
    assert [p["metadata"]["name"] for p in kube.store.list("pods")] == ["b"]


def test_a_failing_listener_does_not_break_writes() -> None:
    store = KubeStore()
    seen = []

    def broken(*_args: Any) -> None:
        raise RuntimeError("listener bug")
    store.add_listener(broken)
    store.add_listener(lambda resource, event_type, obj: seen.append(event_type))
    store.create(namespace("dev"))
    assert seen == ["ADDED"] and store.get("namespaces", "", "dev")["metadata"]["name"] == "dev"
    store.remove_listener(broken)


def test_load_creates_missing_namespaces(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop, labels: {a: b}}\n---\n"
        "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: np}\n"
        "spec: {podSelector: {}}\n")
    store = KubeStore()
    store.load(load_manifests([str(tmp_path)]))
    assert [n["metadata"]["name"] for n in store.list("namespaces")] == [
        "default", "kube-node-lease", "kube-public", "kube-system", "shop"]
    assert store.get("namespaces", "", "shop")["metadata"]["labels"] == \
        {"kubernetes.io/metadata.name": "shop"}
    assert store.get("networkpolicies", "default", "np")["metadata"]["namespace"] == "default"


def test_a_kind_that_is_not_a_string_is_a_bad_request() -> None:
    # It used to reach a dict lookup and raise TypeError ("unhashable type") out of the store.
    for kind in (["Pod"], {"Pod": 1}):
        with pytest.raises(ApiError) as info:
            KubeStore().create({"kind": kind, "metadata": {"name": "a"}})
        assert info.value.code == 400


def test_store_errors_cross_the_thread_boundary(kube: EmulatorRunner) -> None:
    with pytest.raises(ApiError) as info:
        kube.store.get("pods", "dev", "nope")
    assert info.value.code == 404
    with pytest.raises(ApiError) as info:
        kube.store.create({"kind": "Service", "metadata": {"name": "s"}})
    assert info.value.code == 400
    with pytest.raises(ApiError) as info:
        kube.store.create({"kind": "Namespace", "metadata": {}})
    assert info.value.code == 422
    with pytest.raises(AttributeError):
        kube.store.no_such_method  # noqa: B018


def test_runner_stop_breaks_open_watches() -> None:
    runner = EmulatorRunner().start()
    core = client.CoreV1Api(api_client_for_url(runner.url))
    response = raw_watch(core.list_namespace, resource_version="0", timeout_seconds=300)
    wait_until(lambda: runner.store.watch_count == 1, "the watch")
    runner.stop()
    with pytest.raises(urllib3.exceptions.ProtocolError):
        list(iter_resp_lines(response))
    runner.stop()  # idempotent
    with pytest.raises(RuntimeError):
        runner.url  # noqa: B018


def test_command_line_server(tmp_path: Path) -> None:
    (tmp_path / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata: {name: demo}\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "simulators.kube_api.server", "-f", str(tmp_path),
         "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = process.stdout.readline().strip()  # type: ignore[union-attr]
        assert url.startswith("http://127.0.0.1:")
        names = [n.metadata.name for n in client.CoreV1Api(api_client_for_url(url))
                 .list_namespace().items]
        assert names == ["default", "demo", "kube-node-lease", "kube-public", "kube-system"]
    finally:
        process.terminate()
        process.wait(10)


def test_without_the_namespace_controller_a_deleted_namespace_stays_terminating() -> None:
    """A bare control plane (apiserver and etcd) keeps a deleted namespace Terminating, refuses new
    content in it, and never deletes the system ones; `finish_namespace_deletion` does what the
    controller would."""
    store = KubeStore(namespace_controller=False)
    store.create(namespace("dev"))
    store.create(pod("dev", "a"))
    answer = store.delete("namespaces", "", "dev")
    assert answer["status"] == {"phase": "Terminating"} and answer["metadata"]["deletionTimestamp"]
    assert [p["metadata"]["name"] for p in store.list("pods")] == ["a"]
    with pytest.raises(ApiError) as refused:
        store.create(pod("dev", "b"))
    assert (refused.value.code, refused.value.reason) == (403, "Forbidden")
    for immortal in ("default", "kube-system", "kube-public"):
        with pytest.raises(ApiError) as kept:
            store.delete("namespaces", "", immortal)
        assert kept.value.code == 403
    store.finish_namespace_deletion("dev")
    assert store.list("pods") == [] and not store.namespace_exists("dev")
