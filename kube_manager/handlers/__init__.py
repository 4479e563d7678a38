"""One handler per Kubernetes kind, each in its module beside its trimmer and its `Kind` record,
which the module registers as the kind's `WATCH` hook in the registry of kinds
(`kube_manager/registry.py`).

`KINDS` is what the daemon watches and dispatches from: the registry's kinds, in its order, which is
the order in which the events held until every initial list is in are applied (namespaces, then
pods, then the policies that select them). How to add a kind: docs/architecture.md, "Adding a kind".
"""
from kube_manager.kube.kinds import watched_kinds
from kube_manager.registry import KINDS as REGISTERED

from . import cluster_network_policy, namespace, network_policy, pod  # noqa: F401  (each registers its kind)

KINDS = watched_kinds(REGISTERED)

__all__ = ["KINDS"]
