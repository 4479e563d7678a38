"""Status in Kubernetes end to end (SPEC 15): `contrail-kube-manager run` (a real process) against the
emulated API server, which serves events.k8s.io/v1 Events and the ClusterNetworkPolicy status
subresource, and the embedded config API. What the tests read is what the emulator holds; waits
poll with deadlines, never sleep."""
from __future__ import annotations

from typing import Any, Dict, Iterator, List

import pytest

from kube_manager.offline.manifests import Manifests
from kube_manager.settings import ReconcilerSettings
from simulators.vnc_api.runner import BackgroundServer
from tests.support.builders import HTTP_8080, allow_from, cluster_policy, cnp_rule, namespace, namespace_named, pod, policy
from tests.support.e2e_support import DaemonProcess, Environment
from tests.support.status_support import (conditions, count_of, events, events_about, events_fault, reasons_about,
                                          status_writes)
from tests.support.waiting import DEADLINE, wait_until

BASE = Manifests({"Namespace": [namespace("shop", team="shop"), namespace("ops", team="ops")],
                  "Pod": [pod("shop", "web", "10.1.0.1", app="web", ports=HTTP_8080),
                       pod("shop", "api", "10.1.0.2", app="api", ports=HTTP_8080)], "NetworkPolicy": [policy("shop", "api-from-web", allow_from("web", "api", 8080))]})
BAD_CIDR = "10.9.0.0/33"


def with_bad_peer(name: str) -> Dict[str, Any]:
    """A NetworkPolicy whose second peer is rejected (SPEC 11: narrowest rejection)."""
    return policy("shop", name, {
        "podSelector": {"matchLabels": {"app": "api"}}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}, {"ipBlock": {"cidr": BAD_CIDR}}]}]})


def guard_shop(*rules: Dict[str, Any]) -> Dict[str, Any]:
    return cluster_policy("guard-shop", "Admin", 20, namespace_named("shop"), ingress=list(rules))


ACCEPT_OPS = cnp_rule("Accept", namespace_named("ops"), name="ops")
DENY_BAD_NETWORK = cnp_rule("Deny", {"networks": [BAD_CIDR]}, name="bad-network")


@pytest.fixture
def env() -> Iterator[Environment]:
    environment = Environment(BASE)
    yield environment
    environment.close()


def identity_of(daemon: DaemonProcess) -> str:
    return daemon.get("/Snh_LeaderElectionStatus?format=json")["identity"]


def record_of(daemon: DaemonProcess, name: str) -> Dict[str, Any]:
    """The page's record of NetworkPolicy `name`, or {} while its watch event has not arrived."""
    rows = daemon.get("/Snh_NetworkPolicyDatabaseList?format=json")["network_policies"]
    return next((row for row in rows if row["name"] == name), {})


def write_failures(env: Environment, daemon: DaemonProcess, name: str) -> List[Dict[str, Any]]:
    """The WriteFailed Events about NetworkPolicy `name` once each of its objects (its firewall
    policy and rules, every name refused) is parked and has one."""
    record = record_of(daemon, name)
    if not record:
        return []
    found = events_about(env, "NetworkPolicy", name, "WriteFailed")
    return found if len(record["errors"]) == len(found) == len(record["rules"]) + 1 else []


def resyncs(daemon: DaemonProcess) -> float:
    return daemon.metric("kube_manager_reconcile_duration_seconds_count", kind="resync")


def test_each_event_with_its_reason_and_regarding_object(env: Environment) -> None:
    daemon = env.start_daemon()
    env.wait_converged()
    assert events(env) == []  # a start over a valid cluster: nothing to say
    env.vnc.faults.refuse_creates("refused", 400, "Bad Request: the rule says no")
    env.apply(with_bad_peer("partly-bad"), policy("shop", "refused", allow_from("web", "api", 9090)))
    wait_until(lambda: reasons_about(env, "NetworkPolicy", "partly-bad") == ["InvalidPolicy", "Synced"],
               "InvalidPolicy and Synced about partly-bad")
    failed = wait_until(lambda: write_failures(env, daemon, "refused"), "a WriteFailed Event per parked object")
    identity = identity_of(daemon)
    uid = env.kube.store.get("networkpolicies", "shop", "partly-bad")["metadata"]["uid"]
    invalid, = events_about(env, "NetworkPolicy", "partly-bad", "InvalidPolicy")
    assert invalid["type"] == "Warning" and invalid["action"] == "Translate"
    assert invalid["regarding"] == {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                                    "namespace": "shop", "name": "partly-bad", "uid": uid}
    assert invalid["metadata"]["namespace"] == "shop"
    assert (invalid["reportingController"], invalid["reportingInstance"]) == ("contrail-kube-manager", identity)
    assert [invalid["note"]] == record_of(daemon, "partly-bad")["errors"] and BAD_CIDR in invalid["note"]
    synced, = events_about(env, "NetworkPolicy", "partly-bad", "Synced")
    assert synced["type"] == "Normal" and "generation 1" in synced["note"]
    assert {e["note"] for e in failed} == set(record_of(daemon, "refused")["errors"])  # as on the page
    assert all(e["type"] == "Warning" and e["action"] == "Write" and "the rule says no" in e["note"] for e in failed)
    assert not events_about(env, "NetworkPolicy", "refused", "Synced")  # not all of it is written
    # A ClusterNetworkPolicy's Events go to `default`.
    env.apply(guard_shop(ACCEPT_OPS, DENY_BAD_NETWORK))
    cnp_invalid = wait_until(lambda: events_about(env, "ClusterNetworkPolicy", "guard-shop", "InvalidPolicy"),
                             "InvalidPolicy about guard-shop")[0]
    assert cnp_invalid["metadata"]["namespace"] == "default" and "namespace" not in cnp_invalid["regarding"]
    assert cnp_invalid["regarding"]["uid"] == env.kube.store.get("clusternetworkpolicies", "", "guard-shop")["metadata"]["uid"]
    wait_until(lambda: daemon.metric("kube_manager_kubernetes_events_total", reason="InvalidPolicy") == 2,
               "the Events counted")


def test_a_repeated_write_failure_updates_the_series_of_one_event(env: Environment) -> None:
    daemon = env.start_daemon()
    env.wait_converged()
    env.vnc.faults.refuse_creates("refused", 400, "Bad Request: the rule says no")
    env.apply(policy("shop", "refused", allow_from("web", "api", 9090)))
    first = wait_until(lambda: write_failures(env, daemon, "refused"), "a WriteFailed Event per parked object")
    for expected in (2, 3):
        daemon.resync()  # a resync tries the parked objects again: refused again
        wait_until(lambda: [count_of(e) for e in events_about(env, "NetworkPolicy", "refused", "WriteFailed")]
                   == [expected] * len(first), f"the series counting {expected}")
    for event in events_about(env, "NetworkPolicy", "refused", "WriteFailed"):
        assert event["series"]["lastObservedTime"] > event["eventTime"]


def test_idle_resyncs_write_no_event_and_no_status(env: Environment) -> None:
    env.apply(with_bad_peer("partly-bad"), guard_shop(ACCEPT_OPS, DENY_BAD_NETWORK))
    daemon = env.start_daemon()
    env.wait_converged()
    wait_until(lambda: conditions(env, "guard-shop").get("Programmed", {}).get("status") == "True", "Programmed")
    wait_until(lambda: len(events(env)) == 2, "the two InvalidPolicy Events")
    before, writes = events(env), status_writes(env)
    for n in range(1, 4):
        daemon.resync()
        wait_until(lambda: resyncs(daemon) >= n + 1, f"resync {n}")
    # The outbox sends in order: once an Event queued after the resyncs is there, any the resyncs
    # had queued would be there too.
    env.apply(policy("shop", "later", allow_from("web", "api", 7070)))
    wait_until(lambda: events_about(env, "NetworkPolicy", "later", "Synced"), "Synced about later")
    assert [e for e in events(env) if e["regarding"]["name"] != "later"] == before
    assert status_writes(env) == writes
    assert daemon.metric("kube_manager_status_writes_total") == writes


def test_conditions_follow_the_generation_of_the_spec(env: Environment) -> None:
    env.start_daemon()
    env.wait_converged()
    env.apply(guard_shop(ACCEPT_OPS))

    def at(generation: int, accepted: str) -> bool:
        held = conditions(env, "guard-shop")
        return (held.get("Accepted", {}).get("reason") == accepted and held["Programmed"]["status"] == "True"
                and {c["observedGeneration"] for c in held.values()} == {generation})
    wait_until(lambda: at(1, "Accepted"), "accepted and programmed at generation 1")
    first = conditions(env, "guard-shop")
    env.apply(guard_shop(ACCEPT_OPS, DENY_BAD_NETWORK))
    assert env.kube.store.get("clusternetworkpolicies", "", "guard-shop")["metadata"]["generation"] == 2
    wait_until(lambda: at(2, "PartiallyInvalid"), "partly invalid and programmed at generation 2")
    second = conditions(env, "guard-shop")
    assert second["Accepted"]["status"] == "False" and "spec.ingress[1]" in second["Accepted"]["message"]
    assert first["Accepted"]["status"] == "True"
    # Another change of the spec that leaves it partly invalid: Accepted keeps its transition time.
    env.apply(dict(guard_shop(ACCEPT_OPS, DENY_BAD_NETWORK), spec={**guard_shop()["spec"], "priority": 30,
                                                                   "ingress": [ACCEPT_OPS, DENY_BAD_NETWORK]}))
    wait_until(lambda: at(3, "PartiallyInvalid"), "partly invalid and programmed at generation 3")
    third = conditions(env, "guard-shop")
    assert third["Accepted"]["lastTransitionTime"] == second["Accepted"]["lastTransitionTime"]
    held = env.kube.store.get("clusternetworkpolicies", "", "guard-shop")
    assert held["metadata"]["generation"] == 3  # the status writes left it alone


def test_an_events_api_that_refuses_delays_no_config_api_write(env: Environment) -> None:
    daemon = env.start_daemon()
    env.wait_converged()
    events_fault(env, "forbidden")
    env.apply(*[with_bad_peer(f"bad-{n}") for n in range(5)], policy("shop", "good", allow_from("web", "api", 81)))
    env.wait_converged()
    wait_until(lambda: daemon.metric("kube_manager_status_failures_total", target="event", reason="error") >= 5,
               "the refusals counted")
    assert events(env) == []
    daemon.wait_log("Kubernetes status write failed")


def test_an_events_api_that_hangs_delays_no_config_api_write(env: Environment) -> None:
    daemon = env.start_daemon()
    env.wait_converged()
    events_fault(env, "hang")
    env.apply(with_bad_peer("bad-0"))
    wait_until(lambda: env.kube.call(lambda store: store.events.requests) >= 1, "the outbox stuck on a request")
    env.apply(*[with_bad_peer(f"bad-{n}") for n in range(1, 5)], policy("shop", "good", allow_from("web", "api", 81)))
    env.wait_converged()
    # Everything is in the config API while the outbox is still waiting for its first answer.
    assert daemon.metric("kube_manager_status_failures_total", reason="timeout") == 0
    assert env.kube.call(lambda store: store.events.requests) == 1 and events(env) == []


def test_a_leader_that_cannot_read_the_config_api_says_so_and_flaps_nothing_then_the_right_conditions(
        env: Environment) -> None:
    env.apply(guard_shop(ACCEPT_OPS))
    first = env.start_daemon()
    env.wait_converged()
    wait_until(lambda: conditions(env, "guard-shop").get("Programmed", {}).get("status") == "True", "Programmed")
    assert first.stop() == 0  # hands the Lease over at once
    standing = conditions(env, "guard-shop")
    host, port, app = env.vnc.host, env.vnc.port, env.vnc.app
    env.vnc.stop()  # the config API refuses connections
    second = env.start_daemon()
    second.wait_log("initial lists done")  # what follows is a change, not what a start finds
    # In another tier than guard-shop's: a tier's objects are shared by its policies.
    guard_ops = cluster_policy("guard-ops", "Baseline", 30, namespace_named("ops"), ingress=[
        cnp_rule("Accept", namespace_named("shop"), name="shop")])
    env.apply(guard_ops, with_bad_peer("partly-bad"))

    def reason_of(name: str, kind: str) -> str:
        return conditions(env, name).get(kind, {}).get("reason", "")
    wait_until(lambda: reason_of("guard-ops", "Programmed") == "ConfigAPIUnreachable",
               "Programmed False while the config API cannot be read")
    meanwhile = conditions(env, "guard-ops")
    assert (meanwhile["Accepted"]["status"], meanwhile["Programmed"]["status"]) == ("True", "False")
    assert "VncConnectionError" in meanwhile["Programmed"]["message"]
    # What needs no config API is said at once; what does waits for it, and nothing flaps.
    wait_until(lambda: events_about(env, "NetworkPolicy", "partly-bad", "InvalidPolicy"), "InvalidPolicy")
    assert conditions(env, "guard-shop") == standing
    assert not events_about(env, "NetworkPolicy", "partly-bad", "Synced")

    env.vnc = BackgroundServer(app, host, port)  # back, with what it held
    # The start-up resync is tried again within its backoff's cap.
    wait_until(lambda: reason_of("guard-ops", "Programmed") == "Programmed", "guard-ops programmed",
               ReconcilerSettings().start_retry_cap + DEADLINE)
    env.wait_converged()
    wait_until(lambda: events_about(env, "NetworkPolicy", "partly-bad", "Synced"), "Synced about partly-bad")
    assert conditions(env, "guard-shop") == standing
    assert conditions(env, "guard-ops")["Accepted"] == meanwhile["Accepted"]


def test_a_standby_writes_no_event_and_no_status_and_a_new_leader_reports_what_stands() -> None:
    from tests.support.leader_support import ElectionRig
    rig = ElectionRig(Manifests({"Namespace": BASE.objects["Namespace"],
                                 "Pod": BASE.objects["Pod"],
                                 "NetworkPolicy": [with_bad_peer("partly-bad")]}))
    try:
        rig.env.apply(guard_shop(ACCEPT_OPS, DENY_BAD_NETWORK))
        first, second = rig.start(2)
        leader = rig.wait_single_leader()
        standby = second if leader is first else first
        rig.env.wait_converged()
        wait_until(lambda: {e["regarding"]["name"] for e in events(rig.env)} == {"partly-bad", "guard-shop"},
                   "the leader's InvalidPolicy Events")
        wait_until(lambda: conditions(rig.env, "guard-shop").get("Programmed", {}).get("status") == "True",
                   "the leader's conditions")
        writes = status_writes(rig.env)
        assert {e["reportingInstance"] for e in events(rig.env)} == {leader.identity}
        for name in ("kube_manager_kubernetes_events_total", "kube_manager_status_writes_total"):
            assert standby.process.metric(name) == 0
        wait_until(lambda: leader.process.metric("kube_manager_status_writes_total") == writes, "the writes counted")

        rig.kill(leader)
        rig.wait_single_leader(among=[standby])
        wait_until(lambda: {e["regarding"]["name"] for e in events(rig.env)
                            if e["reportingInstance"] == standby.identity} == {"partly-bad", "guard-shop"},
                   "the new leader reporting what stands")
        wait_until(lambda: standby.process.metric("kube_manager_kubernetes_events_total") == 2, "counted")
        # Its conditions are queued once its start-up resync is in, and the outbox sends in order:
        # once an Event queued after that resync is there, they have been read, compared with
        # those held and, being the same, not written again (nor a `Pending` meanwhile).
        wait_until(lambda: resyncs(standby.process) >= 1, "the new leader's start-up resync")
        rig.env.apply(policy("shop", "later", allow_from("web", "api", 7070)))
        wait_until(lambda: events_about(rig.env, "NetworkPolicy", "later", "Synced"), "Synced about later")
        assert status_writes(rig.env) == writes
    finally:
        rig.close()
