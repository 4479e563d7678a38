"""The pure translator: Kubernetes namespaces, pods and NetworkPolicies to Contrail objects.

No I/O, no network clients, no module state: `translate()` for a whole cluster at once (the offline
`translate` and `explain` commands), `ClusterTranslator` for the daemon's incremental updates.
"""
from .changes import Changes, RefChange
from .cluster import ClusterTranslator, cluster_name_problem
from .network_policies import PolicyObjects
from .batch import translate
from .translation import Translation

__all__ = ["ClusterTranslator", "Changes", "PolicyObjects", "RefChange", "Translation",
           "cluster_name_problem", "translate"]
