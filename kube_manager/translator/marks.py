"""What the next flush must redo: the incremental translator's dirty state, in one place.

An event only records the object and marks what depends on it here; `ClusterTranslator.flush()`
takes the marks in a fixed order (policies, then the pods their tags moved, then pods) and redoes
exactly what they name. Keeping every mark in one object makes "is anything pending?" one question
and keeps the modules that mark (the sources, the shared objects, the pod tags) from reaching into
each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterable, List

from .collisions import PolicyKey
from .index import PodKey
from .scope_tags import LabelOrigin, ScopedLabel


@dataclass
class Marks:
    """Dicts serve as ordered sets: a bulk load then visits objects in the order they were created,
    which keeps memory accesses local."""

    policies: Dict[PolicyKey, None] = field(default_factory=dict)  # NetworkPolicies to re-render
    pods: Dict[PodKey, None] = field(default_factory=dict)  # pods to re-tag
    origins: List[LabelOrigin] = field(default_factory=list)  # namespace label tags referenced or released
    scopes: List[ScopedLabel] = field(default_factory=list)  # pod label scopes that came or went
    tiers: Dict[str, None] = field(default_factory=dict)  # ClusterNetworkPolicy tiers to re-render

    def __bool__(self) -> bool:
        return bool(self.policies or self.pods or self.origins or self.scopes or self.tiers)

    def mark_pods(self, keys: Iterable[PodKey]) -> None:
        self.pods.update(dict.fromkeys(keys))

    def mark_policies(self, keys: Iterable[PolicyKey]) -> None:
        self.policies.update(dict.fromkeys(keys))
