"""The incremental translator the daemon drives: Kubernetes events in, desired Contrail state out.

`ClusterTranslator` keeps the cluster's namespaces, pods and NetworkPolicies with the indexes that
make one event cost in proportion to what it changes, not to the cluster: an upsert only records
the object and marks what depends on it; the next read (`desired`, `pop_changes`, `pod_tags`, ...)
re-renders the marked policies and re-tags the marked pods. Shared objects (tags, address groups)
are reference-counted across policies, name collisions are tracked per name (collisions.py), and
the two objects that refer to every policy (the APS and `<cluster>-denyall`) are updated one ref at
a time.

A bulk load (`translate()`: no change log) goes through the same code; what only serves to report
changes or to find the pods of a label later is skipped or built on first use: the change log,
per-object change detection, ref operations, label indexes.

The result is, by construction and by property test, the same as translating the final state from
scratch with `translate()`.
"""
from __future__ import annotations

import logging
import re
from operator import itemgetter
from dataclasses import dataclass
from typing import Any, Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Set, Tuple, TypeVar

from kvlog import kv

from .bodies import (ADDRESS_GROUP, APPLICATION_POLICY_SET, FIREWALL_POLICY, FIREWALL_RULE,
                     PASS, RESOURCE_TYPES, TAG, Body, BodyFactory, FqName, global_fq_name, sequenced_ref)
from .changes import ChangeLog, Changes
from .collisions import NameRegistry
from .cidr import IpBlock
from .encoding import namespace_tag
from .index import ClusterIndex, PodKey
from .inputs import implicit_namespace, namespace_key, object_key, parse_namespace, parse_pod
from .membership import SelectorMembership
from .decode import SelectorView
from .model import NamespaceInfo, ParsedPolicy, PodInfo, PodScope, SelectorDef
from .naming import (ALLOWALL_SEQUENCE, DENYALL_SEQUENCE, allowall_policy_name, collision_label,
                     denyall_policy_name, rule_sequence)
from .parsecache import ParseCache
from .policy import parse_policy
from .render import POD_LABEL, LabelOrigin, PolicyRenderer, PolicyRendering, ScopedLabel, TagOrigin
from .sequenced import SequencedRefs
from .rejections import Rejections, describe, object_logger
from .translation import Translation, collector_paused

log = logging.getLogger(__name__)

PolicyKey = Tuple[str, str]
Parsed = TypeVar("Parsed", PodInfo, ParsedPolicy)
NAMESPACE_KIND, POD_KIND, POLICY_KIND = "Namespace", "Pod", "NetworkPolicy"
_CLUSTER_NAME_RE = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


def cluster_name_problem(name: Any) -> Optional[str]:
    """The cluster name is a tag value (`application=<cluster>`) and starts every object name."""
    if not isinstance(name, str) or not _CLUSTER_NAME_RE.fullmatch(name):
        return (f"cluster name {name!r} must be 1-63 alphanumerics, '-', '_' or '.', starting and"
                " ending with an alphanumeric")
    return None


@dataclass(frozen=True)
class PolicyObjects:
    """The objects one NetworkPolicy owns or uses, for the introspect page and the reconciler."""

    firewall_policy: FqName
    rules: Tuple[FqName, ...]  # pass rules, in sequence order
    deny_rules: Tuple[FqName, ...]  # in <cluster>-denyall
    address_groups: Tuple[FqName, ...]
    tags: Tuple[str, ...]  # label, namespace-label and selector tags its endpoints use
    errors: Tuple[str, ...]


class ClusterTranslator:
    """Incremental translation of one cluster (SPEC 2-5, 11). Not thread-safe; one gevent loop.

    Bodies returned by `desired()` and `translation()` are shared and must not be modified.
    """

    def __init__(self, cluster_name: str = "k8s", owner: str = "k8s", *, track_changes: bool = True) -> None:
        problem = cluster_name_problem(cluster_name)
        if problem:
            raise ValueError(problem)
        if not isinstance(owner, str) or not owner:
            raise ValueError("the owner (kubernetes_cluster_owner) must be a non-empty string")
        self.cluster_name = cluster_name
        self.owner = owner
        self._bodies = BodyFactory(cluster_name, owner)
        self._renderer = PolicyRenderer(self._bodies)
        self._parse_cache = ParseCache()
        self._index = ClusterIndex()
        self._membership = SelectorMembership(self._index)
        self._log = ChangeLog(track_changes)
        self._objects: Dict[str, Dict[FqName, Body]] = {t: {} for t in RESOURCE_TYPES}
        self._explicit_namespaces: Dict[str, NamespaceInfo] = {}
        self._namespace_users: Dict[str, int] = {}  # pods and policies of each namespace
        self._policies: Dict[PolicyKey, ParsedPolicy] = {}
        self._renderings: Dict[PolicyKey, PolicyRendering] = {}
        self._names = NameRegistry()  # names rendered under <np>, for collisions
        self._suffixed: Set[PolicyKey] = set()
        self._dependents_by_namespace: Dict[str, Set[PolicyKey]] = {}  # named ports resolved there
        self._cluster_dependents: Set[PolicyKey] = set()  # named ports resolved across namespaces
        self._tag_refs: Dict[str, int] = {}
        self._tag_origins: Dict[str, TagOrigin] = {}
        # Referenced label tags by their (key, value), pod labels and namespace labels apart.
        self._pod_label_tags: Dict[Tuple[str, str], str] = {}
        self._namespace_label_tags: Dict[Tuple[str, str], str] = {}
        self._dirty_origins: List[LabelOrigin] = []  # namespace label tags referenced or released
        # Where the endpoints naming each pod label select (SPEC 2): namespaces and namespace label
        # sets (the empty set: every namespace), counted over the policies' renderings.
        self._label_namespaces: Dict[Tuple[str, str], Dict[str, int]] = {}
        self._label_selectors: Dict[Tuple[str, str], Dict[FrozenSet[Tuple[str, str]], int]] = {}
        self._dirty_scopes: List[ScopedLabel] = []  # scopes that came or went since the last flush
        self._address_group_refs: Dict[FqName, int] = {}
        self._pod_tags: Dict[PodKey, Tuple[str, ...]] = {}
        self._rejections = Rejections()  # objects refused, by (kind, namespace, name)
        self._policy_errors: Dict[PolicyKey, Tuple[str, ...]] = {}  # of each policy's last flush
        # Marked for the next flush, in marking order (dicts as ordered sets): a bulk load then
        # visits objects in the order they were created, which keeps memory accesses local.
        self._dirty_policies: Dict[PolicyKey, None] = {}
        self._dirty_pods: Dict[PodKey, None] = {}
        self._create_cluster_objects()

    # --- Kubernetes events --------------------------------------------------------------------

    def upsert_namespace(self, manifest: Mapping[str, Any]) -> None:
        try:
            namespace = parse_namespace(manifest, self._parse_cache)
        except Exception as exc:  # InvalidInput, or a bug confined to this object
            self.reject(NAMESPACE_KIND, "", namespace_key(manifest), exc)
            return
        self._rejections.discard((NAMESPACE_KIND, "", namespace.name))
        self._explicit_namespaces[namespace.name] = namespace
        self._sync_namespace(namespace.name)

    def delete_namespace(self, name: str) -> None:
        self._rejections.discard((NAMESPACE_KIND, "", name))
        self._remove_namespace(name)

    def _remove_namespace(self, name: str) -> None:
        if self._explicit_namespaces.pop(name, None) is not None:
            self._sync_namespace(name)

    def upsert_pod(self, manifest: Mapping[str, Any]) -> None:
        pod = self._parse_namespaced(POD_KIND, parse_pod, manifest)
        if pod is None:
            return
        old = self._index.put_pod(pod)
        if old is None:
            self._use_namespace(pod.namespace, 1)
        elif old == pod:
            return
        self._pod_changed(pod.key, old, pod)

    def delete_pod(self, namespace: str, name: str) -> None:
        self._rejections.discard((POD_KIND, namespace, name))
        self._remove_pod(namespace, name)

    def _remove_pod(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        old = self._index.remove_pod(key)
        if old is not None:
            self._pod_changed(key, old, None)
            self._use_namespace(namespace, -1)

    def upsert_policy(self, manifest: Mapping[str, Any]) -> None:
        policy = self._parse_namespaced(POLICY_KIND, parse_policy, manifest)
        if policy is None:
            return
        old = self._policies.get(policy.key)
        if old is not None and old.uid == policy.uid and old.spec_sha256 == policy.spec_sha256:
            return
        if old is None:
            self._use_namespace(policy.namespace, 1)
        self._policies[policy.key] = policy
        self._dirty_policies[policy.key] = None

    def delete_policy(self, namespace: str, name: str) -> None:
        self._rejections.discard((POLICY_KIND, namespace, name))
        self._remove_policy(namespace, name)

    def _remove_policy(self, namespace: str, name: str) -> None:
        key = (namespace, name)
        if self._policies.pop(key, None) is not None:
            self._dirty_policies[key] = None
            self._use_namespace(namespace, -1)

    def _parse_namespaced(self, kind: str, parser: Callable[[Any, ParseCache], Parsed],
                          manifest: Mapping[str, Any]) -> Optional[Parsed]:
        """Parse a pod or policy; one that cannot be read replaces any earlier state of its key by
        a rejection."""
        try:
            parsed = parser(manifest, self._parse_cache)
        except Exception as exc:  # InvalidInput, or a bug confined to this object
            self.reject(kind, *object_key(manifest), exc)
            return None
        if self._rejections:
            self._rejections.discard((kind,) + parsed.key)
        return parsed

    def reject(self, kind: str, namespace: str, name: str, exc: Exception) -> None:
        """Forget the object and record it as rejected because of `exc` (logged once). The daemon
        calls this too, when handling the object failed outside the translator."""
        remove = {NAMESPACE_KIND: lambda: self._remove_namespace(name),
                  POD_KIND: lambda: self._remove_pod(namespace, name),
                  POLICY_KIND: lambda: self._remove_policy(namespace, name)}[kind]
        remove()
        self._rejections.add((kind, namespace, name), exc)

    # --- reads --------------------------------------------------------------------------------

    def desired(self) -> Mapping[str, Mapping[FqName, Body]]:
        """resource type -> fq_name -> body, for everything kube-manager wants in Contrail."""
        self._flush()
        return self._objects

    def pop_changes(self) -> Changes:
        """What changed in `desired()` and in pod tags since the previous call."""
        self._flush()
        return self._log.pop(self._objects, self._pod_tags)

    def pod_tags(self, namespace: str, name: str) -> Optional[Tuple[str, ...]]:
        """The sorted `type=value` tags the pod's VMIs must carry; None for an unknown pod."""
        self._flush()
        return self._pod_tags.get((namespace, name))

    def policy_errors(self, namespace: str, name: str) -> Tuple[str, ...]:
        self._flush()
        key = (namespace, name)
        reason = self._rejections.get((POLICY_KIND,) + key)
        if reason is not None:
            return (reason,)
        rendering = self._renderings.get(key)
        if rendering is not None:
            return rendering.errors
        policy = self._policies.get(key)
        return policy.errors if policy is not None else ()

    def policy_objects(self, namespace: str, name: str) -> Optional[PolicyObjects]:
        """The objects of one NetworkPolicy; None when it is unknown or rejected whole."""
        self._flush()
        rendering = self._renderings.get((namespace, name))
        if rendering is None:
            return None
        return PolicyObjects(rendering.policy[0], tuple(fq for fq, _ in rendering.rules),
                             tuple(fq for fq, _, _ in rendering.deny_rules),
                             tuple(sorted(rendering.address_groups)), tuple(sorted(rendering.tags)),
                             rendering.errors)

    def errors(self) -> List[Dict[str, str]]:
        """Every rejection and unresolved named port, sorted by kind, namespace and name."""
        self._flush()
        errors = [{"kind": kind, "namespace": namespace, "name": name, "reason": reason}
                  for (kind, namespace, name), reason in self._rejections.items()]
        for (namespace, name), reasons in self._policy_errors.items():
            for reason in reasons:
                errors.append({"kind": POLICY_KIND, "namespace": namespace, "name": name,
                               "reason": reason})
        errors.sort(key=lambda e: (e["kind"], e["namespace"], e["name"]))
        return errors

    def translation(self) -> Translation:
        """The whole desired state in SPEC 8's order."""
        self._flush()

        def ordered(resource_type: str) -> Tuple[Body, ...]:
            # The objects of one type share their parent (or have none), so sorting by fq_name is
            # sorting by name; strings compare faster than tuples.
            store = self._objects[resource_type]
            return tuple(map(store.__getitem__, sorted(store, key=itemgetter(-1))))

        tag_lists: Dict[int, List[str]] = {}  # pods with equal tags share their tuple, and so a list
        workloads = []
        for key, pod in sorted(self._index.pods.items()):
            tags = self._pod_tags[key]
            listed = tag_lists.get(id(tags))
            if listed is None:
                listed = tag_lists[id(tags)] = list(tags)
            workloads.append({"namespace": pod.namespace, "name": pod.name, "ip": pod.ip, "tags": listed})
        (aps,) = self._objects[APPLICATION_POLICY_SET].values()
        return Translation(self.cluster_name, ordered(TAG), ordered(ADDRESS_GROUP), ordered(FIREWALL_RULE),
                           ordered(FIREWALL_POLICY), aps, tuple(workloads), tuple(self.errors()),
                           dict(self.selectors()))

    def selectors(self) -> SelectorView:
        """A live read-only view: selector tag -> the object it was hashed from."""
        return SelectorView(self._tag_origins)

    # --- cluster objects ----------------------------------------------------------------------

    def _create_cluster_objects(self) -> None:
        """The application tag, `<cluster>-allowall`, `<cluster>-denyall` and the APS (SPEC 5)."""
        application = self._renderer.application_tag
        self._ref_tag(application, None)
        allowall = allowall_policy_name(self.cluster_name)
        cluster_pods, anything = {"tags": [application]}, self._bodies.any_endpoint
        rule_refs = []
        for i, (direction, endpoints) in enumerate((("ingress", (anything, cluster_pods)),
                                                     ("egress", (cluster_pods, anything)))):
            fq_name = global_fq_name(f"{allowall}-{direction}")
            self._put(FIREWALL_RULE, fq_name, self._bodies.any_rule(fq_name, PASS, *endpoints))
            rule_refs.append(sequenced_ref(fq_name, rule_sequence(i)))
        allowall_fq = global_fq_name(allowall)
        self._put(FIREWALL_POLICY, allowall_fq, self._bodies.firewall_policy(allowall_fq, rule_refs))
        self._denyall_fq = global_fq_name(denyall_policy_name(self.cluster_name))
        denyall = self._bodies.firewall_policy(self._denyall_fq, [])
        self._put(FIREWALL_POLICY, self._denyall_fq, denyall)
        self._deny_refs = SequencedRefs(denyall["firewall_rule_refs"])
        self._aps_fq = global_fq_name(self.cluster_name)
        aps = self._bodies.application_policy_set(self._aps_fq, application, [])
        self._put(APPLICATION_POLICY_SET, self._aps_fq, aps)
        self._aps_refs = SequencedRefs(aps["firewall_policy_refs"])
        self._aps_refs.set(self._denyall_fq, DENYALL_SEQUENCE, denyall["fq_name"])
        self._aps_refs.set(allowall_fq, ALLOWALL_SEQUENCE, self._objects[FIREWALL_POLICY][allowall_fq]["fq_name"])
        self._commit_refs()

    # --- objects and the change log -----------------------------------------------------------

    def _put(self, resource_type: str, fq_name: FqName, body: Body) -> bool:
        store = self._objects[resource_type]
        previous = store.get(fq_name)
        if previous is not None and previous == body:
            return False
        self._log.object_touched((resource_type, fq_name), previous)
        store[fq_name] = body
        return True

    def _put_all(self, resource_type: str, items: Iterable[Tuple[FqName, Body]]) -> bool:
        """`_put` of each item; whether any changed. Without a change log (a bulk load) the
        items simply replace what is there: nobody needs to hear which ones differed."""
        if not self._log.enabled:
            self._objects[resource_type].update(items)
            return True
        changed = False
        for fq_name, body in items:
            changed |= self._put(resource_type, fq_name, body)
        return changed

    def _drop(self, resource_type: str, fq_name: FqName) -> None:
        previous = self._objects[resource_type].pop(fq_name, None)
        if previous is not None:
            self._log.object_touched((resource_type, fq_name), previous)

    def _commit_refs(self) -> None:
        for fq_name, refs, resource_type, ref_type in (
                (self._denyall_fq, self._deny_refs, FIREWALL_POLICY, FIREWALL_RULE),
                (self._aps_fq, self._aps_refs, APPLICATION_POLICY_SET, FIREWALL_POLICY)):
            operations = refs.commit(self._log.enabled)
            if operations:
                self._log.object_touched((resource_type, fq_name), self._objects[resource_type][fq_name])
                self._log.refs_moved(resource_type, fq_name, ref_type, operations)

    # --- shared objects -----------------------------------------------------------------------

    def _ref_tag(self, tag: str, origin: Optional[TagOrigin]) -> None:
        count = self._tag_refs.get(tag, 0)
        self._tag_refs[tag] = count + 1
        if count:
            return
        self._put(TAG, (tag,), self._bodies.tag(tag))
        if origin is not None:
            self._tag_origins[tag] = origin
            if isinstance(origin, SelectorDef):
                self._dirty_pods.update(dict.fromkeys(self._membership.activate(tag, origin)))
            else:
                self._label_tags(origin)[origin[1:]] = tag
                if origin[0] != POD_LABEL:  # a pod label's pods are marked by its scopes
                    self._dirty_origins.append(origin)

    def _unref_tag(self, tag: str) -> None:
        count = self._tag_refs[tag] - 1
        if count:
            self._tag_refs[tag] = count
            return
        del self._tag_refs[tag]
        self._drop(TAG, (tag,))
        origin = self._tag_origins.pop(tag, None)
        if isinstance(origin, SelectorDef):
            self._dirty_pods.update(dict.fromkeys(self._membership.retire(tag)))
        elif origin is not None:
            del self._label_tags(origin)[origin[1:]]
            if origin[0] != POD_LABEL:
                self._dirty_origins.append(origin)

    def _label_tags(self, origin: LabelOrigin) -> Dict[Tuple[str, str], str]:
        return self._pod_label_tags if origin[0] == POD_LABEL else self._namespace_label_tags

    def _ref_scope(self, scoped: ScopedLabel, delta: int) -> None:
        """Count one more (+1) or one fewer (-1) endpoint naming a pod label in a scope; the pods
        of the scope are re-tagged when the scope comes or goes."""
        key, value, scope = scoped
        table: Dict[Any, Dict[Any, int]] = (
            self._label_namespaces if isinstance(scope, str) else self._label_selectors)
        counts = table.setdefault((key, value), {})
        count = counts.get(scope, 0) + delta
        if count:
            counts[scope] = count
        else:
            del counts[scope]
            if not counts:
                del table[(key, value)]
        if count == (1 if delta > 0 else 0):
            self._dirty_scopes.append(scoped)

    def _in_scope(self, pair: Tuple[str, str], namespace: str, namespace_labels: FrozenSet[Tuple[str, str]]) -> bool:
        """Some endpoint naming the pod label `pair` can select a pod of `namespace` (SPEC 2)."""
        namespaces = self._label_namespaces.get(pair)
        if namespaces is not None and namespace in namespaces:
            return True
        return any(labels <= namespace_labels for labels in self._label_selectors.get(pair, ()))

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

    def _mark_origin_pods(self) -> None:
        """Mark dirty the pods carrying a label whose tag was referenced or released (in a scope,
        for pod labels) since the last flush. Done at flush time rather than at each reference:
        any pod whose labels changed in between is dirty anyway, and when every pod is already
        dirty (a bulk load) nobody needs to look the pods up."""
        origins, self._dirty_origins = self._dirty_origins, []
        scopes, self._dirty_scopes = self._dirty_scopes, []
        dirty, pods = self._dirty_pods, self._index.pods
        if len(dirty) >= len(pods) and dirty.keys() >= pods.keys():
            return
        for origin in origins:
            dirty.update(dict.fromkeys(self._pods_with(origin)))
        for scoped in scopes:
            dirty.update(dict.fromkeys(self._scope_pods_with(scoped)))

    def _ref_address_group(self, fq_name: FqName, block: IpBlock) -> None:
        count = self._address_group_refs.get(fq_name, 0)
        self._address_group_refs[fq_name] = count + 1
        if not count:
            self._put(ADDRESS_GROUP, fq_name, self._bodies.address_group(fq_name, block.prefixes))

    def _unref_address_group(self, fq_name: FqName) -> None:
        count = self._address_group_refs[fq_name] - 1
        if count:
            self._address_group_refs[fq_name] = count
        else:
            del self._address_group_refs[fq_name]
            self._drop(ADDRESS_GROUP, fq_name)

    # --- namespaces and pods ------------------------------------------------------------------

    def _use_namespace(self, name: str, delta: int) -> None:
        count = self._namespace_users.get(name, 0) + delta
        if count:
            self._namespace_users[name] = count
        else:
            self._namespace_users.pop(name, None)
        if count <= 1:  # the namespace may have appeared or disappeared
            self._sync_namespace(name)

    def _sync_namespace(self, name: str) -> None:
        """Make the index hold what is known of namespace `name`: its manifest, the implicit
        namespace of its pods and policies (SPEC 8), or nothing."""
        wanted = self._explicit_namespaces.get(name)
        if wanted is None and name in self._namespace_users:
            wanted = implicit_namespace(name)
        current = self._index.namespaces.get(name)
        if current == wanted:
            return
        if wanted is None:
            self._index.remove_namespace(name)
            self._unref_tag(namespace_tag(name))
            return
        self._index.put_namespace(wanted)
        if current is None:
            self._ref_tag(namespace_tag(name), None)
        if current is not None and current.labels != wanted.labels:
            self._membership.namespace_changed(name)
            pods = self._index.namespace_pods(name)
            self._dirty_pods.update(dict.fromkeys(pods))
            if pods:
                self._dirty_policies.update(dict.fromkeys(self._cluster_dependents))

    def _pod_changed(self, key: PodKey, old: Optional[PodInfo], new: Optional[PodInfo]) -> None:
        self._membership.pod_changed(key, new)
        self._dirty_pods[key] = None
        if self._dependents_by_namespace:
            for pod in (old, new):
                if pod is not None:
                    self._dirty_policies.update(dict.fromkeys(self._dependents_by_namespace.get(pod.namespace, ())))
        if self._cluster_dependents:
            self._dirty_policies.update(dict.fromkeys(self._cluster_dependents))

    # --- flushing -----------------------------------------------------------------------------

    def _flush(self) -> None:
        # The first flush after a daemon's initial lists renders every policy: with the collector
        # on, its passes over the new bodies cost three times the rendering itself.
        with collector_paused():
            if self._dirty_policies:
                self._flush_policies()
            if self._dirty_origins or self._dirty_scopes:
                self._mark_origin_pods()
            if self._dirty_pods:
                self._flush_pods()
            self._commit_refs()

    def _render(self, key: PolicyKey, suffixed: bool) -> Optional[PolicyRendering]:
        policy = self._policies.get(key)
        if policy is None or policy.spec.selection is None:
            return None
        label = collision_label(policy.namespace, policy.name) if suffixed else policy.name
        try:
            rendering = self._renderer.render(policy, self._index, label)
        except Exception as exc:  # a bug confined to this policy: rendered as rejected whole
            self._rejections.add((POLICY_KIND,) + key, exc)
            return None
        if self._rejections:
            self._rejections.discard((POLICY_KIND,) + key)
        return rendering

    def _flush_policies(self) -> None:
        dirty, self._dirty_policies = self._dirty_policies, {}
        base: Dict[PolicyKey, Optional[PolicyRendering]] = {}
        affected: Set[PolicyKey] = set()
        collides = self._names.collides
        for key in dirty:
            rendering = base[key] = self._render(key, False)
            affected.update(self._names.index(key, rendering.names if rendering is not None else ()))
        # Retractions first: a deleted or rejected policy's old names can be the very names another
        # policy takes in this flush (their collision ends), and dropping them afterwards would drop
        # the survivor's objects with them.
        for key in [key for key in dirty if base[key] is None] + [key for key in dirty if base[key] is not None]:
            rendering = base[key]
            suffixed = rendering is not None and collides(key)
            self._apply(key, self._render(key, True) if suffixed else rendering, suffixed)
        for key in affected.difference(dirty):
            suffixed = collides(key)
            if suffixed != (key in self._suffixed):
                self._apply(key, self._render(key, suffixed), suffixed)

    def _flush_pods(self) -> None:
        dirty, self._dirty_pods = self._dirty_pods, {}
        namespace_tags: Dict[str, Tuple[List[str], FrozenSet[Tuple[str, str]]]] = {}
        label_tags, in_scope = self._pod_label_tags, self._in_scope
        shared: Dict[Tuple[str, ...], Tuple[str, ...]] = {}  # equal tag sets share one tuple
        pods, pod_tags = self._index.pods, self._pod_tags
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
            tags = identity[0] + [label_tags[pair] for pair in pod.labels.items()
                                  if pair in label_tags and in_scope(pair, pod.namespace, identity[1])]
            tags.extend(self._membership.tags_of(key))
            found = tuple(tags)
            result = shared.get(found)
            if result is None:
                result = shared[found] = tuple(sorted(tags))
            if result != previous:
                self._log.pod_touched(key, previous)
                pod_tags[key] = result

    def _namespace_identity(self, namespace: str) -> List[str]:
        """The tags every pod of `namespace` carries: identity and referenced namespace labels."""
        label_tags = self._namespace_label_tags
        return [self._renderer.application_tag, namespace_tag(namespace)] + [
            label_tags[pair] for pair in self._index.namespace_labels(namespace).items() if pair in label_tags]

    # --- applying one policy's rendering ------------------------------------------------------

    def _apply(self, key: PolicyKey, rendering: Optional[PolicyRendering], suffixed: bool) -> None:
        old = self._renderings.pop(key, None)
        if rendering is not None:
            self._renderings[key] = rendering
        if suffixed:
            self._suffixed.add(key)
        else:
            self._suffixed.discard(key)
        changed = self._apply_shared(old, rendering)
        changed |= self._apply_rules(old, rendering)
        old_errors = old.errors if old is not None else ()
        new_errors = rendering.errors if rendering is not None else ()
        policy = self._policies.get(key)
        errors = new_errors if rendering is not None else policy.errors if policy is not None else ()
        logged = self._policy_errors.get(key, ())
        if errors:
            self._policy_errors[key] = errors
        else:
            self._policy_errors.pop(key, None)
        if changed or old_errors != new_errors:
            self._log.policy_touched(key)
        for reason in errors:  # each reason once, whole rejections included
            if reason not in logged:
                object_logger(POLICY_KIND, *key).warning("%s: %s", describe((POLICY_KIND,) + key), reason,
                                                         extra=kv(reason=reason))
        self._apply_dependencies(key, old, rendering)

    def _apply_shared(self, old: Optional[PolicyRendering], new: Optional[PolicyRendering]) -> bool:
        """Reference the new tags and address groups before releasing the old (make before break)."""
        old_tags = old.tags if old is not None else {}
        new_tags = new.tags if new is not None else {}
        old_groups = old.address_groups if old is not None else {}
        new_groups = new.address_groups if new is not None else {}
        for tag, origin in new_tags.items():
            if tag not in old_tags:
                self._ref_tag(tag, origin)
        for fq_name, block in new_groups.items():
            if fq_name not in old_groups:
                self._ref_address_group(fq_name, block)
        old_scoped = old.scoped_labels if old is not None else ()
        new_scoped = new.scoped_labels if new is not None else ()
        if old_scoped != new_scoped:
            for scoped in new_scoped:
                self._ref_scope(scoped, 1)
            for scoped in old_scoped:
                self._ref_scope(scoped, -1)
        for tag in old_tags:
            if tag not in new_tags:
                self._unref_tag(tag)
        for fq_name in old_groups:
            if fq_name not in new_groups:
                self._unref_address_group(fq_name)
        return old_tags.keys() != new_tags.keys() or old_groups.keys() != new_groups.keys()

    def _apply_rules(self, old: Optional[PolicyRendering], new: Optional[PolicyRendering]) -> bool:
        changed = False
        if new is not None:
            changed |= self._put_all(FIREWALL_RULE, new.rules)
            changed |= self._put_all(FIREWALL_RULE, [(fq_name, body) for fq_name, body, _ in new.deny_rules])
            for fq_name, body, sequence in new.deny_rules:
                self._deny_refs.set(fq_name, sequence, body["fq_name"])
            changed |= self._put_all(FIREWALL_POLICY, (new.policy,))
            fq_name, body = new.policy
            self._aps_refs.set(fq_name, new.aps_sequence, body["fq_name"])
        if old is not None:
            kept = set() if new is None else {fq_name for fq_name, _ in new.rules}.union(
                fq_name for fq_name, _, _ in new.deny_rules)
            for fq_name, _ in old.rules:
                if fq_name not in kept:
                    self._drop(FIREWALL_RULE, fq_name)
                    changed = True
            for fq_name, _, _ in old.deny_rules:
                if fq_name not in kept:
                    self._drop(FIREWALL_RULE, fq_name)
                    self._deny_refs.discard(fq_name)
                    changed = True
            fq_name = old.policy[0]
            if new is None or new.policy[0] != fq_name:
                self._drop(FIREWALL_POLICY, fq_name)
                self._aps_refs.discard(fq_name)
                changed = True
        return changed

    def _apply_dependencies(self, key: PolicyKey, old: Optional[PolicyRendering],
                            new: Optional[PolicyRendering]) -> None:
        """Remember which pods' named ports this policy read, to re-render it when they change."""
        if not (old is not None and old.destinations) and not (new is not None and new.destinations):
            return
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
