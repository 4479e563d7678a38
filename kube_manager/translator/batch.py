"""`translate()`: a whole cluster's manifests translated in one go, for the offline commands."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from kube_manager.plumbing.gcpolicy import collector_paused

from .cluster import ClusterTranslator
from .translation import Translation


def translate(namespaces: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
              network_policies: Iterable[Mapping[str, Any]], *, cluster_name: str = "k8s",
              owner: str = "k8s", cluster_network_policies: Iterable[Mapping[str, Any]] = (),
              semantics: str = "kubernetes") -> Translation:
    """Translate plain manifests (as the API server returns them) in one go.

    Equal, by construction, to a ClusterTranslator fed the same objects: it is one, without the
    change log the daemon needs. `semantics` is SPEC 14's `policy_semantics`.
    """
    with collector_paused():
        translator = ClusterTranslator(cluster_name, owner, track_changes=False, semantics=semantics)
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
