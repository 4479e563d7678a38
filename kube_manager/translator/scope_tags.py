"""The tags that name a set of pods (SPEC 2, 2.1), and where each tag comes from.

A pod scope of a policy is the conjunction of tags: `application=<cluster>`, its namespace's
identity or the label tags of its namespace selector, and its pod selector's label tags; a scope
no plain conjunction of labels describes is one selector tag instead. These names are the
translator's, whatever writes them: the NetworkPolicy renderer puts them in rule endpoints, the
exact mode and the ClusterNetworkPolicy chains in items.
"""
from __future__ import annotations

from bisect import insort
from types import MappingProxyType
from typing import Dict, FrozenSet, List, Mapping, Optional, Tuple, Union

from .canonical import sha1_of_json
from .encoding import application_tag, encode_key, encode_namespace_key, encode_value, namespace_tag, \
    selector_tag, tag_name
from .model import PodScope, SelectorDef
from .selectors import LabelSelector

# Where a referenced tag comes from, so the caller can find the pods that carry it:
# ("pod", key, value) for a pod label, ("namespace", key, value) for a namespace label, or the
# SelectorDef of a selector tag.
LabelOrigin = Tuple[str, str, str]
TagOrigin = Union[LabelOrigin, SelectorDef]
POD_LABEL, NAMESPACE_LABEL = "pod", "namespace"
# The pods an endpoint naming a pod label can select (SPEC 2): one namespace, or the namespaces whose
# labels include these pairs (none: every namespace). A pod label tag goes only on pods in a scope.
LabelScope = Union[str, FrozenSet[Tuple[str, str]]]
ScopedLabel = Tuple[str, str, LabelScope]  # (key, value, scope)
# A scope's tags (sorted), the tags with their origins, its pod labels with the scope they select in
ScopeNaming = Tuple[List[str], Mapping[str, TagOrigin], Mapping[ScopedLabel, None]]
SELECTOR_CACHE_LIMIT = 16384
SCOPE_CACHE_LIMIT = 65536
_NO_SCOPED: Mapping[ScopedLabel, None] = MappingProxyType({})
# A simple pod selector's label tags sorted with the application tag, its label tags with their
# origins, its (key, value) pairs
_PodLabels = Tuple[Tuple[str, ...], Dict[str, TagOrigin], Tuple[Tuple[str, str], ...]]


class ScopeTags:
    """Tag names of one cluster. Holds only caches of pure functions. A scope's tags are worked out
    once for all who ask (the renderer and the exact mode ask for the same scopes), kept by the
    identities of its selectors (shared by the ParseCache) with the scope holding them, so that an
    identity cannot be reused while its entry exists."""

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.application_tag = application_tag(cluster)
        self._pod_types: Dict[str, str] = {}
        self._namespace_types: Dict[str, str] = {}
        # Pod selectors' label tags by id(selector); each entry holds its selector (its identity).
        self._selector_labels: Dict[int, Tuple[Tuple[str, ...], Dict[str, TagOrigin], Tuple[Tuple[str, str], ...],
                                               Optional[LabelSelector]]] = {}
        self._scopes: Dict[Tuple[Optional[str], int, int], Tuple[ScopeNaming, PodScope]] = {}

    def pod_label_tag(self, key: str, value: str) -> str:
        tag_type = self._pod_types.get(key)
        if tag_type is None:
            tag_type = self._pod_types[key] = encode_key(key)
        return tag_name(tag_type, encode_value(value))

    def namespace_label_tag(self, key: str, value: str) -> str:
        tag_type = self._namespace_types.get(key)
        if tag_type is None:
            tag_type = self._namespace_types[key] = encode_namespace_key(key)
        return tag_name(tag_type, encode_value(value))

    def selector_tag(self, definition: SelectorDef) -> str:
        return selector_tag(self.cluster, sha1_of_json(definition.hash_input())[:12])

    def of_scope(self, scope: PodScope, namespace: Optional[str]) -> ScopeNaming:
        """The tags of `scope` with its UNBOUND namespace read as `namespace` (read-only)."""
        key = (namespace, id(scope.namespace_selector), id(scope.pod_selector))
        found = self._scopes.get(key)
        if found is None:
            if len(self._scopes) >= SCOPE_CACHE_LIMIT:
                self._scopes.clear()
            found = self._scopes[key] = (self._naming(scope, namespace), scope)
        return found[0]

    def _naming(self, scope: PodScope, namespace: Optional[str]) -> ScopeNaming:
        if not scope.is_simple:
            definition = SelectorDef(scope if namespace is None else scope.bound(namespace))
            tag = self.selector_tag(definition)
            return [tag], {tag: definition}, _NO_SCOPED
        if namespace is not None:  # one namespace: its identity tag and the selector's labels there
            tags_of, origins_of, pairs = self._pod_labels(scope.pod_selector)
            own_tags = list(tags_of)  # the application tag and the labels', sorted: add the namespace's
            insort(own_tags, namespace_tag(namespace))  # (no label tag is an identity tag: encoding.py)
            in_namespace: Dict[ScopedLabel, None] = {}
            for key, value in pairs:
                in_namespace[(key, value, namespace)] = None
            return own_tags, origins_of, in_namespace
        tags = {self.application_tag}
        origins: List[Tuple[str, TagOrigin]] = []
        label_scope: LabelScope = frozenset()
        if scope.namespace_selector is not None:
            label_scope = frozenset(scope.namespace_selector.simple_labels)
            for key, value in scope.namespace_selector.simple_labels:
                origins.append((self.namespace_label_tag(key, value), (NAMESPACE_LABEL, key, value)))
        scoped: List[ScopedLabel] = []
        if scope.pod_selector is not None:
            for key, value in scope.pod_selector.simple_labels:
                origins.append((self.pod_label_tag(key, value), (POD_LABEL, key, value)))
                scoped.append((key, value, label_scope))
        tags.update(tag for tag, _ in origins)
        return sorted(tags), dict(origins), dict.fromkeys(scoped)

    def _pod_labels(self, selector: Optional[LabelSelector]) -> _PodLabels:
        """The label tags of a simple pod selector, sorted with the application tag, with their
        origins, worked out once per selector rather than once per namespace whose policies name it."""
        found = self._selector_labels.get(id(selector))
        if found is None:
            pairs = selector.simple_labels if selector is not None else ()
            origins: Dict[str, TagOrigin] = {self.pod_label_tag(key, value): (POD_LABEL, key, value)
                                             for key, value in pairs}
            found = (tuple(sorted({self.application_tag, *origins})), origins, pairs, selector)
            if len(self._selector_labels) >= SELECTOR_CACHE_LIMIT:
                self._selector_labels.clear()
            self._selector_labels[id(selector)] = found
        return found[0], found[1], found[2]
