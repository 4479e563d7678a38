"""The daemon's Kubernetes metrics: objects delivered by lists count, not only watch events."""
from __future__ import annotations

import threading
from typing import Dict

from prometheus_client import CollectorRegistry

from tests.support.builders import namespace, pod
from tests.support.kube_helpers import Recorder, running, watcher
from tests.support.waiting import wait_until
from kube_manager.records.db import Database
from kube_manager.kube.client_factory import api_client_for_url
from simulators.kube_api.runner import EmulatorRunner
from kube_manager.observability.metrics import Metrics


def events(metrics: Metrics) -> Dict[str, float]:
    return {s.labels["type"]: s.value for m in metrics.kube_events.collect()
            for s in m.samples if s.name.endswith("_total") and s.labels["resource"] == "pods"}


class Gate:
    """The watcher's backoff sleep, held until the test opens it (the watcher is then certainly
    disconnected while the cluster changes)."""

    def __init__(self) -> None:
        self.slept = threading.Event()
        self.opened = threading.Event()

    def __call__(self, delay: float) -> None:
        self.slept.set()
        assert self.opened.wait(10), "the test never opened the gate"


def test_listed_objects_are_counted_at_the_first_list_and_at_each_relist():
    with EmulatorRunner() as kube:
        kube.store.create(namespace("dev"))
        for name in ("a", "b", "c"):
            kube.store.create(pod("dev", name, app=name))
        rec, metrics, gate = Recorder(), Metrics(CollectorRegistry()), Gate()
        with running([watcher(api_client_for_url(kube.url), "pods", rec, Database(), metrics=metrics,
                              sleep=gate)]):
            rec.wait_for("LISTED")
            assert events(metrics) == {"LISTED": 3.0}
            wait_until(lambda: kube.store.watch_count == 1, "the watch")
            kube.store.create(pod("dev", "d"))
            rec.wait_for("ADDED", "d")
            assert events(metrics) == {"LISTED": 3.0, "ADDED": 1.0}
            kube.store.drop_watches()
            assert gate.slept.wait(10), "the watcher never noticed the dropped watch"
            kube.store.create(pod("dev", "e"))
            kube.store.compact()  # resuming from before "e" is 410: a re-list of the 5 pods
            gate.opened.set()
            rec.wait_for("RELISTED")
            assert events(metrics)["LISTED"] == 8.0


def test_an_empty_list_still_shows_a_sample():
    with EmulatorRunner() as kube:
        rec, metrics = Recorder(), Metrics(CollectorRegistry())
        with running([watcher(api_client_for_url(kube.url), "pods", rec, Database(), metrics=metrics)]):
            rec.wait_for("LISTED")
            assert events(metrics) == {"LISTED": 0.0}
