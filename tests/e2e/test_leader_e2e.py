"""Several daemons (real processes) against one emulated API server and one config API, election on
with short timings (lease 3 s, renew deadline 2 s, retry 0.5 s): exactly one leader, no write at all
from a standby, failover after SIGKILL within lease duration + 2 retry periods, handover on SIGTERM
within about one retry period, and a leader whose Lease updates fail stopping its writes before its
renew deadline passes. The config API server counts writes per daemon (User-Agent)."""
from __future__ import annotations

import threading
from typing import Iterator, List

import pytest

from kube_manager.offline.manifests import Manifests
from tests.support.waiting import wait_until
from tests.support.leader_support import SHORT, ElectionRig, log_time, parse_time
from tests.support.builders import HTTP_8080, allow_from, namespace, pod, policy
from vnc_client.transport import USER_AGENT

BASE = Manifests({"Namespace": [namespace("shop", team="shop")],
                  "Pod": [pod("shop", "web", "10.1.0.1", app="web", ports=HTTP_8080), pod("shop", "api", "10.1.0.2", app="api", ports=HTTP_8080)],
                  "NetworkPolicy": [policy("shop", "api-from-web", allow_from("web", "api", 8080))]})


SEND_MARGIN = 0.2  # a request the gate passed just before the deadline, slowed by a loaded machine


@pytest.fixture
def rig() -> Iterator[ElectionRig]:
    election = ElectionRig(BASE, SHORT)
    yield election
    election.close()


def _standbys_wrote(rig: ElectionRig, standbys: List) -> dict:
    return {c.identity: rig.writes_of(c) for c in standbys if rig.writes_of(c)}


def test_two_daemons_one_leader_a_silent_standby_and_failover_on_sigkill(rig: ElectionRig) -> None:
    first, second = rig.start(2)
    leader = rig.wait_single_leader()
    standby = second if leader is first else first
    rig.env.wait_converged()
    status = wait_until(lambda: standby.status()["leader"] and standby.status(), "the standby seeing the leader")
    assert status["enabled"] and not status["is_leader"] and status["leader"] == leader.identity
    assert standby.readiness_line() == f"[+]leader-election ok: standby (leader: {leader.identity})"
    wait_until(lambda: standby.ready(), "the standby ready")  # it serves, with the config API reachable
    assert "kube_manager_leader_is_leader 0.0" in standby.process.get("/metrics")
    assert "kube_manager_leader_is_leader 1.0" in leader.process.get("/metrics")
    # the standby keeps its translation warm: it knows the policy the leader wrote
    assert standby.process.get("/Snh_NetworkPolicyDatabaseList?format=json")["network_policies"]

    rig.env.apply(policy("shop", "web-from-api", allow_from("api", "web", 80)))
    rig.env.wait_converged()
    assert rig.writes_of(leader) > 0
    assert _standbys_wrote(rig, [standby]) == {}

    killed_at = rig.kill(leader)
    rig.env.apply(policy("shop", "db-from-api", allow_from("api", "db", 5432)))  # while nobody leads
    took_over_at = rig.takeover_by(standby)
    assert took_over_at - killed_at <= SHORT.lease + 2 * SHORT.retry
    assert rig.lease()["leaseTransitions"] == 1
    rig.env.wait_converged()  # the new leader's start-up resync wrote what changed meanwhile
    wait_until(lambda: standby.process.metric("kube_manager_leader_is_leader") == 1, "the standby leading")
    assert rig.writes_of(standby) > 0


def test_three_daemons_exactly_one_leader_and_zero_writes_from_standbys(rig: ElectionRig) -> None:
    candidates = rig.start(3)
    leader = rig.wait_single_leader()
    rig.env.wait_converged()
    for n in range(3):
        rig.env.apply(policy("shop", f"extra-{n}", allow_from("web", "api", 9000 + n)))
    rig.env.wait_converged()
    standbys = [c for c in candidates if c is not leader]
    wait_until(lambda: all(c.status()["leader"] for c in standbys), "the standbys seeing the leader")
    assert [c.status()["leader"] for c in standbys] == [leader.identity] * 2
    assert len(rig.leaders()) == 1
    assert _standbys_wrote(rig, standbys) == {}

    rig.kill(leader)
    successor = rig.wait_single_leader(among=standbys)
    rig.env.apply(policy("shop", "after-failover", allow_from("api", "web", 81)))
    rig.env.wait_converged()
    remaining = [c for c in standbys if c is not successor]
    assert len(rig.leaders()) == 1
    assert _standbys_wrote(rig, remaining) == {}
    wait_until(lambda: remaining[0].status()["leader"] == successor.identity, "the last standby seeing the successor")
    assert not remaining[0].status()["is_leader"] and _standbys_wrote(rig, remaining) == {}


def test_sigterm_hands_over_within_about_one_retry_period(rig: ElectionRig) -> None:
    first, second = rig.start(2)
    leader = rig.wait_single_leader()
    standby = second if leader is first else first
    rig.env.wait_converged()
    rig.terminate(leader)
    took_over_at = rig.takeover_by(standby)
    released_at = log_time(leader.process.wait_log("lease released"))  # logged once the release was written
    assert took_over_at - released_at <= 2 * SHORT.retry
    assert rig.lease()["leaseTransitions"] == 1


def test_a_leader_whose_lease_updates_fail_stops_writing_before_its_renew_deadline(rig: ElectionRig) -> None:
    first, second = rig.start(2)
    leader = rig.wait_single_leader()
    standby = second if leader is first else first
    rig.env.wait_converged()
    writes_before = rig.writes_of(leader)
    rig.env.kube.call(lambda store: store.leases.fail_writes_from(leader.identity, "error"))
    # Keep giving the leader work while its renewals fail: it writes until its deadline, never after.
    stop = threading.Event()

    def churn() -> None:
        n = 0
        while not stop.is_set():
            rig.env.apply(policy("shop", f"churn-{n % 5}", allow_from("web", "api", 7000 + n)))
            n += 1
            stop.wait(0.05)
    churner = threading.Thread(target=churn, daemon=True)
    churner.start()
    try:
        wait_until(lambda: not leader.status()["is_leader"], "the leader stepping down", 2 * SHORT.lease)
        last_renewal = parse_time(rig.lease()["renewTime"])  # the last one that succeeded (the fault refused the rest)
        assert rig.lease()["holderIdentity"] == leader.identity
        writes_at_step_down = rig.writes_of(leader)
        rig.takeover_by(standby)
    finally:
        stop.set()
        churner.join(5)
    rig.env.wait_converged()
    last_write = rig.last_write_of(leader)
    assert writes_at_step_down > writes_before  # it kept writing while its term lasted
    # Arrival at the server: the gate let the request go before the deadline; getting there takes a little.
    assert last_write is not None and last_write <= last_renewal + SHORT.renew + SEND_MARGIN
    assert rig.writes_of(leader) == writes_at_step_down  # and nothing once the standby took over
    assert rig.writes_of(standby) > 0
    assert any("leadership lost, writes stopped" in line for line in leader.process.log())


def test_run_once_beside_a_leader_stands_by_writes_nothing_and_names_the_leader(rig: ElectionRig) -> None:
    (leader,) = rig.start(1)
    rig.wait_single_leader()
    rig.env.wait_converged()
    # long enough to get past the initial lists on a loaded machine, so that what the line names is
    # the leadership, not a slow start; the leader renews well within it
    once = rig.env.start_daemon("--once", "--once-timeout", "8", *SHORT.args())
    assert once.wait_exit(60) == 1
    started = once.wait_log("leader election started")
    identity = started.split("identity=", 1)[1].split()[0]
    line = once.wait_log("not converged")
    assert f"this instance is not the leader (leader: {leader.identity})" in line, line
    assert rig.writes().get(f"{USER_AGENT} {identity}", 0) == 0
    assert rig.holder() == leader.identity


def test_a_leader_that_lost_its_term_starts_a_new_one_with_a_resync(rig: ElectionRig) -> None:
    (daemon,) = rig.start(1)
    rig.wait_single_leader()
    rig.env.wait_converged()
    rig.env.kube.call(lambda store: store.leases.fail_writes_from(daemon.identity, "hang"))
    wait_until(lambda: not daemon.status()["is_leader"], "stepping down", 2 * SHORT.lease)
    stepped_down = rig.writes_of(daemon)
    rig.env.apply(policy("shop", "while-standing-by", allow_from("api", "web", 443)))

    def translated() -> bool:  # the standby saw the event and keeps its translation warm
        rows = daemon.process.get("/Snh_NetworkPolicyDatabaseList?format=json")["network_policies"]
        return any(row["name"] == "while-standing-by" and row["rules"] for row in rows)
    wait_until(translated, "the standby translating the new policy")
    assert rig.env.problems() != []
    assert rig.writes_of(daemon) == stepped_down      # nothing written while it stands by
    rig.env.kube.call(lambda store: store.leases.clear_faults())
    wait_until(lambda: daemon.status()["is_leader"], "leading again", 4 * SHORT.lease)
    rig.env.wait_converged()                          # the new term's start-up resync
    assert daemon.status()["transitions"] == 3
    assert "kube_manager_leader_transitions_total 3.0" in daemon.process.get("/metrics")
    assert sum("leading: start-up resync" in line for line in daemon.process.log()) == 2
