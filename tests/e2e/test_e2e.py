"""End to end over real HTTP: emulated Kubernetes API server -> `contrail-kube-manager run` (a real
process) -> embedded config API. Every check compares the config API with `translate` of the
cluster as it is at that moment (see tests/support/e2e_support.py)."""
from __future__ import annotations

import pytest

from kube_manager.offline.manifests import Manifests
from tests.support.e2e_support import BASE, Environment, monitoring
from tests.support.waiting import wait_until
from tests.support.builders import HTTP_8080, allow_from, namespace, pod, policy

def is_late(pod_: dict) -> bool:
    return pod_["metadata"]["name"].startswith("late-")


@pytest.fixture(scope="module")
def shared():
    """One environment and one daemon for the scenarios that need no restart (each check compares
    with `translate` of the cluster as it is, so the scenarios do not depend on each other)."""
    environment = Environment(BASE, late=is_late)
    daemon = environment.start_daemon()
    environment.wait_converged()
    yield environment, daemon
    assert daemon.stop() == 0  # SIGTERM: clean stop, status 0, within 10 s
    environment.close()
    assert environment.cni.failures == []


@pytest.fixture
def env():
    environment = Environment(BASE, late=is_late)
    yield environment
    environment.close()


def test_changes_to_policies_pods_and_labels_converge_to_translate(shared):
    env, daemon = shared
    # a new policy, then a pod it selects, created after it
    env.apply(policy("shop", "cache-from-api", allow_from("api", "cache", 6379)))
    env.wait_converged()
    env.apply(pod("shop", "cache", "10.1.0.3", app="cache", ports=HTTP_8080))
    env.wait_converged()
    # a changed policy, a pod's labels, a namespace's labels
    env.apply(policy("shop", "cache-from-api", allow_from("web", "cache", 6380)))
    env.apply(pod("shop", "api", "10.1.0.2", app="api", version="2", ports=HTTP_8080))
    env.wait_converged()
    env.apply(namespace("ops", team="shop-ops"), monitoring("shop-ops"))
    env.wait_converged()
    # deletions: a policy (its objects, and tags nothing else uses, go), a pod
    env.delete("NetworkPolicy", "shop", "cache-from-api")
    env.delete("Pod", "shop", "cache")
    env.wait_converged()
    assert env.vnc.api.lookup("tag", ["app=cache"]) is None

    def shown() -> dict:
        listed = daemon.get("/Snh_NetworkPolicyDatabaseList?format=json")["network_policies"]
        return {p["name"]: p["state"] for p in listed if p["namespace"] == "shop"}
    wait_until(lambda: shown().get("from-ops") == "synced" and "cache-from-api" not in shown(),
               "the introspect page showing the policies as synced")


def test_a_vmi_that_appears_late_is_shown_pending_then_tagged(shared):
    env, daemon = shared
    late = pod("shop", "late-worker", "10.1.0.9", app="api", ports=HTTP_8080)
    env.apply(late)

    def shown_without_vm() -> bool:
        pods = daemon.get("/Snh_PodDatabaseList?format=json")["pods"]
        return any(p["name"] == "late-worker" and p["vmi_state"] == "no-vm" for p in pods)
    wait_until(shown_without_vm, "the pod shown as waiting for its VM")
    assert any("late-worker" in p for p in env.problems())
    env.cni.attach(env.kube.store.get("pods", "shop", "late-worker"))
    env.wait_converged()


def test_restart_with_nothing_changed_makes_zero_writes(env):
    first = env.start_daemon()
    env.wait_converged()
    assert first.stop() == 0
    env.vnc.counters.reset()
    second = env.start_daemon("--once")
    assert second.wait_exit(60) == 0, "\n".join(second.log()[-20:])
    assert env.vnc.counters.writes() == 0
    assert env.vnc.counters.count() > 0  # it did look: one listing per type
    assert env.problems() == []


def test_a_rule_deleted_by_hand_comes_back_at_the_next_resync(shared):
    env, daemon = shared
    env.apply(policy("shop", "drift", allow_from("web", "api", 7000)))
    env.wait_converged()
    api = env.vnc.api
    pm = "default-policy-management"
    rule = api.lookup("firewall-rule", [pm, "k8s-shop-ingress-drift-0-podSelector-0-0"])
    fwp = api.lookup("firewall-policy", [pm, "k8s-shop-drift"])
    api.update("firewall-policy", fwp.uuid, {"firewall_rule_refs": []})
    api.delete("firewall-rule", rule.uuid)
    assert env.problems() != []
    daemon.resync()
    env.wait_converged()  # nothing but the resync compares the config API with what is desired
    restored = api.lookup("firewall-rule", [pm, "k8s-shop-ingress-drift-0-podSelector-0-0"])
    assert restored is not None and restored.uuid != rule.uuid  # written again, not left deleted
    refs = api.read("firewall-policy", fwp.uuid, hrefs=False)["firewall_rule_refs"]
    assert restored.uuid in [ref["uuid"] for ref in refs]
    assert env.problems() == []


def test_a_watch_that_gets_410_relists_and_loses_no_event(shared):
    env, daemon = shared

    env.apply(pod("ops", "relist-me", "10.2.0.5", app="monitor", ports=HTTP_8080))
    env.wait_converged()

    def change_while_disconnected_then_expire(store) -> None:  # one step in the emulator's loop
        store.drop_watches()     # the watches reconnect from the last version they saw...
        store.apply(policy("shop", "relisted", allow_from("api", "web", 81)))
        store.delete("pods", "ops", "relist-me")
        store.compact()          # ...which is now too old: 410 Gone, re-list
    env.kube.call(change_while_disconnected_then_expire)
    env.wait_converged()
    wait_until(lambda: 'reason="expired"' in daemon.get("/metrics"), "a 410 re-list counted")


def test_config_api_errors_and_dropped_connections_delay_but_lose_nothing(shared):
    env, daemon = shared
    env.apply(pod("shop", "batch", "10.1.0.7", app="batch", ports=HTTP_8080), policy("shop", "doomed", allow_from("batch", "web")))
    env.wait_converged()  # the CNI (in this process) shares the server: let it finish first
    before = env.vnc.counters.statuses()
    env.vnc.faults.fail_next(10)   # a burst of 503s...
    env.vnc.faults.drop_next(5)    # ...then connections closed without an answer
    env.vnc.faults.fail_next(6, status=502)
    try:
        env.apply(policy("shop", "web-from-api", allow_from("api", "web", 80)),
                  policy("shop", "batch-egress", {"podSelector": {"matchLabels": {"app": "batch"}},
                                                  "policyTypes": ["Egress"], "egress": [{}]}),
                  pod("shop", "batch", "10.1.0.7", app="batch", tier="low", ports=HTTP_8080))
        env.delete("NetworkPolicy", "shop", "doomed")

        def faults_served() -> bool:
            now = env.vnc.counters.statuses()
            return sum(now.get(s, 0) - before.get(s, 0) for s in (0, 502, 503)) >= 21
        wait_until(faults_served, "every injected fault served to the daemon")
        env.wait_converged(timeout=60)
    finally:
        env.vnc.faults.clear()


def test_an_invalid_policy_is_reported_and_everything_else_converges(shared):
    env, daemon = shared
    bad_whole = policy("shop", "bad-selector", {
        "podSelector": {"matchExpressions": [{"key": "app", "operator": "Sometimes"}]},
        "ingress": [{}]})
    bad_part = policy("shop", "bad-cidr", {
        "podSelector": {"matchLabels": {"app": "web"}},
        "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}, {"podSelector": {}}]}]})
    env.apply(bad_whole, bad_part, policy("shop", "good", allow_from("web", "api", 9090)))
    env.wait_converged()

    def reported():
        listed = {p["name"]: p for p in daemon.get("/Snh_NetworkPolicyDatabaseList?format=json")["network_policies"]}
        return listed if {"bad-selector", "bad-cidr", "good"} <= set(listed) else None
    listed = wait_until(reported, "the policies on the introspect page")
    assert listed["bad-selector"]["state"] == "rejected" and listed["bad-selector"]["errors"]
    assert any("10.0.0.0/33" in e for e in listed["bad-cidr"]["errors"])
    assert not listed["good"]["errors"]


def test_a_host_network_pod_is_never_tagged_and_once_still_exits_0():
    node_agent = pod("ops", "node-agent", "192.168.0.10", app="monitor", ports=HTTP_8080)
    node_agent["spec"]["hostNetwork"] = True  # the CNI never gives it a VM
    manifests = Manifests({"Namespace": BASE.objects["Namespace"],
                           "Pod": BASE.objects["Pod"] + [node_agent],
                           "NetworkPolicy": BASE.objects["NetworkPolicy"]})
    environment = Environment(manifests, late=lambda p: bool(p["spec"].get("hostNetwork")))
    try:
        daemon = environment.start_daemon("--once")
        assert daemon.wait_exit(60) == 0, "\n".join(daemon.log()[-20:])
        converged = [line for line in daemon.log() if "msg=converged" in line]
        assert converged and f"tagged={len(BASE.objects['Pod'])} " in converged[0]
    finally:
        environment.close()
