"""Pair ends no pod can ever have while the cluster's namespaces are as they are (SPEC 14).

A pair rule's end is a conjunction of the tags both of its rules name. `meet` drops only
conjunctions empty by construction (two values of one tag type); this one also knows the
namespaces: an end naming namespace X (its identity tag, or its name label) with a namespace label
X does not carry matches no pod, since a pod carries exactly its own namespace's labels as
`namespace.` tags. Such a pair is not written; when X's labels change, or X appears, the pairs
naming X are met again (`PairRules.naming`), so the output follows the namespaces both ways.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

from ..scope_tags import NAMESPACE_LABEL, TagOrigin
from .items import Item, Pods

NamespaceLabels = Callable[[str], Optional[Mapping[str, str]]]  # a namespace's labels; None: no such namespace


class NamespaceContradictions:
    """Whether a pair can match some pod at both ends, as far as the namespaces tell.
    `namespace_of` gives the one namespace an end names (pairs.namespace_key)."""

    def __init__(self, origins: Mapping[str, TagOrigin], labels: NamespaceLabels,
                 namespace_of: Callable[[Pods], Optional[str]]) -> None:
        self._origins = origins
        self._labels = labels
        self._namespace_of = namespace_of

    def possible(self, item: Item) -> bool:
        return self._end_possible(item.src) and self._end_possible(item.dst)

    def _end_possible(self, end: object) -> bool:
        if not isinstance(end, Pods):
            return True
        namespace: Optional[str] = None
        labels: Optional[Mapping[str, str]] = None
        for tag in end.tags:
            origin = self._origins.get(tag)
            if not isinstance(origin, tuple) or origin[0] != NAMESPACE_LABEL:
                continue  # an identity, a pod label, a selector: not the namespace's to contradict
            if namespace is None:
                namespace = self._namespace_of(end)
                if namespace is None:
                    return True
                labels = self._labels(namespace)
            if labels is None or labels.get(origin[1]) != origin[2]:
                return False
        return True
