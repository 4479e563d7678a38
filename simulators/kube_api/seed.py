"""Manifests loaded into the emulated cluster as what its etcd already holds (the demo, tests,
`python -m simulators.kube_api.server -f`): written by the store directly, past the admission the
HTTP API applies, so that a seed may carry what a real server refuses today (`protocol: tcp`, a
`/33` CIDR): what an older server, a restored backup or another tool may have left. Pods keep the
status the manifests give (as if their kubelets had written it)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from kube_manager.offline.manifests import Manifests

if TYPE_CHECKING:
    from simulators.kube_api.store import KubeStore


def load_seed(store: "KubeStore", manifests: Manifests) -> None:
    """Apply every object of `manifests`; namespaces referred to but not given are created, so
    that the cluster matches what `translate` assumes for the same manifests."""
    objects = manifests.objects
    for namespace_obj in objects["Namespace"]:
        store.apply(namespace_obj)
    for obj in list(objects["Pod"]) + list(objects["NetworkPolicy"]):
        namespace = (obj.get("metadata") or {}).get("namespace") or "default"
        if not store.namespace_exists(namespace):
            store.create({"kind": "Namespace", "metadata": {"name": namespace}})
        store.apply(obj)
    for obj in objects["ClusterNetworkPolicy"]:  # 404 without the CRD, as on a real cluster
        store.apply(obj)
