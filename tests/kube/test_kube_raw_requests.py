"""Requests to the Kubernetes API by path (plumbing/raw_requests.py): what the official client's
typed methods sent and raised, without them; and the daemon's start path never importing them."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any, Iterator

import pytest
from kubernetes.client.exceptions import ApiException

from kube_manager.kube.client_factory import TokenFile, api_client_for_url
from kube_manager.kube.kinds import collection_lister
from kube_manager.kube import raw_requests
from kube_manager.registry import CLUSTER_NETWORK_POLICIES, NAMESPACES
from simulators.kube_api.runner import EmulatorRunner
from tests.support.builders import namespace
from tests.support.kube_helpers import ScriptedServer
from tests.support.paths import REPO

LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


@pytest.fixture
def kube() -> Iterator[EmulatorRunner]:
    with EmulatorRunner() as runner:
        yield runner


def _json(answer: Any) -> Any:
    try:
        return json.loads(answer.data)
    finally:
        answer.release_conn()


def test_a_created_object_is_answered_and_read_back_by_its_path(kube: EmulatorRunner) -> None:
    api = api_client_for_url(kube.url)
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "one", "namespace": "default"}, "spec": {"holderIdentity": "a"}}
    made = _json(raw_requests.request(api, "POST", LEASES, body=body, timeout=5))
    read = _json(raw_requests.request(api, "GET", f"{LEASES}/one", timeout=5))
    assert made["spec"] == read["spec"] == {"holderIdentity": "a"}
    assert read["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]


def test_an_answer_outside_2xx_raises_the_official_clients_exception_with_its_body(kube: EmulatorRunner) -> None:
    api = api_client_for_url(kube.url)
    with pytest.raises(ApiException) as raised:
        raw_requests.request(api, "GET", f"{LEASES}/missing", timeout=5)
    assert raised.value.status == 404
    assert "missing" in json.loads(raised.value.body)["message"]


def test_the_lister_pages_with_the_official_clients_arguments(kube: EmulatorRunner) -> None:
    for n in range(3):
        kube.store.create(namespace(f"ns-{n}"))
    list_fn = collection_lister(NAMESPACES)(api_client_for_url(kube.url))
    names, token = [], None
    for _ in range(10):
        page = _json(list_fn(_preload_content=False, _request_timeout=(5, 5), limit=1,
                             **({"_continue": token} if token else {})))
        names += [item["metadata"]["name"] for item in page["items"]]
        token = page["metadata"].get("continue")
        if not token:
            break
    assert sorted(names) == sorted(item["metadata"]["name"] for item in kube.store.list("namespaces"))
    assert len(names) > 1


def test_a_custom_resource_is_listed_by_its_group_path(kube: EmulatorRunner) -> None:
    page = _json(collection_lister(CLUSTER_NETWORK_POLICIES)(api_client_for_url(kube.url))(_request_timeout=5))
    assert page["kind"] == f"{CLUSTER_NETWORK_POLICIES.kind}List" and page["items"] == []


def test_watch_flags_and_the_bearer_token_of_the_token_file_go_as_the_server_expects(tmp_path: Any) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("first\n")
    answer = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
    with ScriptedServer(lambda _request: answer) as server:
        api = api_client_for_url(server.url)
        hook = TokenFile(str(token_file))
        hook(api.configuration)
        api.configuration.refresh_api_key_hook = hook
        list_fn = collection_lister(NAMESPACES)(api)
        _json(list_fn(watch=True, allow_watch_bookmarks=True, resource_version="7", timeout_seconds=300,
                      _request_timeout=5))
        token_file.write_text("second-and-longer\n")  # the kubelet rotated it
        _json(list_fn(limit=5, _request_timeout=5))
    first, second = (request.decode() for request in server.requests)
    assert first.startswith("GET /api/v1/namespaces?watch=true&allowWatchBookmarks=true&resourceVersion=7"
                            "&timeoutSeconds=300 HTTP/1.1")
    assert "\r\nauthorization: Bearer first\r\n" in first
    assert second.startswith("GET /api/v1/namespaces?limit=5 ")
    assert "Bearer second-and-longer" in second


def test_the_daemons_start_path_never_imports_the_official_clients_typed_apis() -> None:
    """The typed API classes import pydantic models by the hundred: the watchers' lists and the
    Lease go without them (a fresh interpreter, the daemon's modules, its lists and its lock)."""
    script = textwrap.dedent("""
        from gevent import monkey
        monkey.patch_all()
        import sys
        import threading
        import kube_manager.service.daemon
        from kube_manager.kube.client_factory import api_client_for_url
        from kube_manager.kube.watcher import make_watchers
        from kube_manager.leader.lock import LeaseLock
        from kube_manager.records.db import Database
        from simulators.kube_api.runner import EmulatorRunner
        from kube_manager.handlers import KINDS
        with EmulatorRunner() as kube:
            api, db = api_client_for_url(kube.url), Database()
            watchers = make_watchers(api, KINDS, lambda *event: None, db)
            for watcher in watchers:
                watcher._list()
            assert all(status.initial_list_done for status in db.kube_connections.values())
            assert LeaseLock(api, "default", "kube-manager").get(5) is None
        print(sorted(name for name in sys.modules if name.startswith("kubernetes.client.api.")))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
