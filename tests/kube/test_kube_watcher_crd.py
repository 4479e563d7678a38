"""Watching ClusterNetworkPolicies (a CRD) by its path (plumbing/raw_requests.py), over real
HTTP against the emulated API server: listed and watched when served; when the CRD is absent, an
empty list (the other kinds unaffected), one WARNING, looked for again on `look_again` and on its
timer, never fatal; picked up once installed; emptied when removed."""
from __future__ import annotations

import itertools
import logging
from typing import Any, Dict, Iterator, List

import pytest

from tests.support.builders import cluster_policy, namespace
from tests.support.kube_helpers import Recorder, ScriptedServer, running, watcher
from kube_manager.records.db import Database
from kube_manager.kube.client_factory import api_client_for_url
from kube_manager.registry import CLUSTER_NETWORK_POLICIES as CNP
from kube_manager.kube.watcher import KubeWatcher, WatchSettings
from simulators.kube_api.runner import EmulatorRunner
from tests.support.waiting import wait_until
from kube_manager.plumbing.kvlog import FIELDS_ATTR

# Namespaces beside ClusterNetworkPolicies: the other kinds must not notice the CRD's absence.
WATCHED = ("namespaces", CNP.name)
NEVER = 3600.0  # no timer: only look_again looks again


def cnp(name: str, priority: int = 10, **extra: Any) -> Dict[str, Any]:
    return {**cluster_policy(name, priority=priority, ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}]),
            **extra}


def watchers(kube: EmulatorRunner, rec: Recorder, db: Database, recheck: float = NEVER) -> List[KubeWatcher]:
    api = api_client_for_url(kube.url)
    ticks = itertools.count(1)  # a clock that moves at every reading: each lookup is visible
    return [watcher(api, name, rec, db, settings=WatchSettings(absent_recheck=recheck),
                    clock=lambda: float(next(ticks)))
            for name in WATCHED]


def absence_warnings(caplog: pytest.LogCaptureFixture) -> List[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno == logging.WARNING and "CRD is not installed" in r.getMessage()]


@pytest.fixture
def bare() -> Iterator[EmulatorRunner]:
    """A cluster without the ClusterNetworkPolicy CRD."""
    with EmulatorRunner(crds=()) as runner:
        yield runner


def test_served_crd_is_listed_and_watched_with_status_trimmed() -> None:
    with EmulatorRunner() as kube:
        kube.store.create(cnp("early"))
        rec, db = Recorder(), Database()
        with running(watchers(kube, rec, db)):
            rec.wait_for("LISTED", count=2)
            assert rec.types(CNP.name) == [("ADDED", "early"), ("LISTED", "")]
            kube.store.update(cnp("early", priority=20))
            rec.wait_for("MODIFIED", "early")
            kube.store.update(cnp("early", priority=20, status={"conditions": [{"type": "Accepted"}]}))
            kube.store.create(cnp("late"))
            rec.wait_for("ADDED", "late")  # after the status-only change, which woke no one
            kube.store.delete(CNP.name, "", "early")
            rec.wait_for("DELETED", "early")
        assert rec.types(CNP.name)[2:] == [("MODIFIED", "early"), ("ADDED", "late"), ("DELETED", "early")]
        assert rec.state[(CNP.name, "", "late")] == {
            "apiVersion": CNP.api_version, "kind": CNP.kind, "spec": cnp("late")["spec"],
            "metadata": {key: value for key, value in kube.store.get(CNP.name, "", "late")["metadata"].items()
                         if key in ("name", "uid", "resourceVersion", "generation")}}
        status = db.kube_connections[CNP.name]
        assert not status.absent and status.url.endswith("/apis/policy.networking.k8s.io/v1alpha2/clusternetworkpolicies")


def test_absent_crd_is_an_empty_list_logged_once_and_the_others_go_on(
        bare: EmulatorRunner, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kube_manager.kube.watcher")
    rec, db = Recorder(), Database()
    with running(watchers(bare, rec, db)) as (_namespaces, cnps):
        rec.wait_for("LISTED", count=2)  # the initial lists are not held up
        status = db.kube_connections[CNP.name]
        assert status.absent and status.initial_list_done and not status.connected
        assert rec.types(CNP.name) == [("LISTED", "")]
        bare.store.create(namespace("dev"))
        rec.wait_for("ADDED", "dev")  # the other kinds are unaffected
        for _ in range(3):  # still absent at three resyncs: looked for each time, logged once
            looked = status.last_progress_at
            cnps.look_again()
            wait_until(lambda: status.last_progress_at != looked, "another lookup")
        assert len(absence_warnings(caplog)) == 1
        assert getattr(absence_warnings(caplog)[0], FIELDS_ATTR)["crd"] == "clusternetworkpolicies.policy.networking.k8s.io"
        assert rec.types(CNP.name) == [("LISTED", "")]

        bare.store.install_crd(CNP.name)
        bare.store.create(cnp("deny-all"))
        cnps.look_again()  # the next resync finds it
        rec.wait_for("ADDED", "deny-all")
        assert not status.absent
        bare.store.create(cnp("second"))
        rec.wait_for("ADDED", "second")  # and watches it from then on
    assert rec.types(CNP.name) == [("LISTED", ""), ("ADDED", "deny-all"), ("RELISTED", ""), ("ADDED", "second")]
    assert any(r.levelno == logging.INFO and "served now" in r.getMessage() for r in caplog.records)


def test_absent_crd_is_looked_for_on_the_timer_too(bare: EmulatorRunner) -> None:
    rec, db = Recorder(), Database()
    with running(watchers(bare, rec, db, recheck=0.05)):
        rec.wait_for("LISTED", count=2)
        bare.store.install_crd(CNP.name)
        bare.store.create(cnp("a"))
        rec.wait_for("ADDED", "a")


def test_a_removed_crd_deletes_what_was_known_and_is_absent_again(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kube_manager.kube.watcher")
    with EmulatorRunner() as kube:
        kube.store.create(cnp("a"))
        rec, db = Recorder(), Database()
        with running(watchers(kube, rec, db)) as (_namespaces, cnps):
            rec.wait_for("LISTED", count=2)
            kube.store.uninstall_crd(CNP.name)
            rec.wait_for("DELETED", "a")
            status = db.kube_connections[CNP.name]
            # the status flips just before the warning is logged, from the watcher's thread
            wait_until(lambda: status.absent and absence_warnings(caplog), "the resource to be seen absent")
            assert len(absence_warnings(caplog)) == 1
            kube.store.install_crd(CNP.name)
            kube.store.create(cnp("b"))
            cnps.look_again()
            rec.wait_for("ADDED", "b")
    assert {key for key in rec.state if key[0] == CNP.name} == {(CNP.name, "", "b")}


def test_a_forbidden_crd_is_run_without_and_says_which_rule_is_missing(caplog: pytest.LogCaptureFixture) -> None:
    """403 (the RBAC rule for clusternetworkpolicies not granted) must not hold up the initial lists."""
    caplog.set_level(logging.WARNING, logger="kube_manager.kube.watcher")
    body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}'
    forbidden = (b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nConnection: close\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    rec, db = Recorder(), Database()
    with ScriptedServer(lambda request: forbidden) as server:
        with running([watcher(api_client_for_url(server.url), CNP.name, rec, db,
                              settings=WatchSettings(absent_recheck=NEVER))]):
            rec.wait_for("LISTED")
    status = db.kube_connections[CNP.name]
    assert status.absent and status.initial_list_done
    assert status.last_error == "403 Forbidden: may not list clusternetworkpolicies"
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "custom resource forbidden (grant list and watch on it, see the RBAC in docs/operations.md): "
        "running without it, looking again at each resync"]
