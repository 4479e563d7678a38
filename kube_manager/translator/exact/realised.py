"""Which pair ends the current pods realise (SPEC 14): a pair rule is written only while some pod
matches each of its ends that is a set of pods (`pairs.py`).

A pod matches an end when it meets the condition of every tag of the end, as the tag stands for it
(its namespace for the identity tag, a pod label, a namespace label, a selector), read on the
pod's labels and its namespace's, and, for an end narrowed to networks, when its IP is in them. A
tag whose condition is not known here (the isolation tags, the application tag) is taken to hold:
reading an end wider than it is keeps a pair that matches nothing, it never drops one that matches.
A pod carries a label's tag only where an endpoint selects in its namespace, so a pod matching here
may lack a tag in Contrail: the same wider reading.

Each end is filed under an anchor every pod matching it has: its namespace with one of its pod
labels, its namespace, one pod label, or none. A pod's change (created, relabelled, moved to an IP,
deleted; its namespace relabelled) looks only at the ends filed under its own anchors, so it costs
in proportion to the ends of its namespace and labels, not to the pairs or the pods; an end tracked
for the first time looks only at the pods of its anchor. An end nobody uses any more is forgotten
at `settle`, so that a policy rewritten in one flush finds its ends' pods already known.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import (AbstractSet, Dict, Generic, Hashable, Iterable, Iterator, List, Mapping, Optional, Set, Tuple,
                    TypeVar)

from ..encoding import NAMESPACE, split_tag
from ..index import ClusterIndex, PodKey
from ..model import METADATA_NAME_LABEL, PodInfo, PodScope, SelectorDef
from ..scope_tags import NAMESPACE_LABEL, POD_LABEL, TagOrigin
from .expressions import TaggedPodsInNetworks, tag_holds
from .items import Pods

Label = Tuple[str, str]
Anchor = Tuple[Optional[str], Optional[Label]]  # (namespace, pod label): what every matching pod has
_NONE: AbstractSet = frozenset()
User = TypeVar("User", bound=Hashable)


@dataclass(frozen=True)
class _Conditions:
    """An end read as conditions on a pod (module docstring)."""

    namespace: Optional[str]
    labels: Tuple[Label, ...]
    namespace_labels: Tuple[Label, ...]
    selectors: Tuple[Tuple[str, SelectorDef], ...]
    end: Pods

    @property
    def anchor(self) -> Anchor:
        return self.namespace, (self.labels[0] if self.labels else None)

    def holds(self, pod: PodInfo, namespace_labels: Mapping[str, str]) -> bool:
        if self.namespace is not None and pod.namespace != self.namespace:
            return False
        labels = pod.labels
        for key, value in self.labels:
            if labels.get(key) != value:
                return False
        for key, value in self.namespace_labels:
            if namespace_labels.get(key) != value:
                return False
        for tag, selector in self.selectors:
            if not tag_holds(tag, selector, pod, namespace_labels):
                return False
        networks = self.end.networks
        if networks is None:
            return True
        address = pod.address
        return address is not None and any(address.version == n.version and address in n for n in networks)


def conditions_of(end: Pods, origins: Mapping[str, TagOrigin]) -> _Conditions:
    namespace: Optional[str] = None
    labels: List[Label] = []
    namespace_labels: List[Label] = []
    selectors: List[Tuple[str, SelectorDef]] = []
    for tag in sorted(end.tags):
        origin = origins.get(tag)
        if origin is None:
            tag_type, value = split_tag(tag)
            if tag_type == NAMESPACE:
                namespace = value
        elif isinstance(origin, SelectorDef):
            selectors.append((tag, origin))
            pods = origin.pods
            if namespace is None and isinstance(pods, (PodScope, TaggedPodsInNetworks)):
                namespace = pods.namespace
        else:
            kind, key, value = origin
            if kind == POD_LABEL:
                labels.append((key, value))
            elif kind == NAMESPACE_LABEL:
                namespace_labels.append((key, value))
                if key == METADATA_NAME_LABEL and namespace is None:
                    namespace = value  # a namespace's name label is its name (SPEC 2)
    return _Conditions(namespace, tuple(labels), tuple(namespace_labels), tuple(selectors), end)


def anchors_of(pod: PodInfo) -> Iterator[Anchor]:
    namespace = pod.namespace
    yield namespace, None
    for label in pod.labels.items():
        yield namespace, label
        yield None, label
    yield None, None


class RealisedEnds(Generic[User]):
    """The tracked ends, each with the pods matching it now and the users (pairs) naming it."""

    def __init__(self, origins: Mapping[str, TagOrigin], index: ClusterIndex) -> None:
        self._origins = origins
        self._index = index
        self._conditions: Dict[Pods, _Conditions] = {}
        self._anchored: Dict[Anchor, Set[Pods]] = {}
        self._members: Dict[Pods, Set[PodKey]] = {}
        self._users: Dict[Pods, Set[User]] = {}
        self._idle: Set[Pods] = set()  # tracked, used by nobody since the last `settle`
        self._ends_of: Dict[PodKey, Set[Pods]] = {}
        self._pods: Dict[PodKey, None] = {}  # pods to look at again
        self._namespaces: Set[str] = set()  # namespaces whose pods to look at again

    # --- what uses an end ---------------------------------------------------------------------

    def track(self, end: Pods, user: User) -> bool:
        """`user` names `end`; whether some pod matches it now."""
        users = self._users.get(end)
        if users is None:
            users = self._users[end] = set()
            self._start(end)
        elif not users:
            self._idle.discard(end)
        users.add(user)
        return bool(self._members[end])

    def untrack(self, end: Pods, user: User) -> None:
        users = self._users[end]
        users.discard(user)
        if not users:
            self._idle.add(end)

    def users(self, end: Pods) -> AbstractSet[User]:
        return self._users.get(end, _NONE)

    def realised(self, end: Pods) -> bool:
        return bool(self._members.get(end))

    def _start(self, end: Pods) -> None:
        conditions = self._conditions[end] = conditions_of(end, self._origins)
        anchor = conditions.anchor
        self._anchored.setdefault(anchor, set()).add(end)
        members = self._members[end] = set()
        index = self._index
        for key in self._candidates(anchor):
            pod = index.pods[key]
            if conditions.holds(pod, index.namespace_labels(pod.namespace)):
                members.add(key)
                self._ends_of.setdefault(key, set()).add(end)

    def _candidates(self, anchor: Anchor) -> Iterable[PodKey]:
        namespace, label = anchor
        index = self._index
        if namespace is not None:
            return index.namespace_pods(namespace)
        if label is not None:
            return index.pods_with_label(*label)
        return index.pods

    def settle(self) -> None:
        """Forget the ends nobody uses any more."""
        idle, self._idle = self._idle, set()
        for end in idle:
            anchor = self._conditions.pop(end).anchor
            del self._users[end]
            filed = self._anchored[anchor]
            filed.discard(end)
            if not filed:
                del self._anchored[anchor]
            for key in self._members.pop(end):
                ends = self._ends_of[key]
                ends.discard(end)
                if not ends:
                    del self._ends_of[key]

    # --- what changes which pods match --------------------------------------------------------

    def pod_changed(self, key: PodKey) -> None:
        self._pods[key] = None

    def namespace_changed(self, name: str) -> None:
        self._namespaces.add(name)

    def flush(self) -> Tuple[List[Pods], List[Pods]]:
        """Look again at the pods changed since the last flush: (the ends some pod matches now and
        none did, the ends no pod matches any more)."""
        pods, self._pods = self._pods, {}
        namespaces, self._namespaces = self._namespaces, set()
        if not self._conditions:  # nothing tracked (a bulk load's first flush): nothing to look at
            return [], []
        for name in namespaces:
            pods.update(dict.fromkeys(self._index.namespace_pods(name)))
        before: Dict[Pods, bool] = {}
        for key in pods:
            self._look_again(key, before)
        now = [(end, bool(self._members[end])) for end, was in before.items()]
        return ([end for end, realised in now if realised and not before[end]],
                [end for end, realised in now if not realised and before[end]])

    def _look_again(self, key: PodKey, before: Dict[Pods, bool]) -> None:
        old = self._ends_of.pop(key, _NONE)
        new: Set[Pods] = set()
        index = self._index
        pod = index.pods.get(key)
        if pod is not None:
            namespace_labels = index.namespace_labels(pod.namespace)
            anchored, conditions = self._anchored, self._conditions
            for anchor in anchors_of(pod):
                for end in anchored.get(anchor, _NONE):
                    if conditions[end].holds(pod, namespace_labels):
                        new.add(end)
        if new:
            self._ends_of[key] = new
        for end in new - old:
            members = self._members[end]
            before.setdefault(end, bool(members))
            members.add(key)
        for end in old - new:
            members = self._members[end]
            before.setdefault(end, bool(members))
            members.discard(key)
