"""Which pods carry which selector tag (SPEC 2.1 and 4).

A selector tag stands for a selector Contrail cannot express (or for the pods where a named port
resolves to one number); kube-manager evaluates it and keeps the tag on exactly the matching pods.
Membership changes when a tag is activated or retired, when a pod changes, and when the labels of a
namespace change; each of these re-evaluates only the tags that can be affected.
"""
from __future__ import annotations

from typing import AbstractSet, Dict, Set

from .cidr import IpBlock
from .index import ClusterIndex, PodKey
from .model import PodInfo, SelectorDef

_NOTHING: AbstractSet = frozenset()


class SelectorMembership:
    """Active selector tags, their member pods, and each pod's selector tags."""

    def __init__(self, index: ClusterIndex) -> None:
        self._index = index
        self._definitions: Dict[str, SelectorDef] = {}
        self._members: Dict[str, Set[PodKey]] = {}
        self._pod_tags: Dict[PodKey, Set[str]] = {}
        self._by_namespace: Dict[str, Set[str]] = {}  # tags scoped to one namespace
        self._cluster_wide: Set[str] = set()  # namespace-selector and ipBlock scoped tags

    def tags_of(self, pod: PodKey) -> AbstractSet[str]:
        return self._pod_tags.get(pod, _NOTHING)

    def _contains(self, definition: SelectorDef, pod: PodInfo) -> bool:
        port = definition.port
        if port is not None and pod.named_ports.get((port[0], port[1])) != port[2]:
            return False
        return self._index.contains(definition.pods, pod)

    def _scope_tags(self, definition: SelectorDef) -> Set[str]:
        pods = definition.pods
        if isinstance(pods, IpBlock) or pods.namespace is None:
            return self._cluster_wide
        return self._by_namespace.setdefault(pods.namespace, set())

    def activate(self, tag: str, definition: SelectorDef) -> AbstractSet[PodKey]:
        """Start keeping `tag` on its pods; returns them."""
        self._definitions[tag] = definition
        self._scope_tags(definition).add(tag)
        port = definition.port
        members = {pod.key for pod in self._index.pods_in(definition.pods)
                   if port is None or pod.named_ports.get((port[0], port[1])) == port[2]}
        self._members[tag] = members
        for key in members:
            self._pod_tags.setdefault(key, set()).add(tag)
        return members

    def retire(self, tag: str) -> AbstractSet[PodKey]:
        """Stop keeping `tag`; returns the pods that lose it."""
        definition = self._definitions.pop(tag)
        scope = self._scope_tags(definition)
        scope.discard(tag)
        pods = definition.pods
        if not scope and not isinstance(pods, IpBlock) and pods.namespace is not None:
            del self._by_namespace[pods.namespace]
        members = self._members.pop(tag)
        for key in members:
            tags = self._pod_tags[key]
            tags.discard(tag)
            if not tags:
                del self._pod_tags[key]
        return members

    def pod_changed(self, key: PodKey, pod: "PodInfo | None") -> None:
        """Re-evaluate every tag that could hold pod `key`, now in state `pod` (None: deleted)."""
        if not self._definitions:  # no selector tag at all (the common case)
            return
        for tag in self._pod_tags.pop(key, ()):
            self._members[tag].discard(key)
        if pod is None:
            return
        found = set()
        for candidates in (self._by_namespace.get(pod.namespace, _NOTHING), self._cluster_wide):
            for tag in candidates:
                if self._contains(self._definitions[tag], pod):
                    self._members[tag].add(key)
                    found.add(tag)
        if found:
            self._pod_tags[key] = found

    def namespace_changed(self, namespace: str) -> None:
        """Namespace labels changed: re-evaluate, for its pods, the tags that can read them. Those
        are the cluster-wide ones and also the namespace's own: an end narrowed to networks
        (`exact/expressions.py`) that names the namespace and one of its labels is filed under
        the namespace, so no cluster-wide tag at all does not mean nothing to re-evaluate."""
        if not self._cluster_wide and namespace not in self._by_namespace:
            return
        for key in self._index.namespace_pods(namespace):
            self.pod_changed(key, self._index.pods[key])
