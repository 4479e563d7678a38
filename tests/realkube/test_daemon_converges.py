"""The daemon against a real kube-apiserver (SPEC 16), as the restricted identity of etc/rbac.yaml:
it converges equal to `translate` of what the real server holds, follows creates, updates and
deletes, and the server answers none of its requests with a 4xx. Pods are created through the real
API and get their IPs through their status, as a kubelet sets them (tests/support/real_cluster.py).
The same scenario runs against the emulator (tests/support/e2e_support.py): one behaviour, two
servers."""
from __future__ import annotations

from typing import Iterator, Union

import pytest

from kube_manager.offline.manifests import Manifests

from tests.support.builders import HTTP_8080, allow_from, cluster_policy, namespace, pod, policy
from tests.support.e2e_support import Environment
from tests.support.real_cluster import RealCluster, client_errors, unique

CONVERGE = 60.0  # seconds: a loaded 2-core machine, a real server


@pytest.fixture(params=["real", "emulator"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Union[RealCluster, Environment]]:
    made: Union[RealCluster, Environment] = (RealCluster(request.getfixturevalue("real_kube"))
                                             if request.param == "real" else Environment(Manifests()))
    yield made
    made.close()


def test_converges_then_follows_creates_updates_and_deletes(cluster: Union[RealCluster, Environment]) -> None:
    shop, ops = unique("shop"), unique("ops")
    cluster.apply(namespace(shop, team="shop"), namespace(ops, team="ops"),
                  pod(shop, "web", "10.1.0.1", app="web", ports=HTTP_8080),
                  pod(shop, "api", "10.1.0.2", app="api", ports=HTTP_8080),
                  pod(ops, "monitor", "10.2.0.1", app="monitor", ports=HTTP_8080),
                  policy(shop, "api-from-web", allow_from("web", "api", 8080)),
                  cluster_policy(unique("guard"), "Admin", 20, {"namespaces": {"matchLabels": {"team": "shop"}}},
                                 ingress=[{"name": "ops", "action": "Accept",
                                           "from": [{"namespaces": {"matchLabels": {"team": "ops"}}}]}]))
    daemon = cluster.start_daemon()
    cluster.wait_converged(CONVERGE)
    # creates: a policy, then a pod it selects
    cluster.apply(policy(shop, "cache-from-api", allow_from("api", "cache", 6379)))
    cluster.wait_converged(CONVERGE)
    cluster.apply(pod(shop, "cache", "10.1.0.3", app="cache", ports=HTTP_8080))
    cluster.wait_converged(CONVERGE)
    # updates: a policy's spec, a pod's labels, a namespace's labels
    cluster.apply(policy(shop, "cache-from-api", allow_from("web", "cache", 6380)),
                  pod(shop, "api", "10.1.0.2", app="api", version="2"),
                  namespace(ops, team="shop-ops"))
    cluster.wait_converged(CONVERGE)
    # deletes: a policy, a pod
    cluster.delete("NetworkPolicy", shop, "cache-from-api")
    cluster.delete("Pod", shop, "cache")
    cluster.wait_converged(CONVERGE)
    assert cluster.vnc.api.lookup("tag", ["app=cache"]) is None
    assert daemon.stop() == 0
    assert client_errors(daemon.log()) == []
