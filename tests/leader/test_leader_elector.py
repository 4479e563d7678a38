"""The leader elector (client-go's algorithm) against the emulated API server's Leases, through the
official client: acquire, renew, expiry takeover judged by local observation time, resourceVersion
conflicts, release, and fencing when renewals fail (the write gate closes before the renew deadline).

Single attempts use a fake monotonic clock, so expiry is shown without waiting; the loops run as
greenlets with short timings, waited on by polling conditions with deadlines.
"""
from __future__ import annotations

import datetime
import time
from typing import Any, Callable, List, Optional, Tuple

import gevent
import pytest

from kube_manager.records.db import LeaderStatus
from kube_manager.kube.client_factory import api_client_for_url
from simulators.kube_api.runner import EmulatorRunner
from tests.support.waiting import wait_green
from kube_manager.leader.elector import LeaderElector
from kube_manager.leader.gate import WriteGate
from kube_manager.leader.lock import LeaseLock, LeaseRecord, LockError
from kube_manager.settings import LeaderElectionSettings
from vnc_client.errors import WriteRefused

pytestmark = pytest.mark.slow  # seconds per test: out of the inner loop

NS, NAME = "kube-system", "contrail-kube-manager-k8s"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _candidate(kube: EmulatorRunner, identity: str, *, clock: Callable[[], float] = time.monotonic,
               lease: int = 15, renew: float = 10.0, retry: float = 2.0, lock: Any = None) -> LeaderElector:
    lock = lock or LeaseLock(api_client_for_url(kube.url), NS, NAME)
    return LeaderElector(lock, LeaderElectionSettings(lease_duration=lease, renew_deadline=renew, retry_period=retry),
                         identity, WriteGate(clock), LeaderStatus(), clock=clock)


def _holder(kube: EmulatorRunner) -> str:
    return kube.call(lambda store: store.leases.holder(NS, NAME))


def _spec(kube: EmulatorRunner) -> dict:
    return kube.call(lambda store: store.leases.get(NS, NAME))["spec"]


def test_first_candidate_creates_the_lease_and_a_second_stays_standby(kube: EmulatorRunner) -> None:
    a, b = _candidate(kube, "host-a_1"), _candidate(kube, "host-b_2")
    assert a.try_acquire_or_renew(5.0)
    spec = _spec(kube)
    assert spec["holderIdentity"] == "host-a_1" and spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert datetime.datetime.fromisoformat(spec["renewTime"].replace("Z", "+00:00")).microsecond
    assert not b.try_acquire_or_renew(5.0)
    assert b.status.leader == "host-a_1" and not b.status.is_leader
    assert _holder(kube) == "host-a_1"


def test_renewal_keeps_acquire_time_and_moves_renew_time(kube: EmulatorRunner) -> None:
    a = _candidate(kube, "a")
    assert a.try_acquire_or_renew(5.0)
    first = _spec(kube)
    assert a.try_acquire_or_renew(5.0)
    second = _spec(kube)
    assert second["acquireTime"] == first["acquireTime"]
    assert second["renewTime"] > first["renewTime"]
    assert second["leaseTransitions"] == 0


def test_expiry_is_judged_by_local_observation_time(kube: EmulatorRunner) -> None:
    clock = FakeClock()
    a = _candidate(kube, "a")
    b = _candidate(kube, "b", clock=clock)
    assert a.try_acquire_or_renew(5.0)
    assert not b.try_acquire_or_renew(5.0)       # b sees the record for the first time at 1000
    clock.now += 14.9
    assert not b.try_acquire_or_renew(5.0)       # unchanged record, 14.9 s < 15 s: still valid
    clock.now += 0.2
    assert b.try_acquire_or_renew(5.0)           # 15.1 s without a change: expired, b takes it
    spec = _spec(kube)
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


def test_a_renewal_seen_restarts_the_standbys_expiry_count(kube: EmulatorRunner) -> None:
    clock = FakeClock()
    a = _candidate(kube, "a")
    b = _candidate(kube, "b", clock=clock)
    assert a.try_acquire_or_renew(5.0)
    assert not b.try_acquire_or_renew(5.0)
    clock.now += 10
    assert a.try_acquire_or_renew(5.0)           # the record changes (renewTime)
    assert not b.try_acquire_or_renew(5.0)       # seen changed at 1010
    clock.now += 10                              # 20 s after the first sight, 10 s after the change
    assert not b.try_acquire_or_renew(5.0)
    assert _holder(kube) == "a"


class _RaceLock:
    """A LeaseLock that lets another candidate act between our read and our write."""

    def __init__(self, inner: LeaseLock, between: Callable[[], None]) -> None:
        self.inner = inner
        self.between = between

    def describe(self) -> str:
        return self.inner.describe()

    def get(self, timeout: float) -> Optional[Tuple[LeaseRecord, str]]:
        found = self.inner.get(timeout)
        self.between()
        return found

    def create(self, record: LeaseRecord, timeout: float) -> str:
        return self.inner.create(record, timeout)

    def update(self, record: LeaseRecord, timeout: float) -> str:
        return self.inner.update(record, timeout)


def test_of_two_candidates_racing_for_a_released_lease_only_one_wins(kube: EmulatorRunner) -> None:
    old = _candidate(kube, "old")
    assert old.try_acquire_or_renew(5.0)
    assert old.release()
    a = _candidate(kube, "a")
    raced: List[bool] = []
    b = _candidate(kube, "b", lock=_RaceLock(LeaseLock(api_client_for_url(kube.url), NS, NAME),
                                             lambda: raced.append(a.try_acquire_or_renew(5.0))))
    assert not b.try_acquire_or_renew(5.0)       # its replace carried the version a overwrote: 409
    assert raced == [True]
    assert _holder(kube) == "a"
    assert "409" in b.status.last_error
    assert _spec(kube)["leaseTransitions"] == 1  # created by old (0), taken over by a


def test_racing_creates_conflict_too(kube: EmulatorRunner) -> None:
    a = _candidate(kube, "a")
    b = _candidate(kube, "b", lock=_RaceLock(LeaseLock(api_client_for_url(kube.url), NS, NAME),
                                             lambda: a.try_acquire_or_renew(5.0)))
    assert not b.try_acquire_or_renew(5.0)       # both saw no Lease; a created it first
    assert _holder(kube) == "a"
    assert "409" in b.status.last_error


def test_a_stale_replace_is_refused_with_409(kube: EmulatorRunner) -> None:
    lock = LeaseLock(api_client_for_url(kube.url), NS, NAME)
    lock.create(LeaseRecord("x", 15), 5.0)
    other = LeaseLock(api_client_for_url(kube.url), NS, NAME)
    assert other.get(5.0) is not None
    lock.update(LeaseRecord("x", 15, transitions=0), 5.0)
    with pytest.raises(LockError) as refused:
        other.update(LeaseRecord("y", 15), 5.0)
    assert refused.value.status == 409


def test_release_clears_the_holder_and_a_standby_takes_over_at_once(kube: EmulatorRunner) -> None:
    clock = FakeClock()
    a = _candidate(kube, "a")
    b = _candidate(kube, "b", clock=clock)
    assert a.try_acquire_or_renew(5.0)
    assert not b.try_acquire_or_renew(5.0)
    assert a.release()
    spec = _spec(kube)
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1
    assert b.try_acquire_or_renew(5.0)           # no waiting for the old lease to expire
    assert _holder(kube) == "b"
    assert not a.release()                       # not ours any more: nothing written
    assert _holder(kube) == "b"


def _refused(gate: WriteGate, epoch: int) -> bool:
    try:
        gate.check(epoch)
    except WriteRefused:
        return True
    return False


@pytest.mark.parametrize("mode", ["error", "hang"])
def test_a_leader_whose_renewals_fail_stops_writing_before_its_renew_deadline(kube: EmulatorRunner,
                                                                            mode: str) -> None:
    renew = 1.0
    a = _candidate(kube, "a", lease=2, renew=renew, retry=0.2)
    transitions: List[bool] = []
    a._on_transition = transitions.append
    runner = gevent.spawn(a.run)
    try:
        wait_green(lambda: a.is_leader, "leadership")
        epoch = a.epoch
        wait_green(lambda: a.status.last_renew_at and a.term_deadline > a._renewed_at and
              kube.call(lambda s: s.leases.writes) >= 2, "a renewal")
        assert not _refused(a.gate, epoch)
        kube.call(lambda store: store.leases.fail_writes_from("a", mode))
        failing_from = time.monotonic()
        wait_green(lambda: _refused(a.gate, epoch), "the gate to close")
        closed_at = time.monotonic()
        # The last renewal that succeeded started before the fault, so the gate closed within the
        # renew deadline of the fault (plus the polling step), never later.
        assert closed_at - failing_from <= renew + 0.1
        wait_green(lambda: not a.is_leader, "stepping down", timeout=renew + 1.0)
        assert transitions == [True, False]
        assert a.status.transitions == 2 and not a.status.is_leader
        kube.call(lambda store: store.leases.clear_faults())
        wait_green(lambda: a.is_leader, "leadership again")    # a new term: the old epoch stays refused
        assert a.epoch == epoch + 1
        assert _refused(a.gate, epoch) and not _refused(a.gate, a.epoch)
    finally:
        a.stop()
        runner.join(5)
        kube.call(lambda store: store.leases.clear_faults())


def test_a_standby_loop_takes_over_when_the_leader_releases(kube: EmulatorRunner) -> None:
    a = _candidate(kube, "a", lease=3, renew=2.0, retry=0.2)
    b = _candidate(kube, "b", lease=3, renew=2.0, retry=0.2)
    runners = [gevent.spawn(a.run)]
    try:
        wait_green(lambda: a.is_leader, "a leading")
        runners.append(gevent.spawn(b.run))
        wait_green(lambda: b.status.leader == "a", "b seeing a")
        assert not b.is_leader
        a.stop()
        runners[0].join(5)
        released = time.monotonic()
        assert a.release()
        wait_green(lambda: b.is_leader, "b leading")
        assert time.monotonic() - released < 3.0   # well before a's lease (3 s) would have expired
        assert _holder(kube) == "b"
    finally:
        a.stop()
        b.stop()
        gevent.joinall(runners, timeout=5)


def test_gate_without_election_is_open_for_its_epoch_only() -> None:
    gate = WriteGate()
    assert _refused(gate, 0)
    epoch = gate.open()
    gate.check(epoch)
    assert _refused(gate, 0)
    gate.close()
    assert _refused(gate, epoch)


def test_gate_closes_by_itself_at_the_deadline() -> None:
    clock = FakeClock()
    gate = WriteGate(clock)
    epoch = gate.open(clock.now + 10)
    clock.now += 9.99
    gate.check(epoch)
    clock.now += 0.01
    with pytest.raises(WriteRefused, match="renew deadline"):
        gate.check(epoch)
    gate.extend(clock.now + 10)
    gate.check(epoch)


def test_the_emulator_deletes_leases(kube: EmulatorRunner) -> None:
    from kubernetes import client
    api_client = api_client_for_url(kube.url)
    lock = LeaseLock(api_client, NS, NAME)
    lock.create(LeaseRecord("x", 15), 5.0)
    client.CoordinationV1Api(api_client).delete_namespaced_lease(NAME, NS)
    assert lock.get(5.0) is None


def test_release_after_a_renewal_it_did_not_see_land(kube: EmulatorRunner) -> None:
    a = _candidate(kube, "a")
    assert a.try_acquire_or_renew(5.0)
    # a renewal whose answer never came back: the Lease moved on, a's cached version is stale
    other = LeaseLock(api_client_for_url(kube.url), NS, NAME)
    found = other.get(5.0)
    assert found is not None
    other.update(found[0], 5.0)
    assert a.release()
    assert _holder(kube) == ""


def test_release_never_clears_another_holder(kube: EmulatorRunner) -> None:
    clock = FakeClock()
    a = _candidate(kube, "a")
    assert a.try_acquire_or_renew(5.0)
    b = _candidate(kube, "b", clock=clock)
    assert not b.try_acquire_or_renew(5.0)
    clock.now += 16
    assert b.try_acquire_or_renew(5.0)          # a's lease expired (a stalled), b took it
    assert not a.release()                      # a's stale version: 409, and the Lease is b's
    assert _holder(kube) == "b"
