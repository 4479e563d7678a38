"""Namespaces as a kind source of the incremental translator (SPEC 8, 15).

The index holds a namespace while it has a manifest or while pods or policies use it (an implicit
namespace, with only its name label). Its tag `namespace=<name>` lives as long as it does; a change
of its labels marks the pods of the namespace and tells the policy sources, whose selections may
move; its logging annotation marks its NetworkPolicies for rendering again. Whoever decides by a
namespace's labels whether its pods can exist at all (the exact mode's pairs) hears of every
change of the namespace, with pods or without.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, Mapping, Optional

from kube_manager.registry import NAMESPACES

from .encoding import namespace_tag
from .index import ClusterIndex
from .inputs import implicit_namespace, parse_namespace, reported_key
from .kind_source import Emitted, Identity
from .marks import Marks
from .match_logging import MatchLogging, annotation_of
from .membership import SelectorMembership
from .model import NamespaceInfo
from .parsecache import ParseCache
from .shared import SharedObjects

NAMESPACE_KIND = NAMESPACES.kind


class NamespaceSource:
    """The Namespace source, and the count of the pods and policies that use each namespace."""

    kind = NAMESPACE_KIND

    def __init__(self, index: ClusterIndex, shared: SharedObjects, membership: SelectorMembership, marks: Marks,
                 parse_cache: ParseCache, logging: MatchLogging, relabelled: Callable[[], None],
                 logging_changed: Callable[[str], None], changed: Callable[[str], None]) -> None:
        self._index = index
        self._shared = shared
        self._membership = membership
        self._marks = marks
        self._parse_cache = parse_cache
        self._logging = logging
        self._relabelled = relabelled  # a namespace with pods changed labels
        self._logging_changed = logging_changed  # a namespace's logging annotation changed
        self._changed = changed  # a namespace appeared, went, or changed labels
        self._explicit: Dict[str, NamespaceInfo] = {}
        self._users: Dict[str, int] = {}  # pods and policies of each namespace

    # --- the kind source ----------------------------------------------------------------------

    def identity(self, manifest: Any) -> Identity:
        return "", reported_key(manifest)[1]

    def upsert(self, manifest: Mapping[str, Any]) -> Identity:
        namespace = parse_namespace(manifest, self._parse_cache)
        self._explicit[namespace.name] = namespace
        self._sync(namespace.name)
        if self._logging.set_namespace(namespace.name, annotation_of(manifest)):
            self._logging_changed(namespace.name)
        return "", namespace.name

    def remove(self, namespace: str, name: str) -> None:
        if self._explicit.pop(name, None) is not None:
            self._sync(name)
        if self._logging.set_namespace(name, None):
            self._logging_changed(name)

    def status(self, namespace: str, name: str) -> Optional[Emitted]:
        return None  # a namespace emits no policy; its tag is a pod's

    def errors(self) -> Iterator[Dict[str, str]]:
        return iter(())  # a namespace is translated whole or rejected

    # --- users --------------------------------------------------------------------------------

    def use(self, name: str, delta: int) -> None:
        """A pod or policy of namespace `name` appeared (1) or went (-1)."""
        count = self._users.get(name, 0) + delta
        if count:
            self._users[name] = count
        else:
            self._users.pop(name, None)
        if count <= 1:  # the namespace may have appeared or disappeared
            self._sync(name)

    def _sync(self, name: str) -> None:
        """Make the index hold what is known of namespace `name`: its manifest, the implicit
        namespace of its pods and policies (SPEC 8), or nothing."""
        wanted = self._explicit.get(name)
        if wanted is None and name in self._users:
            wanted = implicit_namespace(name)
        current = self._index.namespaces.get(name)
        if current == wanted:
            return
        if current is None or wanted is None or current.labels != wanted.labels:
            self._changed(name)
        if wanted is None:
            self._index.remove_namespace(name)
            self._shared.unref_tag(namespace_tag(name))
            return
        self._index.put_namespace(wanted)
        if current is None:
            self._shared.ref_tag(namespace_tag(name), None)
        if current is not None and current.labels != wanted.labels:
            self._membership.namespace_changed(name)
            pods = self._index.namespace_pods(name)
            self._marks.mark_pods(pods)
            if pods:
                self._relabelled()
