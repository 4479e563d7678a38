"""SPEC 14's `policy_semantics`: its values, and what the mode changes in the translation.

The one place the mode is read: the translator checks the value once (`ClusterTranslator`), and its
exact enforcement asks `isolates_always` once; the settings, the commands and the explainers take
the values from here.
"""
from __future__ import annotations

from typing import Optional

KUBERNETES, CLUSTER_WIDE = "kubernetes", "cluster-wide"
SEMANTICS = (KUBERNETES, CLUSTER_WIDE)


def semantics_problem(value: object) -> Optional[str]:
    if value not in SEMANTICS:
        return f"policy semantics {value!r} must be one of {', '.join(SEMANTICS)}"
    return None


def isolates_always(semantics: str) -> bool:
    """Whether the isolation tags and blocks exist whatever the ClusterNetworkPolicies, so that every
    flow is decided as Kubernetes decides it (`kubernetes`); under `cluster-wide` they exist only
    while ClusterNetworkPolicy tiers do, and a NetworkPolicy allowing a flow at one end admits it."""
    return semantics == KUBERNETES
