"""Pods and namespaces indexed for selector evaluation.

Finding the pods of a selector must not scan the cluster: candidates come from the smallest of the
namespace's pods and the pods carrying one of the selector's required labels, and are then checked
against the whole selector.
"""
from __future__ import annotations

from typing import AbstractSet, Callable, Dict, Iterable, List, Mapping, Optional, Set, Tuple

from .cidr import IpBlock
from .model import METADATA_NAME_LABEL, NamespaceInfo, PodExpression, PodInfo, PodScope, PodSet
from .selectors import EXISTS, IN, LabelSelector

PodKey = Tuple[str, str]
_NOTHING: AbstractSet = frozenset()


class _LabelIndex:
    """Objects by (label key, value) and by label key, built on the first query.

    A bulk translation whose selectors are all plain labels never asks (their tags are carried
    by every matching pod without searching for the pods), so it never pays for the index;
    once built, it is kept up to date by `add` and `remove`.
    """

    def __init__(self, source: Callable[[], Iterable[Tuple[object, Mapping[str, str]]]]) -> None:
        self._source = source  # every (object, labels) indexed, to build from
        self._by_label: Optional[Dict[Tuple[str, str], Set]] = None
        self._by_key: Dict[str, Set] = {}

    def build(self) -> None:
        """Build the index now rather than at the first query."""
        self._built()

    def _built(self) -> Dict[Tuple[str, str], Set]:
        if self._by_label is None:
            self._by_label = {}
            for item, labels in self._source():
                self._insert(item, labels)
        return self._by_label

    def _insert(self, item: object, labels: Mapping[str, str]) -> None:
        by_label, by_key = self._by_label, self._by_key
        assert by_label is not None
        for pair in labels.items():
            by_label.setdefault(pair, set()).add(item)
            by_key.setdefault(pair[0], set()).add(item)

    def add(self, item: object, labels: Mapping[str, str]) -> None:
        if self._by_label is not None:
            self._insert(item, labels)

    def remove(self, item: object, labels: Mapping[str, str]) -> None:
        by_label, by_key = self._by_label, self._by_key
        if by_label is None:
            return
        for pair in labels.items():
            with_pair, with_key = by_label[pair], by_key[pair[0]]
            with_pair.discard(item)
            with_key.discard(item)
            if not with_pair:
                del by_label[pair]
            if not with_key:
                del by_key[pair[0]]

    def with_label(self, key: str, value: str) -> AbstractSet:
        return self._built().get((key, value), _NOTHING)

    def narrow(self, universe: AbstractSet, selector: LabelSelector) -> AbstractSet:
        """The smallest of `universe` and the sets a required label of `selector` picks."""
        by_label = self._built()
        best = universe
        for pair in selector.match_labels:
            found = by_label.get(pair, _NOTHING)
            if len(found) < len(best):
                best = found
        for requirement in selector.expressions:
            if requirement.operator == EXISTS:
                found = self._by_key.get(requirement.key, _NOTHING)
            elif requirement.operator == IN and len(requirement.values) == 1:
                found = by_label.get((requirement.key, requirement.values[0]), _NOTHING)
            else:
                continue
            if len(found) < len(best):
                best = found
        return best


class ClusterIndex:
    """The pods and namespaces the translator knows, with label indexes."""

    def __init__(self) -> None:
        self.pods: Dict[PodKey, PodInfo] = {}
        self.namespaces: Dict[str, NamespaceInfo] = {}
        self.pods_by_namespace: Dict[str, Set[PodKey]] = {}
        self._pod_labels = _LabelIndex(lambda: ((key, pod.labels) for key, pod in self.pods.items()))
        self._namespace_labels = _LabelIndex(lambda: ((name, ns.labels) for name, ns in self.namespaces.items()))

    # --- updates ------------------------------------------------------------------------------

    def put_pod(self, pod: PodInfo) -> Optional[PodInfo]:
        """Store `pod`; returns the state it replaces."""
        key = pod.key
        old = self.remove_pod(key) if key in self.pods else None
        self.pods[key] = pod
        members = self.pods_by_namespace.get(pod.namespace)
        if members is None:
            members = self.pods_by_namespace[pod.namespace] = set()
        members.add(key)
        self._pod_labels.add(key, pod.labels)
        return old

    def remove_pod(self, key: PodKey) -> Optional[PodInfo]:
        old = self.pods.pop(key, None)
        if old is not None:
            members = self.pods_by_namespace[old.namespace]
            members.discard(key)
            if not members:
                del self.pods_by_namespace[old.namespace]
            self._pod_labels.remove(key, old.labels)
        return old

    def put_namespace(self, namespace: NamespaceInfo) -> Optional[NamespaceInfo]:
        old = self.remove_namespace(namespace.name)
        self.namespaces[namespace.name] = namespace
        self._namespace_labels.add(namespace.name, namespace.labels)
        return old

    def remove_namespace(self, name: str) -> Optional[NamespaceInfo]:
        old = self.namespaces.pop(name, None)
        if old is not None:
            self._namespace_labels.remove(name, old.labels)
        return old

    def index_pod_labels(self) -> None:
        """Build the pods' label index now: for a caller that knows lookups will follow, so that
        the first of them does not pay for indexing every pod."""
        self._pod_labels.build()

    # --- lookups ------------------------------------------------------------------------------

    def namespace_labels(self, name: str) -> Mapping[str, str]:
        namespace = self.namespaces.get(name)
        return namespace.labels if namespace is not None else {METADATA_NAME_LABEL: name}

    def pods_with_label(self, key: str, value: str) -> AbstractSet[PodKey]:
        return self._pod_labels.with_label(key, value)

    def namespaces_with_label(self, key: str, value: str) -> AbstractSet[str]:
        return self._namespace_labels.with_label(key, value)

    def namespace_pods(self, name: str) -> AbstractSet[PodKey]:
        return self.pods_by_namespace.get(name, _NOTHING)

    def contains(self, pods: PodSet, pod: PodInfo) -> bool:
        if isinstance(pods, IpBlock):
            return pods.contains(pod.address)
        if isinstance(pods, PodExpression):
            return pods.contains(pod, self.namespace_labels(pod.namespace))
        return pods.matches(pod.namespace, pod.labels, self.namespace_labels(pod.namespace))

    def matching_namespaces(self, selector: LabelSelector) -> List[str]:
        candidates = self._namespace_labels.narrow(self.namespaces.keys(), selector)
        return [name for name in candidates if selector.matches(self.namespaces[name].labels)]

    def pods_in(self, pods: PodSet) -> Iterable[PodInfo]:
        """The pods of a pod set, found through the indexes (an ipBlock scans pods with an IP)."""
        if isinstance(pods, IpBlock):
            return [pod for pod in self.pods.values() if pods.contains(pod.address)]
        if isinstance(pods, PodExpression):
            scope = pods.candidates()
            found = self._scope_pods(scope) if scope is not None else self.pods.values()
            return [pod for pod in found if pods.contains(pod, self.namespace_labels(pod.namespace))]
        return self._scope_pods(pods)

    def _scope_pods(self, scope: PodScope) -> List[PodInfo]:
        selector = scope.pod_selector
        every_pod = self.pods.keys()
        if scope.namespace is not None:
            namespaces: AbstractSet[str] = {scope.namespace}
            universe: AbstractSet[PodKey] = self.namespace_pods(scope.namespace)
        else:
            names = self.matching_namespaces(scope.namespace_selector or LabelSelector())
            namespaces = set(names)
            universe = self.namespace_pods(names[0]) if len(names) == 1 else every_pod
        if selector is not None:
            universe = self._pod_labels.narrow(universe, selector)
        candidates: Iterable[PodKey] = universe
        if universe is every_pod and len(namespaces) < len(self.namespaces):
            # No label narrows it down: walk the matching namespaces rather than every pod.
            candidates = [key for name in namespaces for key in self.namespace_pods(name)]
        result = []
        for key in candidates:
            pod = self.pods[key]
            if pod.namespace in namespaces and (selector is None or selector.matches(pod.labels)):
                result.append(pod)
        return result
