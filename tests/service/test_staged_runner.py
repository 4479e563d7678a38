"""The staged runs (SPEC 17): off the event path, after a quiet interval, once per change; the
reports in `db.staged`, the Staged Event once per generation, the metrics."""
from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Tuple

import gevent
import gevent.event
import gevent.socket
import pytest
from prometheus_client import CollectorRegistry

from introspect.explain import db_manifests
from kube_manager.handlers import KINDS
from kube_manager.service.pipeline import build_pipeline
from kube_manager.plumbing.forked import ChildFailed, in_child
from kube_manager.service.staged_runner import StagedRunner
from tests.support.builders import namespace, pod, policy
from tests.support.waiting import wait_green

ANNOTATION = "contrail-kube-manager/staged"


def staged(manifest: Dict[str, Any], generation: int = 1, value: str = "true") -> Dict[str, Any]:
    manifest["metadata"]["annotations"] = {ANNOTATION: value}
    manifest["metadata"]["generation"] = generation
    return manifest


def listed_pipeline():
    pipeline = build_pipeline()
    for resource in KINDS.names():
        pipeline.cache.on_event(resource, "LISTED", {"resourceVersion": "1"})
    for ns in ("x", "y"):
        pipeline.cache.on_event("namespaces", "ADDED", namespace(ns))
    for i, key in enumerate(("x/a", "x/b", "y/c")):
        ns, name = key.split("/")
        pipeline.cache.on_event("pods", "ADDED", pod(ns, name, f"10.0.0.{i + 1}", {"app": name}))
    return pipeline


class Announcements:
    def __init__(self, leading: bool = True) -> None:
        self.leading = leading
        self.said: List[Tuple[str, str]] = []

    def __call__(self, record: Any, note: str) -> bool:
        if self.leading:
            self.said.append((record.name, note))
        return self.leading


def runner(pipeline, announce, registry=None, **kwargs) -> StagedRunner:
    return StagedRunner(pipeline.db, pipeline.translator, lambda: db_manifests(pipeline.db).objects, announce,
                        registry or CollectorRegistry(), **kwargs)


def test_a_run_reports_each_staged_policy_and_says_its_event_once_per_generation():
    pipeline = listed_pipeline()
    announce, registry = Announcements(), CollectorRegistry()
    runs = runner(pipeline, announce, registry)
    pipeline.cache.on_event("networkpolicies", "ADDED", staged(policy("x", "deny", {
        "podSelector": {}, "policyTypes": ["Ingress", "Egress"]})))
    runs.run_once()
    record = pipeline.db.staged[("NetworkPolicy", "x", "deny")]
    # Every ordered pair with an end in x (6 of them), on 3 protocols.
    assert (record.report["closed"], record.report["opened"], record.computing) == (18, 0, False)
    assert announce.said == [("deny", "would open 0 and close 18 flows among current pods")]
    assert registry.get_sample_value("kube_manager_staged_policies") == 1
    assert registry.get_sample_value("kube_manager_staged_run_seconds_count") == 1
    pipeline.cache.on_event("pods", "ADDED", pod("y", "d", "10.0.0.4", {"app": "d"}))
    runs.run_once()  # more pods, same generation: the page follows, no new Event
    assert pipeline.db.staged[("NetworkPolicy", "x", "deny")].report["closed"] == 30
    assert len(announce.said) == 1
    pipeline.cache.on_event("networkpolicies", "MODIFIED", staged(policy("x", "deny", {
        "podSelector": {}, "policyTypes": ["Ingress"]}), generation=2))
    runs.run_once()
    assert len(announce.said) == 2  # a new generation: said again
    assert announce.said[-1] == ("deny", "would open 0 and close 18 flows among current pods")  # ingress only now
    pipeline.cache.on_event("networkpolicies", "MODIFIED", policy("x", "deny", {"podSelector": {}}))
    runs.run_once()  # promoted: no longer staged
    assert pipeline.db.staged == {} and registry.get_sample_value("kube_manager_staged_policies") == 0


def test_a_standby_says_the_event_once_it_leads():
    pipeline = listed_pipeline()
    announce = Announcements(leading=False)
    runs = runner(pipeline, announce, debounce=0.01)
    pipeline.cache.on_event("networkpolicies", "ADDED", staged(policy("x", "deny", {"podSelector": {}})))
    runs.run_once()
    assert announce.said == []
    announce.leading = True
    greenlet = gevent.spawn(runs.run)
    try:
        wait_green(lambda: announce.said, "the Staged Event once leading")
    finally:
        greenlet.kill()
    assert len(announce.said) == 1


def test_the_greenlet_runs_after_a_quiet_interval_once_per_change():
    pipeline = listed_pipeline()
    runs_seen: List[List[Any]] = []

    def compute(snapshot: Any, keys: Any, deadline: float) -> List[Dict[str, Any]]:
        runs_seen.append(keys)
        return [{"complete": True, "note": "n"} for _ in keys]

    runs = runner(pipeline, Announcements(), debounce=0.02, compute=compute)
    greenlet = gevent.spawn(runs.run)
    try:
        pipeline.cache.on_event("networkpolicies", "ADDED", staged(policy("x", "deny", {"podSelector": {}})))
        wait_green(lambda: runs_seen, "a staged run")
        gevent.sleep(0.1)  # (nothing to wait for: no change means no run; checked below)
        assert runs_seen == [[("NetworkPolicy", "x", "deny")]]
        pipeline.cache.on_event("pods", "ADDED", pod("y", "d", "10.0.0.4"))
        wait_green(lambda: len(runs_seen) == 2, "a run after a pod changed")
    finally:
        greenlet.kill()


def test_a_run_computes_in_another_process_while_the_loop_goes_on():
    pipeline = listed_pipeline()
    pipeline.cache.on_event("networkpolicies", "ADDED", staged(policy("x", "deny", {"podSelector": {}})))
    ticks: List[int] = []

    def snapshot() -> Dict[str, Any]:
        time.sleep(0.3)  # in the child: the parent's loop ticks meanwhile
        return {"Namespace": [], "Pod": [], "NetworkPolicy": [], "pid": os.getpid()}

    def ticker() -> None:
        while True:
            ticks.append(1)
            gevent.sleep(0.01)

    pids: List[int] = []
    runs = StagedRunner(pipeline.db, pipeline.translator, snapshot, Announcements(), CollectorRegistry(),
                        compute=lambda snap, keys, deadline: [
                            {"complete": True, "note": "n", "pid": in_child(lambda: snap()["pid"], 10)} for _ in keys])
    greenlet = gevent.spawn(ticker)
    try:
        runs.run_once()
    finally:
        greenlet.kill()
    pids.append(pipeline.db.staged[("NetworkPolicy", "x", "deny")].report["pid"])
    assert pids[0] != os.getpid() and len(ticks) >= 10


def test_a_child_past_its_time_is_killed_and_a_failed_child_raises():
    with pytest.raises(TimeoutError):
        in_child(lambda: time.sleep(60), 0.2)
    with pytest.raises(ChildFailed, match="ZeroDivisionError"):
        in_child(lambda: 1 / 0, 10)
    assert in_child(lambda: {"pid": os.getpid()}, 10)["pid"] != os.getpid()


def test_the_greenlet_ends_when_the_daemon_stops():
    stop = gevent.event.Event()
    runs = runner(listed_pipeline(), Announcements(), debounce=0.01, stop=stop)
    greenlet = gevent.spawn(runs.run)
    gevent.sleep(0)
    stop.set()
    wait_green(lambda: greenlet.dead, "the greenlet to end")


def test_a_run_whose_child_does_not_answer_in_time_is_reported_too_large():
    pipeline = listed_pipeline()
    pipeline.cache.on_event("networkpolicies", "ADDED", staged(policy("x", "deny", {"podSelector": {}})))
    announce = Announcements()

    def compute(snapshot: Any, keys: Any, deadline: float) -> List[Dict[str, Any]]:
        return in_child(lambda: time.sleep(60), 0.2)

    runner(pipeline, announce, compute=compute).run_once()
    report = pipeline.db.staged[("NetworkPolicy", "x", "deny")].report
    assert not report["complete"] and report["pairs_checked"] == 0
    assert announce.said == [("deny", "too large to compute: no pod pair checked within the time bound")]


def test_the_fork_is_made_with_the_resolver_threads_let_go(monkeypatch):
    """gevent's resolver leaves native threads behind; a fork in a process of several threads can
    deadlock the child (Python 3.12+ warns). The threads the process had before stay as they were."""
    threads = lambda: len(os.listdir("/proc/self/task"))  # noqa: E731 - Linux, as the daemon
    in_child(lambda: 0, 10)  # the resolver's threads of earlier tests let go too
    before = threads()
    gevent.joinall([gevent.spawn(gevent.socket.getaddrinfo, "localhost", 80) for _ in range(4)])
    assert threads() > before
    at_fork: List[int] = []
    fork = os.fork
    monkeypatch.setattr(os, "fork", lambda: at_fork.append(threads()) or fork())
    assert in_child(lambda: 7, 10) == 7
    assert len(at_fork) == 1 and at_fork[0] <= before
    assert gevent.socket.getaddrinfo("localhost", 80)  # the pool works again
