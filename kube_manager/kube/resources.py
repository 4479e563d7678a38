"""The Kubernetes resources kube-manager watches, as one table.

Shared by the watchers (which list functions of the official client to call) and the emulated API
server (which URLs to serve, which kinds to put in lists), so the two always agree. The resource
`name` is the REST plural (`networkpolicies`); it is also the key of `Database.kube_connections`, the
`resource` argument of watch callbacks and the label of the `kube_events` metric.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict


@dataclass(frozen=True)
class Resource:
    name: str          # REST plural: "pods"
    kind: str          # "Pod"
    api_version: str   # "v1", "networking.k8s.io/v1"
    namespaced: bool
    # Served only where its CustomResourceDefinition is installed: absent is a normal state of the
    # cluster (the API server answers 404), not a fault.
    crd: bool = False

    @property
    def api_prefix(self) -> str:
        """`/api/v1` for the core group, `/apis/<group>/<version>` otherwise."""
        return "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"

    @property
    def group(self) -> str:
        """The API group ("" for the core group), as the official client's CustomObjectsApi takes it."""
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]

    @property
    def list_kind(self) -> str:
        return self.kind + "List"


NAMESPACES = Resource("namespaces", "Namespace", "v1", namespaced=False)
PODS = Resource("pods", "Pod", "v1", namespaced=True)
NETWORK_POLICIES = Resource("networkpolicies", "NetworkPolicy", "networking.k8s.io/v1",
                            namespaced=True)
# SIG Network's policy API (kubernetes-sigs/network-policy-api), a CRD: SPEC 13.
CLUSTER_NETWORK_POLICIES = Resource("clusternetworkpolicies", "ClusterNetworkPolicy",
                                    "policy.networking.k8s.io/v1alpha2", namespaced=False, crd=True)

RESOURCES: Dict[str, Resource] = {r.name: r for r in (NAMESPACES, PODS, NETWORK_POLICIES,
                                                      CLUSTER_NETWORK_POLICIES)}
BY_KIND: Dict[str, Resource] = {r.kind: r for r in RESOURCES.values()}
