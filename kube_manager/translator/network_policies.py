"""NetworkPolicies as a policy source of the incremental translator (SPEC 4).

A source keeps its parsed objects, renders the marked ones at each flush, and applies each
rendering through the shared objects (tags, address groups) and the desired objects (its firewall
policy and rules, its refs in the APS and in `<cluster>-denyall`). What is particular to
NetworkPolicies stays here: name collisions between `<namespace>-<name>` spellings (collisions.py),
and the policies to re-render when the pods whose named ports they resolved change.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Set, Tuple

from kube_manager.plumbing.kvlog import kv

from kube_manager.registry import NETWORK_POLICIES

from .bodies import FqName
from .changes import ChangeLog
from .collisions import NameRegistry
from .index import ClusterIndex
from .inputs import reported_key
from .kind_source import Emitted, Identity, Unrendered
from .match_logging import MatchLogging
from .marks import Marks, PolicyKey
from .model import ParsedPolicy, PodInfo, PodScope
from .published import DesiredState
from .namespaces import NamespaceSource
from .naming import collision_label
from .parsecache import ParseCache
from .policy import parse_policy
from .rejections import Rejections, describe_object, object_logger
from .render import PolicyRenderer, PolicyRendering
from .sequenced import SequencedRefs
from .shared import SharedObjects
from .store import DesiredObjects

POLICY_KIND = NETWORK_POLICIES.kind


@dataclass(frozen=True)
class PolicyObjects:
    """The objects one NetworkPolicy owns or uses, for the introspect page and the reconciler."""

    firewall_policy: FqName
    rules: Tuple[FqName, ...]  # pass rules, in sequence order
    deny_rules: Tuple[FqName, ...]  # in <cluster>-denyall
    address_groups: Tuple[FqName, ...]
    tags: Tuple[str, ...]  # label, namespace-label and selector tags its endpoints use
    errors: Tuple[str, ...]


@dataclass(eq=False, repr=False)
class NetworkPolicies:
    """The NetworkPolicy source: parsed policies in, firewall policies and their rules out."""

    _renderer: PolicyRenderer
    _index: ClusterIndex
    _shared: SharedObjects
    _store: DesiredObjects
    _aps_refs: SequencedRefs
    _deny_refs: SequencedRefs  # `<cluster>-denyall`'s
    _rejections: Rejections
    _marks: Marks
    _log: ChangeLog
    _published: DesiredState  # its deny rules' owners and its tags, for the reconciler
    _logging: MatchLogging  # the namespaces' logging of matches, applied to each rendering
    _parse_cache: ParseCache
    _namespaces: NamespaceSource  # a policy is a user of its namespace
    # Told of the policy of every rendering applied (None: the policy is gone or not rendered), for
    # what depends on all of them and reads the policies themselves (the exact mode).
    _on_applied: Optional[Callable[[PolicyKey, Optional[ParsedPolicy]], None]] = None
    _policies: Dict[PolicyKey, ParsedPolicy] = field(default_factory=dict, init=False)
    _renderings: Dict[PolicyKey, PolicyRendering] = field(default_factory=dict, init=False)
    _names: NameRegistry = field(default_factory=NameRegistry, init=False)  # names rendered under <np>
    _suffixed: Set[PolicyKey] = field(default_factory=set, init=False)  # renderings with collision labels
    # The policies that resolved named ports on the pods of a namespace, or across namespaces.
    _dependents_by_namespace: Dict[str, Set[PolicyKey]] = field(default_factory=dict, init=False)
    _cluster_dependents: Set[PolicyKey] = field(default_factory=set, init=False)
    _errors: Dict[PolicyKey, Tuple[str, ...]] = field(default_factory=dict, init=False)  # of the last flush

    # --- events -------------------------------------------------------------------------------

    kind = POLICY_KIND

    def identity(self, manifest: Any) -> Identity:
        return reported_key(manifest)

    def upsert(self, manifest: Mapping[str, Any]) -> Identity:
        """Record the policy and mark it when it differs."""
        policy = parse_policy(manifest, self._parse_cache)
        key = policy.key  # (a property: a new tuple each time)
        old = self._policies.get(key)
        if old is not None and old.uid == policy.uid and old.spec_sha256 == policy.spec_sha256:
            return key
        self._policies[key] = policy
        self._marks.policies[key] = None
        if old is None:
            self._namespaces.use(policy.namespace, 1)
        return key

    def remove(self, namespace: str, name: str) -> None:
        """Forget the policy and mark it."""
        key = (namespace, name)
        if self._policies.pop(key, None) is not None:
            self._marks.policies[key] = None
            self._namespaces.use(namespace, -1)

    def pod_changed(self, old: Optional[PodInfo], new: Optional[PodInfo]) -> None:
        """Mark the policies whose named ports may resolve differently now."""
        if self._dependents_by_namespace:
            for pod in (old, new):
                if pod is not None:
                    self._marks.mark_policies(self._dependents_by_namespace.get(pod.namespace, ()))
        if self._cluster_dependents:
            self._marks.mark_policies(self._cluster_dependents)

    def mark_namespace(self, namespace: str) -> None:
        """The namespace's logging of matches changed: its policies are rendered again."""
        self._marks.mark_policies([key for key in self._policies if key[0] == namespace])

    def namespace_relabelled(self) -> None:
        """A namespace with pods changed labels: named ports resolved across namespaces may move."""
        self._marks.mark_policies(self._cluster_dependents)

    # --- reads --------------------------------------------------------------------------------

    def status(self, namespace: str, name: str) -> Optional[Emitted]:
        """Its objects (`PolicyObjects`), or, rendered not at all, its errors; None when unknown."""
        key = (namespace, name)
        rendering = self._renderings.get(key)
        if rendering is None:
            policy = self._policies.get(key)
            return Unrendered(policy.errors) if policy is not None else None
        return PolicyObjects(rendering.policy[0], rendering.rules,
                             tuple(fq for fq, _, _ in rendering.deny_rules),
                             tuple(sorted(rendering.address_groups)), tuple(sorted(rendering.tags)),
                             rendering.errors)

    def errors(self) -> Iterator[Dict[str, str]]:
        """The reasons of the last flush, whole rejections apart (they are the translator's)."""
        for (namespace, name), reasons in self._errors.items():
            for reason in reasons:
                yield {"kind": POLICY_KIND, "namespace": namespace, "name": name, "reason": reason}

    def publish(self) -> None:
        """Fill the published state from the current renderings and keep it up to date from now
        on: a bulk translator (no change log) skips it until someone asks."""
        self._published.live = True
        for key, rendering in self._renderings.items():
            self._published.applied(key, None, rendering)

    # --- flushing -----------------------------------------------------------------------------

    def flush(self) -> None:
        """Render the marked policies and apply them, settling name collisions on the way."""
        marks = self._marks
        if not marks.policies:
            return
        dirty, marks.policies = marks.policies, {}
        base: Dict[PolicyKey, Optional[PolicyRendering]] = {}
        affected: Set[PolicyKey] = set()
        collides = self._names.collides
        retracted: List[PolicyKey] = []
        for key in dirty:
            rendering = base[key] = self._render(key, False)
            if rendering is None:
                retracted.append(key)
            others = self._names.index(key, rendering.names if rendering is not None else ())
            if others:
                affected.update(others)
        # Retractions first: a deleted or rejected policy's old names can be the very names another
        # policy takes in this flush (their collision ends), and dropping them afterwards would drop
        # the survivor's objects with them.
        for key in retracted:
            self._apply(key, None, False)
        for key, rendering in base.items():
            if rendering is not None:
                suffixed = collides(key)
                self._apply(key, self._render(key, True) if suffixed else rendering, suffixed)
        for key in affected.difference(dirty):
            suffixed = collides(key)
            if suffixed != (key in self._suffixed):
                self._apply(key, self._render(key, suffixed), suffixed)

    def _render(self, key: PolicyKey, suffixed: bool) -> Optional[PolicyRendering]:
        policy = self._policies.get(key)
        if policy is None or policy.spec.selection is None:
            return None
        label = collision_label(policy.namespace, policy.name) if suffixed else policy.name
        try:
            rendering = self._logging.network_policy(self._renderer.render(policy, self._index, label), policy.namespace)
        except Exception as exc:  # a bug confined to this policy: rendered as rejected whole
            self._rejections.add((POLICY_KIND,) + key, exc)
            return None
        if self._rejections:
            self._rejections.discard((POLICY_KIND,) + key)
        return rendering

    def _apply(self, key: PolicyKey, rendering: Optional[PolicyRendering], suffixed: bool) -> None:
        old = self._renderings.pop(key, None)
        policy = self._policies.get(key)
        if rendering is not None:
            self._renderings[key] = rendering
            errors = new_errors = rendering.errors
        else:
            new_errors = ()
            errors = policy.errors if policy is not None else ()
        if self._published.live:
            self._published.applied(key, old, rendering)
        if self._on_applied is not None:
            self._on_applied(key, policy if rendering is not None else None)
        if suffixed:
            self._suffixed.add(key)
        elif self._suffixed:
            self._suffixed.discard(key)
        changed = self._shared.apply(old, rendering)
        changed |= self._store.replace_policy(old, rendering, self._aps_refs, self._deny_refs)
        logged = self._errors.get(key, ()) if self._errors else ()
        if errors:
            self._errors[key] = errors
        elif logged:
            del self._errors[key]
        if self._log.enabled and (changed or (old.errors if old is not None else ()) != new_errors):
            self._log.policies_touched(POLICY_KIND, (key,))
        for reason in errors:  # each reason once, whole rejections included
            if reason not in logged:
                object_logger(POLICY_KIND, *key).warning("%s: %s", describe_object((POLICY_KIND,) + key), reason,
                                                         extra=kv(reason=reason))
        if (old is not None and old.destinations) or (rendering is not None and rendering.destinations):
            self._apply_dependencies(key, old, rendering)

    def _apply_dependencies(self, key: PolicyKey, old: Optional[PolicyRendering],
                            new: Optional[PolicyRendering]) -> None:
        """Remember which pods' named ports this policy read, to re-render it when they change."""
        for rendering, register in ((old, False), (new, True)):
            for pods in rendering.destinations if rendering is not None else ():
                namespace = pods.namespace if isinstance(pods, PodScope) else None
                if namespace is not None:
                    group = self._dependents_by_namespace.setdefault(namespace, set())
                else:
                    group = self._cluster_dependents
                if register:
                    group.add(key)
                else:
                    group.discard(key)
                    if not group and namespace is not None:
                        del self._dependents_by_namespace[namespace]
