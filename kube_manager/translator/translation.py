"""The whole desired state of a cluster in SPEC 8's `translate` JSON form, and `translate()`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Mapping, Tuple

from kube_manager.gcpolicy import collector_paused

Body = Dict[str, Any]


@dataclass(frozen=True)
class Translation:
    """Every object kube-manager wants in Contrail for one cluster, each list in SPEC 8's order:
    objects by fq_name, workloads by namespace and name, errors by kind, namespace and name."""

    cluster_name: str
    tags: Tuple[Body, ...]
    address_groups: Tuple[Body, ...]
    firewall_rules: Tuple[Body, ...]
    firewall_policies: Tuple[Body, ...]
    application_policy_set: Body
    workloads: Tuple[Body, ...]  # {"namespace", "name", "ip", "tags"}
    errors: Tuple[Dict[str, str], ...]  # {"kind", "namespace", "name", "reason"}
    # Selector tag -> the object it was hashed from (SPEC 2.1, 4), so explain can decode it; not
    # part of SPEC 8's JSON.
    selectors: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> Dict[str, Any]:
        """SPEC 8's JSON object. Bodies are shared with the translator: do not modify them."""
        return {
            "cluster_name": self.cluster_name,
            "tags": list(self.tags),
            "address_groups": list(self.address_groups),
            "firewall_rules": list(self.firewall_rules),
            "firewall_policies": list(self.firewall_policies),
            "application_policy_set": self.application_policy_set,
            "workloads": list(self.workloads),
            "errors": list(self.errors),
        }


def translate(namespaces: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
              network_policies: Iterable[Mapping[str, Any]], *, cluster_name: str = "k8s",
              owner: str = "k8s", cluster_network_policies: Iterable[Mapping[str, Any]] = ()) -> Translation:
    """Translate plain manifests (as the API server returns them) in one go.

    Equal, by construction, to a ClusterTranslator fed the same objects: it is one, without the
    change log the daemon needs.
    """
    from .cluster import ClusterTranslator  # cluster imports this module for Translation

    with collector_paused():
        translator = ClusterTranslator(cluster_name, owner, track_changes=False)
        for namespace in namespaces:
            translator.upsert_namespace(namespace)
        for pod in pods:
            translator.upsert_pod(pod)
        for policy in network_policies:
            translator.upsert_policy(policy)
        for cluster_policy in cluster_network_policies:
            translator.set_cluster_network_policy(cluster_policy)
        translator.flush()
        return translator.translation()
