"""What the daemon writes to a real kube-apiserver about its policies (SPEC 15), as the restricted
identity: Events (`Synced`, `InvalidPolicy`, `WriteFailed` and its series) and ClusterNetworkPolicy conditions through
`/status` with `observedGeneration`, all accepted by the real validation (no 4xx in the daemon's
log); and the policies a real server refuses at admission shown refused there."""
from __future__ import annotations

from typing import Any, Dict, Iterator, List

import pytest
from kubernetes.client.rest import ApiException

from tests.support.builders import HTTP_8080, allow_from, cluster_policy, namespace, pod, policy
from tests.support.control_plane_support import RealKube
from tests.support.real_cluster import RealCluster, client_errors, unique
from tests.support.waiting import wait_until

CONVERGE = 60.0


@pytest.fixture
def cluster(real_kube: RealKube) -> Iterator[RealCluster]:
    made = RealCluster(real_kube)
    yield made
    made.close()


def shop(cluster: RealCluster) -> str:
    name = unique("shop")
    cluster.apply(namespace(name, team=name), pod(name, "web", "10.1.0.1", app="web", ports=HTTP_8080),
                  pod(name, "api", "10.1.0.2", app="api", ports=HTTP_8080))
    return name


def count_of(event: Dict[str, Any]) -> int:
    return int((event.get("series") or {}).get("count", 1))


def test_synced_and_write_failed_events_and_their_series(cluster: RealCluster) -> None:
    ns = shop(cluster)
    daemon = cluster.start_daemon()
    cluster.wait_converged(CONVERGE)
    cluster.apply(policy(ns, "fine", allow_from("web", "api", 8080)))
    synced = wait_until(lambda: cluster.events_about("NetworkPolicy", "fine", "Synced"), "Synced about fine",
                        CONVERGE)[0]
    uid = cluster.read("networkpolicies", ns, "fine")["metadata"]["uid"]
    assert synced["regarding"] == {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                                   "namespace": ns, "name": "fine", "uid": uid}
    assert synced["metadata"]["namespace"] == ns and synced["type"] == "Normal"
    cluster.vnc.faults.refuse_creates("refused", 400, "Bad Request: the rule says no")
    cluster.apply(policy(ns, "refused", allow_from("web", "api", 9090)))
    first: List[Dict[str, Any]] = wait_until(
        lambda: cluster.events_about("NetworkPolicy", "refused", "WriteFailed"), "WriteFailed about refused", CONVERGE)
    assert all(e["type"] == "Warning" and "the rule says no" in e["note"] for e in first)
    for expected in (2, 3):
        daemon.resync()  # a resync tries the parked objects again: refused again, the series counts
        wait_until(lambda: {count_of(e) for e in cluster.events_about("NetworkPolicy", "refused", "WriteFailed")}
                   == {expected}, f"the series counting {expected}", CONVERGE)
    for event in cluster.events_about("NetworkPolicy", "refused", "WriteFailed"):
        assert event["series"]["lastObservedTime"] >= event["eventTime"]
    assert daemon.metric("kube_manager_status_failures_total") == 0
    assert daemon.stop() == 0
    assert client_errors(daemon.log()) == []


def test_invalid_policy_event_for_a_part_the_real_server_admits(cluster: RealCluster) -> None:
    """A named port no selected pod declares passes admission; kube-manager rejects that part, and
    the real validation accepts its InvalidPolicy Event."""
    ns = shop(cluster)
    daemon = cluster.start_daemon()
    cluster.wait_converged(CONVERGE)
    cluster.apply(policy(ns, "unnamed", {"podSelector": {"matchLabels": {"app": "api"}},
                                         "ingress": [{"ports": [{"port": "no-such-port"}]}]}))
    invalid = wait_until(lambda: cluster.events_about("NetworkPolicy", "unnamed", "InvalidPolicy"),
                         "InvalidPolicy about unnamed", CONVERGE)
    assert len(invalid) == 1 and invalid[0]["type"] == "Warning"
    assert "named port 'no-such-port' (TCP) resolves on no selected pod" in invalid[0]["note"]
    assert invalid[0]["regarding"]["uid"] == cluster.read("networkpolicies", ns, "unnamed")["metadata"]["uid"]
    assert daemon.stop() == 0
    assert client_errors(daemon.log()) == []


def guard(name: str, team: str, priority: int) -> Dict[str, Any]:
    return cluster_policy(name, "Admin", priority, {"namespaces": {"matchLabels": {"team": team}}},
                          ingress=[{"name": "ops", "action": "Accept",
                                    "from": [{"namespaces": {"matchLabels": {"team": "ops"}}}]}])


def test_conditions_through_status_follow_the_generation(cluster: RealCluster) -> None:
    ns = shop(cluster)
    name = unique("guard")
    daemon = cluster.start_daemon()
    cluster.wait_converged(CONVERGE)
    cluster.apply(guard(name, ns, 20))

    def at(generation: int) -> bool:
        held = cluster.read("clusternetworkpolicies", None, name)
        found = {c["type"]: c for c in (held.get("status") or {}).get("conditions") or []}
        return (held["metadata"]["generation"] == generation and found.get("Programmed", {}).get("status") == "True"
                and found.get("Accepted", {}).get("status") == "True"
                and {c["observedGeneration"] for c in found.values()} == {generation})
    wait_until(lambda: at(1), "accepted and programmed at generation 1", CONVERGE)
    cluster.apply(guard(name, ns, 30))
    wait_until(lambda: at(2), "accepted and programmed at generation 2", CONVERGE)
    cluster.wait_converged(CONVERGE)
    assert cluster.read("clusternetworkpolicies", None, name)["metadata"]["generation"] == 2  # status left it
    assert daemon.stop() == 0
    assert client_errors(daemon.log()) == []


@pytest.mark.parametrize("rule, field", [
    ({"ports": [{"protocol": "tcp", "port": 80}]}, "spec.ingress[0].ports[0].protocol"),
    ({"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}, "spec.ingress[0].from[0].ipBlock.cidr"),
])
def test_what_a_real_server_refuses_at_admission(cluster: RealCluster, rule: Dict[str, Any], field: str) -> None:
    """The demo's robustness examples never reach the daemon from a real cluster: 422 at admission."""
    body = policy("default", unique("refused"), {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [rule]})
    with pytest.raises(ApiException) as refused:
        cluster.net.create_namespaced_network_policy("default", {k: body[k] for k in ("apiVersion", "kind", "spec")}
                                                     | {"metadata": {"name": body["metadata"]["name"]}})
    assert refused.value.status == 422 and field in refused.value.body
