"""Isolation tags (SPEC 14): `label=<cluster>-isolated-ingress` on the pods some NetworkPolicy
isolates for ingress, `label=<cluster>-isolated-egress` for egress.

A pod is isolated in a direction when a NetworkPolicy of its namespace with that policy type
selects it. The selections are counted per namespace, so a policy event re-tags only the pods of
the selection that came or went; a pod event looks at its own namespace's selections only.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..index import ClusterIndex
from ..marks import Marks
from ..model import PodInfo, PodScope
from ..naming import EGRESS, INGRESS

DIRECTIONS = (INGRESS, EGRESS)
Selection = Tuple[str, PodScope]  # (direction, the policy's own pods)


def isolation_tag(cluster: str, direction: str) -> str:
    return f"label={cluster}-isolated-{direction}"


class Isolation:
    """Who carries the isolation tags; off (no pod carries them) until `enable`."""

    def __init__(self, cluster: str, index: ClusterIndex, marks: Marks, *, events_follow: bool = True) -> None:
        """`events_follow`: events come after the bulk load (the daemon), so its lookups of pods
        by label are worth indexing at once; an offline translation makes none."""
        self.tags = {direction: isolation_tag(cluster, direction) for direction in DIRECTIONS}
        self._index = index
        self._events_follow = events_follow
        self._marks = marks
        self._selections: Dict[str, Dict[Selection, int]] = {}
        self._moved: List[Selection] = []  # selections that came or went since `mark_moved`
        self.enabled = False

    def is_tag(self, tag: str) -> bool:
        return tag in self.tags.values()

    def enable(self, enabled: bool) -> None:
        if enabled != self.enabled:
            self.enabled = enabled
            for selections in self._selections.values():
                self._moved.extend(selections)

    def moved(self, namespace: str, old: Tuple[Selection, ...], new: Tuple[Selection, ...]) -> None:
        """One policy of `namespace` isolates `new` instead of `old`."""
        if old == new:
            return
        counts = self._selections.setdefault(namespace, {})
        for selection in new:
            counts[selection] = counts.get(selection, 0) + 1
        for selection in old:
            count = counts[selection] - 1
            if count:
                counts[selection] = count
            else:
                del counts[selection]
        if not counts:
            del self._selections[namespace]
        if self.enabled:  # (a policy's selections differ by direction: `new` alone needs no set)
            self._moved.extend(set(old).symmetric_difference(new) if old else new)

    def mark_moved(self) -> None:
        """Mark for re-tagging the pods of the selections that came or went (once per flush: in a
        bulk load every pod is marked already, and nobody needs to look them up).

        Every later flush that moves a selection looks its pods up through the pods' label
        index, which is otherwise built by its first lookup: the bulk load builds it, so that the
        first NetworkPolicy event after a start does not index every pod of the cluster."""
        moved, self._moved = self._moved, []
        dirty, pods = self._marks.pods, self._index.pods
        if not moved:
            return
        if len(dirty) >= len(pods) and dirty.keys() >= pods.keys():
            if self._events_follow:
                self._index.index_pod_labels()
            return
        for _, scope in dict.fromkeys(moved):
            self._marks.mark_pods(pod.key for pod in self._index.pods_in(scope))

    def tags_of(self, pod: PodInfo) -> List[str]:
        if not self.enabled:
            return []
        found: Dict[str, None] = {}
        for direction, scope in self._selections.get(pod.namespace, {}):
            if direction not in found and scope.matches(pod.namespace, pod.labels, {}):
                found[direction] = None
        return [self.tags[direction] for direction in found]


def selections_of(selection: Optional[PodScope], directions: Tuple[str, ...]) -> Tuple[Selection, ...]:
    if selection is None:
        return ()
    return tuple((direction.lower(), selection) for direction in directions)
