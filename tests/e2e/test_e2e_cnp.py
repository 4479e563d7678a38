"""ClusterNetworkPolicies end to end over real HTTP: emulated API server (with or without the CRD)
-> `contrail-kube-manager run` (a real process) -> embedded config API. After each step the config
API must equal `translate` of the same manifests (tests/support/e2e_support.py); waits poll with deadlines
(the config API, the introspect JSON), never sleep, never read the log."""
from __future__ import annotations

from typing import Any, Dict, List

import pytest

from tests.support.builders import HTTP_8080, cluster_policy, namespace, pod
from kube_manager.offline.manifests import Manifests
from tests.support.e2e_support import Environment
from tests.support.waiting import wait_until

NAME = "kubernetes.io/metadata.name"
NS = [namespace("shop", team="shop"), namespace("ops", team="ops"), namespace("tenant", team="tenant")]
PODS = [pod("shop", "web", "10.1.0.1", app="web", ports=HTTP_8080),
        pod("ops", "monitor", "10.2.0.1", app="monitor", ports=HTTP_8080),
        pod("tenant", "client", "10.3.0.1", app="client", ports=HTTP_8080)]
BASE = Manifests({"Namespace": NS, "Pod": PODS})
SHOP = {"namespaces": {"matchLabels": {"team": "shop"}}}


def team(name: str) -> Dict[str, Any]:
    return {"namespaces": {"matchLabels": {"team": name}}}


PASS_OPS = {"name": "ops-decides", "action": "Pass", "from": [team("ops")]}
ACCEPT_TENANT_HTTP = {"name": "tenant-http", "action": "Accept", "from": [team("tenant")],
                      "protocols": [{"destinationNamedPort": "http"}]}
DENY_ALL = {"name": "no-one-else", "action": "Deny", "from": [{"namespaces": {}}]}


def protect_shop(priority: int, ingress: List[Dict[str, Any]]) -> Dict[str, Any]:
    return cluster_policy("protect-shop", "Admin", priority, SHOP, ingress=ingress)


def cluster_policies(daemon: Any) -> Dict[str, Dict[str, Any]]:
    rows = daemon.get("/Snh_ClusterNetworkPolicyDatabaseList?format=json")["cluster_network_policies"]
    return {row["name"]: row for row in rows}


def served(daemon: Any) -> bool:
    rows = daemon.get("/Snh_KubeApiConnectionStatus?format=json")["kube_api_connections"]
    return next(row["served"] for row in rows if row["name"] == "clusternetworkpolicies")


@pytest.fixture
def env():
    environment = Environment(BASE)
    yield environment
    environment.close()


def test_a_cluster_network_policy_created_changed_and_deleted_converges_to_translate(env):
    daemon = env.start_daemon()
    env.wait_converged()
    # created: a Pass, an Accept on a named port, then a Deny of everyone else
    env.apply(protect_shop(10, [PASS_OPS, ACCEPT_TENANT_HTTP, DENY_ALL]))
    env.wait_converged()
    assert env.vnc.api.lookup("firewall-policy", ["default-policy-management", "k8s--admin"])
    wait_until(lambda: cluster_policies(daemon).get("protect-shop", {}).get("state") == "synced",
               "the introspect page showing it synced")
    row = cluster_policies(daemon)["protect-shop"]
    assert (row["tier"], row["priority"], row["errors"]) == ("Admin", 10, [])
    assert [a["action"] for a in row["actions"]] == ["Pass", "Accept", "Deny"] and row["rules"]
    # rules swapped: the Deny first (it now shadows the Accept and the Pass)
    env.apply(protect_shop(10, [DENY_ALL, ACCEPT_TENANT_HTTP, PASS_OPS]))
    env.wait_converged()
    # a Pass moved: after the Accept, before the Deny
    env.apply(protect_shop(10, [ACCEPT_TENANT_HTTP, PASS_OPS, DENY_ALL]))
    env.wait_converged()
    # priority changed: behind another Admin policy that now decides first, and a Baseline default deny
    env.apply(cluster_policy("ops-monitoring", "Admin", 50, SHOP,
                             ingress=[{"action": "Accept", "from": [team("ops")]}]),
              cluster_policy("baseline-deny", "Baseline", 10, {"namespaces": {}},
                             ingress=[{"action": "Deny", "from": [{"namespaces": {}}]}]))
    env.wait_converged()
    env.apply(protect_shop(900, [ACCEPT_TENANT_HTTP, PASS_OPS, DENY_ALL]))
    env.wait_converged()
    wait_until(lambda: cluster_policies(daemon).get("protect-shop", {}).get("priority") == 900,
               "the new priority on the introspect page")
    # deleted: its objects go, the others stay
    env.delete("ClusterNetworkPolicy", "", "protect-shop")
    env.wait_converged()
    assert env.vnc.api.lookup("firewall-policy", ["default-policy-management", "k8s--admin"])  # ops-monitoring's
    assert env.vnc.api.lookup("firewall-policy", ["default-policy-management", "k8s--baseline"])
    wait_until(lambda: set(cluster_policies(daemon)) == {"ops-monitoring", "baseline-deny"},
               "the deleted policy gone from the introspect page")
    assert daemon.stop() == 0


def test_a_malformed_one_is_rejected_alone_and_the_rest_converges(env):
    daemon = env.start_daemon()
    env.apply(cluster_policy("bad", "Middle", 10), protect_shop(10, [DENY_ALL]))
    env.wait_converged()  # `translate` rejects the bad one too: the good one is enforced
    wait_until(lambda: cluster_policies(daemon).get("bad", {}).get("state") == "rejected",
               "the rejected policy on the introspect page")
    assert "Middle" in cluster_policies(daemon)["bad"]["errors"][0]
    assert cluster_policies(daemon)["protect-shop"]["errors"] == []


def test_a_daemon_started_without_the_crd_picks_it_up_at_a_resync():
    env = Environment(BASE, crds=[])
    try:
        daemon = env.start_daemon()  # kube_timer_interval = 3600: only SIGHUP resyncs
        env.wait_converged()
        wait_until(lambda: served(daemon) is False, "the connection page saying not served")
        assert daemon.get("/readyz?format=json")["status"] == "ok"  # an absent CRD holds nothing up
        env.kube.store.install_crd("clusternetworkpolicies")
        env.apply(protect_shop(10, [PASS_OPS, DENY_ALL]))
        daemon.resync()
        env.wait_converged()
        assert env.vnc.api.lookup("firewall-policy", ["default-policy-management", "k8s--admin"])
        wait_until(lambda: served(daemon) is True, "the connection page saying served")
        env.apply(protect_shop(10, [DENY_ALL]))  # watched from then on: no resync needed
        env.wait_converged()
        # The CRD removed (its objects deleted with it, as the API server does): their Contrail
        # objects go, the resource is absent again, and nothing else is disturbed.
        env.kube.store.uninstall_crd("clusternetworkpolicies")
        env.wait_converged()
        assert env.vnc.api.lookup("firewall-policy", ["default-policy-management", "k8s--admin"]) is None
        wait_until(lambda: served(daemon) is False, "the connection page saying not served again")
        assert daemon.stop() == 0
    finally:
        env.close()
