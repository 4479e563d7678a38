"""SPEC 7 and 11 end to end: a real `contrail-kube-manager run` process against the emulated API
server and the embedded config API. A poisoned NetworkPolicy in the initial list (the
`policyTypes: [["Ingress"]]` that once stalled the daemon) and poisoned objects in watch events
are rejected with their reasons on the introspect page, and everything else converges to
`translate` of the cluster."""
from __future__ import annotations

from kube_manager.offline.manifests import Manifests
from tests.support.e2e_support import Environment
from tests.support.waiting import wait_until
from tests.support.builders import HTTP_8080, allow_from, namespace, pod, policy

BAD_TYPES = policy("shop", "bad-types", {"podSelector": {}, "policyTypes": [["Ingress"]]})
BAD_TYPES_REASON = "spec.policyTypes[0]: expected a string, got list; the policy is rejected whole"
CLUSTER = Manifests({"Namespace": [namespace("shop", team="shop"), namespace("ops", team="ops")],
                     "Pod": [pod("shop", "web", "10.1.0.1", app="web", ports=HTTP_8080), pod("shop", "api", "10.1.0.2", app="api", ports=HTTP_8080)],
                     "NetworkPolicy": [policy("shop", "api-from-web", allow_from("web", "api", 8080)), BAD_TYPES,
                      policy("ops", "deny-all", {"podSelector": {}})]})


def shown_policies(daemon, wanted):
    def listed():
        found = {p["name"]: p for p in daemon.get("/Snh_NetworkPolicyDatabaseList?format=json")["network_policies"]}
        return found if all(found.get(name, {}).get("state") == state for name, state in wanted.items()) else None
    return wait_until(listed, f"introspect states {wanted}")


def test_poisoned_objects_in_the_initial_list_and_in_watch_events_are_rejected_and_the_rest_converges():
    env = Environment(CLUSTER)
    try:
        daemon = env.start_daemon()
        env.wait_converged()
        shown = shown_policies(daemon, {"bad-types": "rejected", "api-from-web": "synced", "deny-all": "synced"})
        assert shown["bad-types"]["errors"] == [BAD_TYPES_REASON]
        assert shown["bad-types"]["firewall_policy"] == [] and shown["api-from-web"]["errors"] == []
        lines = [line for line in daemon.log() if "name=bad-types" in line]
        assert len(lines) == 1 and "kind=NetworkPolicy" in lines[0] and "namespace=shop" in lines[0]

        odd = pod("shop", "odd", "10.1.0.9", app="web", ports=HTTP_8080)
        odd["metadata"]["labels"] = ["app=web"]
        env.apply(policy("shop", "bad-selector", {"podSelector": "app=web", "ingress": [{}]}), odd,
                  policy("shop", "bad-port", {"podSelector": {"matchLabels": {"app": "api"}},
                                              "ingress": [{"ports": [{"port": {"number": 80}}, {"port": 443}]}]}),
                  policy("shop", "after", allow_from("api", "web", 9090)))
        env.wait_converged()
        shown = shown_policies(daemon, {"bad-selector": "rejected", "bad-port": "rejected", "after": "synced"})
        assert shown["bad-selector"]["errors"] == [
            "spec.podSelector: expected an object, got str; the policy is rejected whole"]
        assert shown["bad-port"]["errors"] == [
            "spec.ingress[0].ports[0].port: expected an integer or a string, got dict; the port is ignored"]
        assert shown["bad-port"]["rules"] == ["k8s-shop-ingress-bad-port-0-allow-all-0",  # the good port stays
                                              "k8s-shop-ingress-bad-port-denyall"]
        page = daemon.get("/Snh_NetworkPolicyDatabaseList")  # every rejection, pods included
        assert "odd" in page and "metadata.labels: expected an object, got list" in page
        assert daemon.stop() == 0
    finally:
        env.close()
