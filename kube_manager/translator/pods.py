"""Pods as a kind source of the incremental translator (SPEC 3, 8).

A pod event records the pod in the index and counts it as a user of its namespace; what depends
on pods (selector membership, the pod's own tags, the policies that resolve named ports or select
across namespaces) is told through `changed`, which the translator wires to them.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, Mapping, Optional

from kube_manager.registry import PODS

from .index import ClusterIndex, PodKey
from .inputs import parse_pod, reported_key
from .kind_source import Emitted, Identity
from .model import PodInfo
from .namespaces import NamespaceSource
from .parsecache import ParseCache

POD_KIND = PODS.kind
# (key, old, new): a pod appeared (old None), changed, or went (new None).
PodChanged = Callable[[PodKey, Optional[PodInfo], Optional[PodInfo]], None]


class PodSource:
    """The Pod source."""

    kind = POD_KIND

    def __init__(self, index: ClusterIndex, namespaces: NamespaceSource, parse_cache: ParseCache,
                 changed: PodChanged) -> None:
        self._index = index
        self._namespaces = namespaces
        self._parse_cache = parse_cache
        self._changed = changed

    def identity(self, manifest: Any) -> Identity:
        return reported_key(manifest)

    def upsert(self, manifest: Mapping[str, Any]) -> Identity:
        pod = parse_pod(manifest, self._parse_cache)
        old = self._index.put_pod(pod)
        if old is None:
            self._namespaces.use(pod.namespace, 1)
        elif old == pod:
            return pod.key
        self._changed(pod.key, old, pod)
        return pod.key

    def remove(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        old = self._index.remove_pod(key)
        if old is not None:
            self._changed(key, old, None)
            self._namespaces.use(namespace, -1)

    def status(self, namespace: str, name: str) -> Optional[Emitted]:
        return None  # a pod emits no policy; its tags are `ClusterTranslator.pod_tags`

    def errors(self) -> Iterator[Dict[str, str]]:
        return iter(())  # a pod is translated whole or rejected
