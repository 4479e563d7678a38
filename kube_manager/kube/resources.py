"""The three Kubernetes resources kube-manager watches, as one table.

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

    @property
    def api_prefix(self) -> str:
        """`/api/v1` for the core group, `/apis/<group>/<version>` otherwise."""
        return "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"

    @property
    def list_kind(self) -> str:
        return self.kind + "List"


NAMESPACES = Resource("namespaces", "Namespace", "v1", namespaced=False)
PODS = Resource("pods", "Pod", "v1", namespaced=True)
NETWORK_POLICIES = Resource("networkpolicies", "NetworkPolicy", "networking.k8s.io/v1",
                            namespaced=True)

RESOURCES: Dict[str, Resource] = {r.name: r for r in (NAMESPACES, PODS, NETWORK_POLICIES)}
BY_KIND: Dict[str, Resource] = {r.kind: r for r in RESOURCES.values()}
