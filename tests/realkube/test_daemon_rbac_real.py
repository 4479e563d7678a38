"""The documented identity (etc/rbac.yaml) is enough, and each of its verbs is needed: with one verb
taken from its role by the administrator, the daemon says which verb on which resource it lacks
(the real server's 403 message, carried into its log line), instead of failing silently."""
from __future__ import annotations

import copy
import re
from typing import Any, Dict, Iterator

import pytest
from kubernetes import client

from tests.support.builders import HTTP_8080, allow_from, cluster_policy, namespace, pod, policy
from tests.support.control_plane_support import RealKube
from tests.support.real_cluster import RealCluster, unique
from tests.support.waiting import wait_until
from tools.control_plane.bootstrap_objects import rbac_manifests

CONVERGE = 60.0


@pytest.fixture
def cluster(real_kube: RealKube) -> Iterator[RealCluster]:
    made = RealCluster(real_kube)
    yield made
    made.close()


def _role(kind: str) -> Dict[str, Any]:
    return next(m for m in rbac_manifests() if m["kind"] == kind)


def _without(role: Dict[str, Any], group: str, resource: str, verb: str) -> Dict[str, Any]:
    reduced = copy.deepcopy(role)
    for rule in reduced["rules"]:
        if group in rule["apiGroups"] and resource in rule["resources"]:
            rule["verbs"] = [v for v in rule["verbs"] if v != verb]
    return reduced


def _put(rbac: client.RbacAuthorizationV1Api, role: Dict[str, Any]) -> None:
    meta = role["metadata"]
    if role["kind"] == "ClusterRole":
        held = rbac.read_cluster_role(meta["name"])
        rbac.replace_cluster_role(meta["name"], {**role, "metadata": {**meta, "resourceVersion": held.metadata.resource_version}})
    else:
        held = rbac.read_namespaced_role(meta["name"], meta["namespace"])
        rbac.replace_namespaced_role(meta["name"], meta["namespace"],
                                     {**role, "metadata": {**meta, "resourceVersion": held.metadata.resource_version}})


def _allowed(real: RealKube, verb: str, group: str, resource: str, namespace: str) -> bool:
    name, _, sub = resource.partition("/")
    review = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
        resource_attributes=client.V1ResourceAttributes(verb=verb, group=group, resource=name,
                                                        subresource=sub or None, namespace=namespace)))
    return bool(client.AuthorizationV1Api(real.kube_manager()).create_self_subject_access_review(review).status.allowed)


@pytest.mark.parametrize("kind, group, resource, verb, scope", [
    ("ClusterRole", "", "pods", "watch", None),
    ("ClusterRole", "networking.k8s.io", "networkpolicies", "list", None),
    ("ClusterRole", "events.k8s.io", "events", "create", "shop"),
    ("Role", "coordination.k8s.io", "leases", "update", "kube-system"),
    ("ClusterRole", "policy.networking.k8s.io", "clusternetworkpolicies/status", "patch", None),
])
def test_a_verb_taken_from_the_role_is_named_by_the_daemon(real_kube: RealKube, cluster: RealCluster, kind: str,
                                                           group: str, resource: str, verb: str,
                                                           scope: Any) -> None:
    ns = unique("shop")
    cluster.apply(namespace(ns, team="shop"), pod(ns, "web", "10.1.0.1", app="web", ports=HTTP_8080))
    rbac = client.RbacAuthorizationV1Api(cluster.admin)
    documented = _role(kind)
    where = ns if scope == "shop" else scope
    _put(rbac, _without(documented, group, resource, verb))
    try:
        wait_until(lambda: not _allowed(real_kube, verb, group, resource, where), "the role applied")
        keys = {"leader_elect": "true", "leader_elect_name": unique("lease"), "leader_elect_lease_duration": "3",
                "leader_elect_renew_deadline": "2", "leader_elect_retry_period": "0.5"}
        daemon = cluster.start_daemon(**keys)
        if resource == "events":  # a start over a valid cluster says nothing: a policy applied later does
            daemon.wait_log("leading: start-up resync", CONVERGE)
            cluster.wait_converged(CONVERGE)
        cluster.apply(policy(ns, "api-from-web", allow_from("web", "api", 8080)),  # an Event to write
                      cluster_policy(unique("guard"), "Admin", 20, {"namespaces": {"matchLabels": {"team": ns}}},
                                     ingress=[{"name": "all", "action": "Accept", "from": [{"namespaces": {}}]}]))
        name, _, sub = resource.partition("/")  # the server names a subresource `resource "x/status"`
        said = re.compile(rf'cannot {verb} resource \\?"{name}(/{sub})?\\?" in API group \\?"{group}\\?"')
        line = daemon.wait_log("forbidden", CONVERGE)
        wait_until(lambda: [l for l in daemon.log() if said.search(l)], f"a line naming {verb} {resource}", CONVERGE)
        assert "Forbidden" in line
    finally:
        _put(rbac, documented)
    wait_until(lambda: _allowed(real_kube, verb, group, resource, where), "the documented role back")
