"""One handler per Kubernetes kind, each in its module beside its trimmer and its `Kind` record.

`KINDS` is the registry the daemon watches and dispatches from; its order is the order in which
the events held until every initial list is in are applied (namespaces, then pods, then the
policies that select them). How to add a kind: docs/architecture.md, "Adding a kind".
"""
from kube_manager.kube.kinds import KindRegistry

from . import cluster_network_policy, namespace, network_policy, pod

KINDS = KindRegistry([namespace.KIND, pod.KIND, network_policy.KIND, cluster_network_policy.KIND])

__all__ = ["KINDS"]
