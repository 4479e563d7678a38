"""A Lease namespace that does not exist (SPEC 12): the emulated API server answers a create there
with 404, as a real one does; the elector says so at WARNING, naming the namespace and the fix,
once and not at every attempt; /readyz fails with the same line; creating the namespace mends it."""
from __future__ import annotations

import logging
from typing import List

import pytest

from introspect.health import leader_check
from kube_manager.kube.client_factory import api_client_for_url
from kube_manager.leader.elector import MISSING_NAMESPACE_REPEAT, LeaderElector
from kube_manager.leader.gate import WriteGate
from kube_manager.leader.lock import LeaseLock, LeaseRecord, LockError
from kube_manager.plumbing.kvlog import FIELDS_ATTR
from kube_manager.records.db import Database, LeaderStatus
from kube_manager.settings import LeaderElectionSettings
from simulators.kube_api.runner import EmulatorRunner

pytestmark = pytest.mark.slow  # an emulated API server per test

NAME = "contrail-kube-manager-k8s"
RECORD = LeaseRecord(holder="a", lease_duration=15)


@pytest.mark.parametrize("namespace, created", [("kube-system", True), ("default", True), ("nope", False)])
def test_the_emulator_creates_a_lease_only_in_a_namespace_that_exists(kube: EmulatorRunner, namespace, created):
    lock = LeaseLock(api_client_for_url(kube.url), namespace, NAME)
    assert lock.get(5.0) is None  # a real server's GET: the Lease is not found either way
    if created:
        lock.create(RECORD, 5.0)
        assert lock.get(5.0) is not None
    else:
        with pytest.raises(LockError) as caught:
            lock.create(RECORD, 5.0)
        assert (caught.value.status, str(caught.value)) == (404, '404 Not Found: namespaces "nope" not found')


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_missing_namespace_is_one_warning_with_the_fix_and_fails_readiness(kube: EmulatorRunner, caplog):
    clock, db = Clock(), Database()
    db.leader = LeaderStatus()
    elector = LeaderElector(LeaseLock(api_client_for_url(kube.url), "team-x", NAME),
                            LeaderElectionSettings(namespace="team-x"), "host-a_1", WriteGate(clock), db.leader,
                            clock=clock)
    caplog.set_level(logging.DEBUG, logger="kube_manager.leader")

    def warnings() -> List[str]:
        return [f"{r.getMessage()} {getattr(r, FIELDS_ATTR)}" for r in caplog.records if r.levelno >= logging.WARNING]
    for _attempt in range(5):  # ten seconds of attempts at the default retry period
        assert not elector.try_acquire_or_renew(5.0)
        clock.now += 2.0
    assert len(warnings()) == 1, warnings()
    assert "team-x" in warnings()[0] and "kubectl create namespace team-x" in warnings()[0]
    check = leader_check(db)
    assert not check.ok
    assert check.detail == ("the Lease's namespace 'team-x' does not exist: create it (kubectl create namespace "
                            "team-x) or set leader_elect_namespace to an existing one")

    clock.now += MISSING_NAMESPACE_REPEAT
    assert not elector.try_acquire_or_renew(5.0)
    assert len(warnings()) == 2  # said again, sparingly

    kube.call(lambda store: store.create({"kind": "Namespace", "metadata": {"name": "team-x"}}))
    assert elector.try_acquire_or_renew(5.0)
    assert leader_check(db).ok and db.leader.blocked == ""
