"""The tags each pod's interfaces must carry (SPEC 2), recomputed only for marked pods.

A pod carries the application and namespace identity tags, the referenced tags of its namespace's
labels, the referenced tags of its own labels where some endpoint can select it (the label's
scopes, counted by `shared`), and the selector tags it is a member of (`membership`). Marks come
from events (a pod changed, a namespace relabelled) and from the shared objects (a tag or a scope
came or went); the label ones are turned into pods here, at flush time, in proportion to the scope
they name rather than to the cluster.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Tuple

from .changes import ChangeLog
from .encoding import namespace_tag
from .exact.isolation import Isolation
from .index import ClusterIndex, PodKey
from .marks import Marks
from .membership import SelectorMembership
from .scope_tags import LabelOrigin, ScopedLabel
from .shared import Label, SharedObjects


@dataclass(eq=False, repr=False)
class PodTags:
    """pod -> its sorted `type=value` tags (`tags`), kept up to date by `flush`."""

    _index: ClusterIndex
    _shared: SharedObjects
    _membership: SelectorMembership
    _application_tag: str
    _marks: Marks
    _log: ChangeLog
    _isolation: Isolation
    tags: Dict[PodKey, Tuple[str, ...]] = field(default_factory=dict, init=False)

    def flush(self) -> None:
        """Re-tag the marked pods, after turning the label marks into pods."""
        marks = self._marks
        if marks.origins or marks.scopes:
            self._mark_origin_pods()
        if marks.pods:
            self._flush_pods()

    def _mark_origin_pods(self) -> None:
        """Mark dirty the pods carrying a label whose tag was referenced or released (in a scope,
        for pod labels) since the last flush. Done at flush time rather than at each reference:
        any pod whose labels changed in between is dirty anyway, and when every pod is already
        dirty (a bulk load) nobody needs to look the pods up."""
        marks = self._marks
        origins, marks.origins = marks.origins, []
        scopes, marks.scopes = marks.scopes, []
        dirty, pods = marks.pods, self._index.pods
        if len(dirty) >= len(pods) and dirty.keys() >= pods.keys():
            return
        for origin in origins:
            dirty.update(dict.fromkeys(self._pods_with(origin)))
        for scoped in scopes:
            dirty.update(dict.fromkeys(self._scope_pods_with(scoped)))

    def _pods_with(self, origin: LabelOrigin) -> Iterable[PodKey]:
        _kind, key, value = origin
        return [pod for namespace in self._index.namespaces_with_label(key, value)
                for pod in self._index.namespace_pods(namespace)]

    def _scope_pods_with(self, scoped: ScopedLabel) -> Iterable[PodKey]:
        """The pods labelled `key: value` in a scope: in proportion to the scope, not the cluster."""
        key, value, scope = scoped
        index = self._index
        if isinstance(scope, str):
            return [pod for pod in index.namespace_pods(scope) if index.pods[pod].labels.get(key) == value]
        if not scope:
            return index.pods_with_label(key, value)
        first = min(scope)
        return [pod for namespace in index.namespaces_with_label(*first)
                if scope <= frozenset(index.namespace_labels(namespace).items())
                for pod in index.namespace_pods(namespace) if index.pods[pod].labels.get(key) == value]

    def _flush_pods(self) -> None:
        marks = self._marks
        dirty, marks.pods = marks.pods, {}
        namespace_tags: Dict[str, Tuple[List[str], FrozenSet[Label]]] = {}
        label_tags, in_scope = self._shared.pod_label_tags, self._shared.in_scope
        shared: Dict[Tuple[str, ...], Tuple[str, ...]] = {}  # equal tag sets share one tuple
        pods, pod_tags = self._index.pods, self.tags
        for key in dirty:
            previous = pod_tags.get(key)
            pod = pods.get(key)
            if pod is None:
                if previous is not None:
                    self._log.pod_touched(key, previous)
                    del pod_tags[key]
                continue
            identity = namespace_tags.get(pod.namespace)
            if identity is None:
                identity = namespace_tags[pod.namespace] = (
                    self._namespace_identity(pod.namespace),
                    frozenset(self._index.namespace_labels(pod.namespace).items()))
            tags = identity[0].copy()
            for pair in pod.labels.items():
                if pair in label_tags and in_scope(pair, pod.namespace, identity[1]):
                    tags.append(label_tags[pair])
            tags.extend(self._membership.tags_of(key))
            if self._isolation.enabled:
                tags.extend(self._isolation.tags_of(pod))
            found = tuple(tags)
            result = shared.get(found)
            if result is None:
                result = shared[found] = tuple(sorted(tags))
            if result != previous:
                self._log.pod_touched(key, previous)
                pod_tags[key] = result

    def _namespace_identity(self, namespace: str) -> List[str]:
        """The tags every pod of `namespace` carries: identity and referenced namespace labels."""
        label_tags = self._shared.namespace_label_tags
        return [self._application_tag, namespace_tag(namespace)] + [
            label_tags[pair] for pair in self._index.namespace_labels(namespace).items() if pair in label_tags]
