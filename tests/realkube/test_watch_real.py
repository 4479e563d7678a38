"""The daemon's watcher (kube/watcher.py) on a real kube-apiserver, as the restricted identity, with
short watch timeouts so that the server ends watches within the test: each watch the server ends is
resumed from the last version seen without a restart counted, bookmarks arrive, and an etcd
compaction under a watch makes the next watch 410 and the watcher re-list, losing nothing.

The 410 needs the control plane without the watch cache (`uncached_kube`): with the cache, the
server keeps serving versions etcd compacted away (the cache holds its own window of events)."""
from __future__ import annotations

import dataclasses
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List

from kubernetes import client
from prometheus_client import CollectorRegistry

from kube_manager.handlers import KINDS
from kube_manager.kube.watcher import KubeWatcher
from kube_manager.observability.metrics import Metrics
from kube_manager.records.db import Database
from kube_manager.settings import KubernetesSettings, WatchSettings
from kube_manager.kube.client_factory import build_api_client
from tests.support.control_plane_support import RealKube, compact_etcd
from tests.support.kube_helpers import Recorder, running
from tests.support.real_cluster import unique
from tests.support.waiting import wait_until

# seconds: the server ends each watch after this; a bookmark comes 2 s before (kube-apiserver's rule)
SHORT_WATCH = WatchSettings(min_timeout_seconds=4, max_timeout_seconds=5)
DEADLINE = 60.0


class CountedWatches:
    """The namespaces kind with its lister counting the watch requests."""

    def __init__(self) -> None:
        self.watches = 0
        self._lock = threading.Lock()
        original = KINDS["namespaces"]
        assert original.lister is not None
        make = original.lister

        def lister(api: Any) -> Callable[..., Any]:
            call = make(api)

            def counted(**kwargs: Any) -> Any:
                if kwargs.get("watch"):
                    with self._lock:
                        self.watches += 1
                return call(**kwargs)
            return counted
        self.kind = dataclasses.replace(original, lister=lister)


def restricted(real: RealKube) -> Any:
    api, _ = build_api_client(KubernetesSettings(kubeconfig=real.kube_manager_kubeconfig), environ={})
    return api


def kube_events(metrics: Metrics, event_type: str) -> float:
    return metrics.kube_events.labels(resource="namespaces", type=event_type)._value.get()


def names(recorder: Recorder) -> List[str]:
    return [key[2] for key in recorder.state]


@contextmanager
def revisions_moving(real: RealKube) -> Iterator[None]:
    """A ConfigMap in `default` rewritten every half second, until the block ends."""
    core, name, stop = client.CoreV1Api(real.admin()), unique("revision"), threading.Event()
    core.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name)))

    def rewrite() -> None:
        count = 0
        while not stop.wait(0.5):
            count += 1
            core.patch_namespaced_config_map(name, "default", {"data": {"count": str(count)}})
    writer = threading.Thread(target=rewrite, daemon=True)
    writer.start()
    try:
        yield
    finally:
        stop.set()
        writer.join()
        core.delete_namespaced_config_map(name, "default")


def test_watches_the_server_ends_are_resumed_and_bookmarks_arrive(real_kube: RealKube) -> None:
    counted, recorder, db = CountedWatches(), Recorder(), Database()
    metrics = Metrics(CollectorRegistry())
    watcher = KubeWatcher(restricted(real_kube), counted.kind, recorder, db, metrics=metrics, settings=SHORT_WATCH)
    admin = client.CoreV1Api(real_kube.admin())
    with running([watcher]):
        wait_until(lambda: db.kube_connections["namespaces"].initial_list_done, "the list", DEADLINE)
        wait_until(lambda: counted.watches >= 3, "two watches ended by the server", DEADLINE)
        # A bookmark names a version past the watch's start: writes of another kind move etcd's
        # revision, which the server's cache learns from etcd's progress notifications.
        with revisions_moving(real_kube):
            wait_until(lambda: kube_events(metrics, "BOOKMARK") > 0, "a bookmark", DEADLINE)
        name = unique("after-watches")
        admin.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        wait_until(lambda: name in names(recorder), "the namespace created after them", DEADLINE)
    status = db.kube_connections["namespaces"]
    assert status.reconnects == 0 and status.last_error == ""  # a server's end is no failure
    admin.delete_namespace(name)


def test_a_compaction_under_a_watch_makes_the_next_one_410_and_the_watcher_relist(
        uncached_kube: RealKube) -> None:
    counted, recorder, db = CountedWatches(), Recorder(), Database()
    metrics = Metrics(CollectorRegistry())
    watcher = KubeWatcher(restricted(uncached_kube), counted.kind, recorder, db, metrics=metrics,
                          settings=SHORT_WATCH)
    core = client.CoreV1Api(uncached_kube.admin())
    first, second = unique("before-compaction"), unique("after-compaction")
    with running([watcher]):
        wait_until(lambda: db.kube_connections["namespaces"].initial_list_done, "the list", DEADLINE)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=first)))
        wait_until(lambda: first in names(recorder), "the first namespace", DEADLINE)
        # Writes of another kind move etcd past the watcher's version, two of them: a watch from a
        # version starts at the revision after it, which must be compacted away too.
        for _ in range(2):
            core.create_namespaced_service_account("default", client.V1ServiceAccount(
                metadata=client.V1ObjectMeta(name=unique("revision-bump"))))
        compact_etcd(uncached_kube)
        wait_until(lambda: any(e[1] == "RELISTED" for e in recorder.events), "the re-list after 410", DEADLINE)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=second)))
        wait_until(lambda: second in names(recorder), "a namespace created after the re-list", DEADLINE)
    expired = metrics.watch_restarts.labels(resource="namespaces", reason="expired")._value.get()
    assert expired >= 1 and first in names(recorder)
    for name in (first, second):
        core.delete_namespace(name)
