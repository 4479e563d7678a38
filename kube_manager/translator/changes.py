"""What changed in the desired state since the reconciler last asked.

The first touch of an object (or of a pod's tag set) after a `pop` records its previous state; the
`pop` compares it with the current one, so an object changed and changed back is not reported, and
the reconciler only ever hears about real differences.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple

from .bodies import Body, FqName
from .sequenced import RefOperation

ObjectKey = Tuple[str, FqName]  # (resource type, fq_name)
PodKey = Tuple[str, str]
_MISSING: Any = object()


@dataclass(frozen=True)
class RefChange:
    """One ref of a large ref list (the APS, `<cluster>-denyall`) added or deleted."""

    resource_type: str
    fq_name: FqName
    ref_type: str
    operation: str  # "ADD" | "DELETE"
    ref_fq_name: FqName
    sequence: str


@dataclass(frozen=True)
class Changes:
    """Differences since the previous `flush()`, each list sorted.

    `changed` objects should be read from `desired()`; for the two objects with very long ref lists
    `ref_changes` also says which refs moved, so they can be updated one ref at a time.
    """

    added: Tuple[ObjectKey, ...] = ()
    changed: Tuple[ObjectKey, ...] = ()
    removed: Tuple[ObjectKey, ...] = ()
    pods: Tuple[PodKey, ...] = ()  # pods whose tag set changed (new and deleted pods included)
    # By kind, the (namespace, name) of the policies whose objects or errors may have changed
    # (namespace "" when cluster-scoped; a ClusterNetworkPolicy is named when its tier was re-rendered).
    policies: Mapping[str, Tuple[PodKey, ...]] = field(default_factory=dict)
    ref_changes: Tuple[RefChange, ...] = ()

    def __bool__(self) -> bool:
        """Whether the report says anything the reconciler must hear. A policy named with no object
        changed counts: its new generation is programmed once the reconciler pushes the sync states
        of its objects (which may all be in sync already), and only a report makes it push."""
        return bool(self.added or self.changed or self.removed or self.pods or self.policies)


class ChangeLog:
    """Previous states of what was touched since the last pop; inert when disabled."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._objects: Dict[ObjectKey, Any] = {}
        self._pods: Dict[PodKey, Any] = {}
        self._policies: Dict[str, Set[PodKey]] = {}
        self._refs: List[RefChange] = []

    def object_touched(self, key: ObjectKey, previous: Optional[Body]) -> None:
        if self.enabled and key not in self._objects:
            self._objects[key] = _MISSING if previous is None else previous

    def pod_touched(self, key: PodKey, previous: Optional[Tuple[str, ...]]) -> None:
        if self.enabled and key not in self._pods:
            self._pods[key] = previous

    def policies_touched(self, kind: str, keys: Iterable[PodKey]) -> None:
        """Policies of `kind` whose objects or errors may have changed."""
        if self.enabled:
            self._policies.setdefault(kind, set()).update(keys)

    def refs_moved(self, resource_type: str, fq_name: FqName, ref_type: str,
                   operations: List[RefOperation]) -> None:
        if self.enabled:
            self._refs.extend(RefChange(resource_type, fq_name, ref_type, op, target, sequence)
                              for op, target, sequence in operations)

    def pop(self, objects: Mapping[str, Mapping[FqName, Body]],
            pod_tags: Mapping[PodKey, Tuple[str, ...]]) -> Changes:
        added, changed, removed = [], [], []
        for key, previous in self._objects.items():
            current = objects[key[0]].get(key[1], _MISSING)
            if previous is _MISSING:
                if current is not _MISSING:
                    added.append(key)
            elif current is _MISSING:
                removed.append(key)
            elif current is previous or current != previous:
                changed.append(key)  # the same object was updated in place (long ref lists)
        pods = [key for key, previous in self._pods.items() if pod_tags.get(key) != previous]
        changes = Changes(tuple(sorted(added)), tuple(sorted(changed)), tuple(sorted(removed)),
                          tuple(sorted(pods)), {kind: tuple(sorted(keys)) for kind, keys in self._policies.items() if keys},
                          tuple(self._refs))
        self._objects.clear()
        self._pods.clear()
        self._policies.clear()
        self._refs = []
        return changes
