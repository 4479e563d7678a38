"""The incremental translator the daemon drives: Kubernetes events in, desired Contrail state out.

`ClusterTranslator` keeps the cluster's namespaces, pods and policies with the indexes that make one
event cost in proportion to what it changes, not to the cluster: an event only records the object
and marks what depends on it (`marks.py`); `flush()` re-renders the marked policies, re-tags the
marked pods and reports what changed. Reads never flush: they answer for the state of the last
flush. The rooms:

- kind sources (`kind_source.py`): one per kind of the registry of kinds (`kube_manager/registry.py`),
  built by its `SOURCE` hook from the `TranslatorParts`, by kind in `_kinds` (`namespaces.py`,
  `pods.py`, `network_policies.py`, `cnp/source.py` for ClusterNetworkPolicies); `upsert`, `delete`
  and `reject` read, forget and refuse objects through them, the same way for every kind;
- policy sources (the NetworkPolicy and ClusterNetworkPolicy sources, the exact enforcement's
  pair rules, and any kind's source that renders): renderings applied at each flush; each plugs in
  as one `PolicySource` in `_sources`;
- `shared.py`: the tags and address groups policies share, reference-counted;
- `podtags.py`: the tags each pod must carry;
- `store.py`: the desired objects, the change log of every write, and the two objects that refer
  to every policy (the APS and `<cluster>-denyall`), updated one ref at a time.

A bulk load (`translate()`: no change log) goes through the same code; what only serves to report
changes or to find the pods of a label later is skipped or built on first use: the change log,
per-object change detection, ref operations, label indexes.

The result is, by construction and by property test, the same as translating the final state from
scratch with `translate()`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Tuple, runtime_checkable

from kube_manager.plumbing.gcpolicy import collector_paused
from kube_manager.registry import (CLUSTER_NETWORK_POLICIES, KINDS, NAMESPACES, NETWORK_POLICIES, PODS, SOURCE,
                                   Kinds)

from .bodies import (ADDRESS_GROUP, APPLICATION_POLICY_SET, FIREWALL_POLICY, FIREWALL_RULE,
                     PASS, TAG, Body, BodyFactory, FqName, global_fq_name, sequenced_ref)
from .changes import ChangeLog, Changes
from .cnp.chain import ChainBuilder
from .cnp.source import ClusterNetworkPolicies
from .decode import SelectorView
from .exact.isolation import Isolation
from .exact.source import ExactEnforcement
from .exact.tiers import TierBlocks
from .index import ClusterIndex, PodKey
from .kind_source import Emitted, KindTable, Unrendered
from .marks import Marks
from .match_logging import MatchLogging
from .membership import SelectorMembership
from .model import PodInfo
from .namespaces import NamespaceSource
from .naming import (ALLOWALL_SEQUENCE, DENYALL_SEQUENCE, allowall_policy_name, application_policy_set_name,
                     denyall_policy_name, rule_sequence)
from .network_policies import NetworkPolicies
from .parsecache import ParseCache
from .pods import PodSource
from .podtags import PodTags
from .published import DesiredState
from .rejections import Rejections
from .render import PolicyRenderer
from .semantics import KUBERNETES, semantics_problem
from .sequenced import SequencedRefs
from .shared import SharedObjects
from .staged_policies import StagedPolicy, StagedSplit, split_policy_sources
from .store import DesiredObjects
from .translation import Translation

_CLUSTER_NAME_RE = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


def cluster_name_problem(name: Any) -> Optional[str]:
    """The cluster name is a tag value (`application=<cluster>`) and starts every object name."""
    if not isinstance(name, str) or not _CLUSTER_NAME_RE.fullmatch(name):
        return (f"cluster name {name!r} must be 1-63 alphanumerics, '-', '_' or '.', starting and"
                " ending with an alphanumeric")
    return None


@runtime_checkable
class PolicySource(Protocol):
    """What the translator renders at each flush: the NetworkPolicy and ClusterNetworkPolicy
    sources, the exact enforcement, and any kind's source that has these methods.

    A source marks its own objects in `Marks` on events, renders and applies them in `flush`
    (through `SharedObjects` and `DesiredObjects`, so tags, address groups and the change report
    are common), and is told of the pod and namespace changes that can alter its renderings.
    """

    def flush(self) -> None: ...

    def pod_changed(self, old: Optional[PodInfo], new: Optional[PodInfo]) -> None: ...

    def namespace_relabelled(self) -> None: ...


@dataclass(frozen=True)
class TranslatorParts:
    """What a kind's `SOURCE` hook (`kube_manager/registry.py`) may build its source from: the
    product's sources, and what a kind that emits objects writes through (its firewall policies
    join the APS through `aps_refs`; `log` reports its policies as `Changes.policies` of its kind)."""

    bodies: BodyFactory
    index: ClusterIndex
    shared: SharedObjects
    store: DesiredObjects
    aps_refs: SequencedRefs
    log: ChangeLog
    parse_cache: ParseCache
    namespaces: NamespaceSource
    pod_changed: Callable[[PodKey, Optional[PodInfo], Optional[PodInfo]], None]
    network_policies: NetworkPolicies
    cluster_policies: ClusterNetworkPolicies
    staged: Tuple[StagedSplit, StagedSplit]  # the two policy sources above, their staged policies apart


# The product's kinds' sources; a source that renders objects is also a `PolicySource`.
KINDS.register(NAMESPACES.kind, SOURCE, lambda parts: parts.namespaces)
KINDS.register(PODS.kind, SOURCE,
               lambda parts: PodSource(parts.index, parts.namespaces, parts.parse_cache, parts.pod_changed))
KINDS.register(NETWORK_POLICIES.kind, SOURCE, lambda parts: parts.staged[0])
KINDS.register(CLUSTER_NETWORK_POLICIES.kind, SOURCE, lambda parts: parts.staged[1])


class ClusterTranslator:
    """Incremental translation of one cluster (SPEC 2-5, 11). Not thread-safe; one gevent loop.

    Bodies returned by `desired()` and `translation()` are shared and must not be modified.
    """

    def __init__(self, cluster_name: str = "k8s", owner: str = "k8s", *, track_changes: bool = True,
                 semantics: str = KUBERNETES, kinds: Kinds = KINDS) -> None:
        problem = cluster_name_problem(cluster_name) or semantics_problem(semantics)
        if problem:
            raise ValueError(problem)
        if not isinstance(owner, str) or not owner:
            raise ValueError("the owner (kubernetes_cluster_owner) must be a non-empty string")
        self.cluster_name = cluster_name
        self.owner = owner
        self.semantics = semantics
        self._bodies = BodyFactory(cluster_name, owner)
        renderer = PolicyRenderer(self._bodies)
        self._parse_cache = ParseCache()
        self._index = ClusterIndex()
        self._membership = SelectorMembership(self._index)
        self._marks = Marks()
        self._log = ChangeLog(track_changes)
        self._store = DesiredObjects(self._log)
        self._shared = SharedObjects(self._store, self._bodies, self._membership, self._marks)
        isolation = Isolation(cluster_name, self._index, self._marks, events_follow=track_changes)
        self._pod_tags = PodTags(self._index, self._shared, self._membership, renderer.application_tag,
                                 self._marks, self._log, isolation)
        self._rejections = Rejections()  # objects refused, by (kind, namespace, name)
        aps_refs, deny_refs = self._create_cluster_objects(renderer.application_tag)
        self._published = DesiredState(self._store.by_type, live=track_changes, pod_tags=self._pod_tags.tags)
        self._logging = MatchLogging()  # SPEC 15: which NetworkPolicy rules log their matches
        self._exact = ExactEnforcement(semantics, self._bodies, self._shared, self._store, aps_refs, isolation,
                                       self._namespace_labels, self._index)
        self._published.follow_pair_rules(self._exact.pair_rules)
        namespaces = NamespaceSource(self._index, self._shared, self._membership, self._marks, self._parse_cache,
                                     self._logging, self._namespace_relabelled, self._namespace_logging_changed,
                                     self._exact.namespace_changed)
        self._store.commit_refs()  # its block is part of the empty cluster's objects
        self._network_policies = NetworkPolicies(renderer, self._index, self._shared, self._store, aps_refs,
                                                 deny_refs, self._rejections, self._marks, self._log,
                                                 self._published, self._logging, self._parse_cache, namespaces,
                                                 self._exact.policy_applied)
        blocks = TierBlocks(self._bodies, self._exact.emitter, self._shared, self._store, aps_refs,
                            (self._exact.ref_group, self._exact.unref_group))
        self._cluster_policies = ClusterNetworkPolicies(ChainBuilder(renderer), self._index, self._shared, blocks,
                                                        self._exact, self._marks, self._log)
        self._sources: Tuple[PolicySource, ...] = (self._network_policies, self._exact, self._cluster_policies)
        # SPEC 17: each policy kind's staged policies kept apart from what its source emits.
        self._staged = split_policy_sources(self._network_policies, self._cluster_policies, self._parse_cache)
        parts = TranslatorParts(self._bodies, self._index, self._shared, self._store, aps_refs, self._log,
                                self._parse_cache, namespaces, self._pod_changed, self._network_policies,
                                self._cluster_policies, self._staged)
        # The registry's kinds, in its order (the order a whole cluster is loaded).
        self._kinds = KindTable(kinds.hook(entry.kind, SOURCE)(parts) for entry in kinds)
        self._sources += tuple(source for source in self._kinds.sources()
                               if isinstance(source, PolicySource) and source not in self._sources)

    # --- Kubernetes events --------------------------------------------------------------------

    def kinds(self) -> Tuple[str, ...]:
        """The kinds read, in the order a whole cluster is loaded (what others refer to first)."""
        return self._kinds.kinds()

    def upsert(self, kind: str, manifest: Mapping[str, Any]) -> None:
        """An object of `kind` was added or changed. One that cannot be read replaces any earlier
        state of it by a rejection; one read clears its earlier rejection. KeyError for a kind
        without a source."""
        source = self._kinds[kind]
        try:
            identity = source.upsert(manifest)
        except Exception as exc:  # InvalidInput, or a bug confined to this object
            self.reject(kind, *source.identity(manifest), exc)
            return
        if self._rejections:
            self._rejections.discard((kind,) + identity)

    def delete(self, kind: str, namespace: str, name: str) -> None:
        """An object of `kind` was deleted (namespace "" when cluster-scoped)."""
        source = self._kinds[kind]
        self._rejections.discard((kind, namespace, name))
        source.remove(namespace, name)

    def reject(self, kind: str, namespace: str, name: str, exc: Exception) -> None:
        """Forget the object and record it as rejected because of `exc` (logged once). The daemon
        calls this too, when handling the object failed outside the translator."""
        self._kinds[kind].remove(namespace, name)
        self._rejections.add((kind, namespace, name), exc)

    # --- flushing -----------------------------------------------------------------------------

    def flush(self) -> Changes:
        """Redo what the events since the last flush marked, and report what changed in
        `desired()`, in pod tags and in policies since then. The reads below answer for the state
        of the last flush."""
        # The first flush after a daemon's initial lists renders every policy and reports every
        # object: with the collector on, its passes over the new bodies cost three times the
        # rendering itself.
        with collector_paused():
            for source in self._sources:
                source.flush()
            self._pod_tags.flush()
            self._store.commit_refs()
            return self._log.pop(self._store.by_type, self._pod_tags.tags)

    # --- reads (pure: as of the last flush) ---------------------------------------------------

    def desired(self) -> Mapping[str, Mapping[FqName, Body]]:
        """resource type -> fq_name -> body, for everything kube-manager wants in Contrail: a live
        view, updated in place by each flush."""
        return self._store.by_type

    def published(self) -> DesiredState:
        """The desired state as the reconciler reads it: a live, read-only view (published.py)."""
        if not self._published.live:  # a bulk translator's, asked for the first time
            self._network_policies.publish()
        return self._published

    def pod_tags(self, namespace: str, name: str) -> Optional[Tuple[str, ...]]:
        """The sorted `type=value` tags the pod's VMIs must carry; None for an unknown pod."""
        return self._pod_tags.tags.get((namespace, name))

    def pod_labels(self, namespace: str, name: str) -> Optional[Mapping[str, str]]:
        """The labels of the pod as last given (shared: read-only; after a flush, those it
        translated); None for an unknown or rejected pod."""
        pod = self._index.pods.get((namespace, name))
        return pod.labels if pod is not None else None

    def status_of(self, kind: str, namespace: str, name: str) -> Optional[Emitted]:
        """What one object emitted and its errors (a NetworkPolicy's objects are `PolicyObjects`);
        its rejection's reason when it was rejected whole; None when it is unknown or emits no
        policy of its own."""
        source = self._kinds[kind]
        reason = self._rejections.get((kind, namespace, name))
        if reason is not None:
            return Unrendered((reason,))
        return source.status(namespace, name)

    def errors(self) -> List[Dict[str, str]]:
        """Every rejection and every error of the objects read, sorted by kind, namespace and name."""
        errors = [{"kind": kind, "namespace": namespace, "name": name, "reason": reason}
                  for (kind, namespace, name), reason in self._rejections.items()]
        for source in self._kinds.sources():
            errors.extend(source.errors())
        errors.sort(key=lambda e: (e["kind"], e["namespace"], e["name"]))
        return errors

    def staged(self) -> Tuple[StagedPolicy, ...]:
        """The staged policies (SPEC 17), as the events left them: NetworkPolicies by namespace and
        name, then ClusterNetworkPolicies by name."""
        return tuple(policy for split in self._staged for _, policy in sorted(split.staged().items()))

    def translation(self) -> Translation:
        """The whole desired state in SPEC 8's order. Its workloads join the pods as the events
        left them with their tags as of the last flush, so events not yet flushed are an error
        rather than a mix of the two."""
        if self._marks:
            raise RuntimeError("translation() with events not yet flushed: flush() first")
        objects = self._store.by_type

        def ordered(resource_type: str) -> Tuple[Body, ...]:
            # The objects of one type share their parent (or have none), so sorting by fq_name is
            # sorting by name; strings compare faster than tuples. The bodies are picked by
            # position: looking 350,000 tuple keys up again cost as much as the sort.
            store = objects[resource_type]
            names, bodies = list(map(itemgetter(-1), store)), list(store.values())
            return tuple(map(bodies.__getitem__, sorted(range(len(names)), key=names.__getitem__)))

        tag_lists: Dict[int, List[str]] = {}  # pods with equal tags share their tuple, and so a list
        workloads = []
        pod_tags, pods, by_namespace = self._pod_tags.tags, self._index.pods, self._index.pods_by_namespace
        # In (namespace, name) order: namespaces sorted, then each one's few pods (a quarter
        # cheaper than sorting every pod's key tuple).
        for key in [key for namespace in sorted(by_namespace) for key in sorted(by_namespace[namespace])]:
            pod = pods[key]
            tags = pod_tags[key]
            listed = tag_lists.get(id(tags))
            if listed is None:
                listed = tag_lists[id(tags)] = list(tags)
            workloads.append({"namespace": pod.namespace, "name": pod.name, "ip": pod.ip, "tags": listed})
        (aps,) = objects[APPLICATION_POLICY_SET].values()
        return Translation(self.cluster_name, ordered(TAG), ordered(ADDRESS_GROUP), ordered(FIREWALL_RULE),
                           ordered(FIREWALL_POLICY), aps, tuple(workloads), tuple(self.errors()),
                           dict(self.selectors()),
                           tuple({"kind": p.kind, "namespace": p.namespace, "name": p.name} for p in self.staged()))

    def selectors(self) -> SelectorView:
        """A live read-only view: selector tag -> the object it was hashed from."""
        return SelectorView(self._shared.origins)

    # --- cluster objects ----------------------------------------------------------------------

    def _create_cluster_objects(self, application: str) -> Tuple[SequencedRefs, SequencedRefs]:
        """The application tag, `<cluster>-allowall`, `<cluster>-denyall` and the APS (SPEC 5); the
        ref lists of the APS and of `<cluster>-denyall`, which the policy sources fill."""
        self._shared.ref_tag(application, None)
        allowall = allowall_policy_name(self.cluster_name)
        cluster_pods, anything = {"tags": [application]}, self._bodies.any_endpoint
        rule_refs = []
        for i, (direction, endpoints) in enumerate((("ingress", (anything, cluster_pods)),
                                                     ("egress", (cluster_pods, anything)))):
            fq_name = global_fq_name(f"{allowall}-{direction}")
            self._store.put(FIREWALL_RULE, fq_name, self._bodies.any_rule(fq_name, PASS, *endpoints))
            rule_refs.append(sequenced_ref(fq_name, rule_sequence(i)))
        allowall_fq = global_fq_name(allowall)
        allowall_body = self._bodies.firewall_policy(allowall_fq, rule_refs)
        self._store.put(FIREWALL_POLICY, allowall_fq, allowall_body)
        denyall_fq = global_fq_name(denyall_policy_name(self.cluster_name))
        denyall = self._bodies.firewall_policy(denyall_fq, [])
        deny_refs = self._store.ref_list(FIREWALL_POLICY, denyall_fq, denyall, FIREWALL_RULE)
        aps_fq = global_fq_name(application_policy_set_name(self.cluster_name))
        aps = self._bodies.application_policy_set(aps_fq, application, [])
        aps_refs = self._store.ref_list(APPLICATION_POLICY_SET, aps_fq, aps, FIREWALL_POLICY)
        aps_refs.set(denyall_fq, DENYALL_SEQUENCE, denyall["fq_name"])
        aps_refs.set(allowall_fq, ALLOWALL_SEQUENCE, allowall_body["fq_name"])
        self._store.commit_refs()
        return aps_refs, deny_refs

    # --- what pods and namespaces change -----------------------------------------------------

    def _namespace_relabelled(self) -> None:
        for source in self._sources:
            source.namespace_relabelled()

    def _namespace_labels(self, name: str) -> Optional[Mapping[str, str]]:
        namespace = self._index.namespaces.get(name)
        return namespace.labels if namespace is not None else None

    def _namespace_logging_changed(self, name: str) -> None:
        self._network_policies.mark_namespace(name)

    def _pod_changed(self, key: PodKey, old: Optional[PodInfo], new: Optional[PodInfo]) -> None:
        self._membership.pod_changed(key, new)
        self._marks.pods[key] = None
        for source in self._sources:
            source.pod_changed(old, new)
