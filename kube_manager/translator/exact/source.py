"""Exact enforcement as a policy source of the incremental translator (SPEC 14).

Under `policy_semantics = kubernetes` the APS holds, before every NetworkPolicy's firewall policy,
the firewall policy `<cluster>--isolation` (sequence `0.5`): the pair rules (`<cluster>--pair-<12
hex>`, sequences hashed from their names); then `<cluster>--isolation-deny` (`0.6`) with the rule
`<cluster>--isolated-egress-to-isolated-ingress`, a deny from every egress-isolated pod to every
ingress-isolated pod. Two policies, so that the reconciler can put the deny in force only once the
pair rules are (one ref list could not say which of its refs must go first). Pods carry the isolation tags (`isolation.py`). Under `cluster-wide` nothing
of this exists, and the NetworkPolicies' output is the one of sections 2-5.

The NetworkPolicy source tells this one of each rendering it applies; the flush then moves the
isolation tags and the pair rules of those policies only. The namespace source tells it of each
namespace that changed; the flush meets again the pairs of the policies naming it, whose ends its
labels may now contradict or no longer. Each pod change is passed on to the pairs' ends
(`realised.py`): a pair is written while pods realise its ends.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Set, Tuple

from ..bodies import (ADDRESS_GROUP, DENY, MARK_CACHE_LIMIT, FIREWALL_POLICY, FIREWALL_RULE, Body, BodyFactory, FqName,
                      global_fq_name, sequenced_ref)
from ..index import ClusterIndex
from ..model import ParsedPolicy, PodInfo
from ..ports import Service
from ..naming import (hashed_sequence, isolation_deny_name, isolation_deny_policy_name, isolation_policy_name,
                      rule_sequence)
from ..render import PolicyRendering
from ..semantics import isolates_always
from ..sequenced import SequencedRefs
from ..shared import SharedObjects
from ..store import DesiredObjects
from .emit import Emitter, Rule, end_of
from .isolation import EGRESS, INGRESS, Isolation, Selection, selections_of
from .items import End, Item
from .contradictions import NamespaceContradictions, NamespaceLabels
from .pairs import Pair, PairRuleCounts, PairRules, namespace_key
from .realised import RealisedEnds

ISOLATION_SEQUENCE, ISOLATION_DENY_SEQUENCE = "0.5", "0.6"
PolicyKey = Tuple[str, str]


class ExactEnforcement:
    """The isolation tags and the pair block; inert under `cluster-wide`."""

    def __init__(self, semantics: str, bodies: BodyFactory, shared: SharedObjects, store: DesiredObjects,
                 aps_refs: SequencedRefs, isolation: Isolation, namespace_labels: NamespaceLabels,
                 index: ClusterIndex) -> None:
        self.exact = isolates_always(semantics)  # the one reading of the mode
        self._shared = shared
        self._store = store
        self._isolation = isolation
        self._pending: Dict[PolicyKey, Tuple[Optional[ParsedPolicy], Optional[PolicyRendering]]] = {}
        self._renderings: Dict[PolicyKey, PolicyRendering] = {}
        self._items: Dict[PolicyKey, Tuple[PolicyRendering, Tuple[List[Item], List[Item]]]] = {}
        self.generation = 0  # counts the flushes that changed some NetworkPolicy
        self._selections: Dict[PolicyKey, Tuple[Selection, ...]] = {}
        self._groups: Dict[FqName, int] = {}
        self._read = ItemReader()
        self.emitter = Emitter(bodies, shared.origins, isolation.is_tag)
        contradictions = NamespaceContradictions(shared.origins, namespace_labels, namespace_key)
        self._realised: RealisedEnds[Pair] = RealisedEnds(shared.origins, index)
        self._pairs = PairRules(self.emitter, self._put, self._drop, contradictions.possible, self._realised)
        self._namespaces_changed: Set[str] = set()
        self._refs: Optional[SequencedRefs] = None
        if self.exact:
            self._refs = self._create_block(bodies, aps_refs)

    def _create_block(self, bodies: BodyFactory, aps_refs: SequencedRefs) -> SequencedRefs:
        self._isolate(True)
        tags = self._isolation.tags
        cluster = bodies.cluster_name
        deny = global_fq_name(isolation_deny_name(cluster))
        body = bodies.any_rule(deny, DENY, {"tags": [tags[EGRESS]]}, {"tags": [tags[INGRESS]]})
        self._store.put(FIREWALL_RULE, deny, body)
        deny_policy = global_fq_name(isolation_deny_policy_name(cluster))
        deny_body = bodies.firewall_policy(deny_policy, [sequenced_ref(deny, rule_sequence(0))])
        self._store.put(FIREWALL_POLICY, deny_policy, deny_body)
        aps_refs.set(deny_policy, ISOLATION_DENY_SEQUENCE, deny_body["fq_name"])
        policy = global_fq_name(isolation_policy_name(cluster))
        policy_body = bodies.firewall_policy(policy, [])
        refs = self._store.ref_list(FIREWALL_POLICY, policy, policy_body, FIREWALL_RULE)
        aps_refs.set(policy, ISOLATION_SEQUENCE, policy_body["fq_name"])
        return refs

    def _isolate(self, enabled: bool) -> None:
        """Keep the isolation tags on the isolated pods, or on none."""
        if enabled == self._isolation.enabled:
            return
        for tag in self._isolation.tags.values():
            if enabled:
                self._shared.ref_tag(tag, None)
            else:
                self._shared.unref_tag(tag)
        self._isolation.enable(enabled)
        self._isolation.mark_moved()

    def tiers_present(self, present: bool) -> None:
        """ClusterNetworkPolicy tiers exist (or not): their blocks meet the isolation tags."""
        self._isolate(present or self.exact)

    @property
    def isolation_tags(self) -> Dict[str, str]:
        return self._isolation.tags

    def pair_rules(self) -> PairRuleCounts:
        return self._pairs.counts()

    def network_policy_items(self) -> Dict[str, List[Item]]:
        """Every NetworkPolicy allow, as items, per direction (in policy key order)."""
        found: Dict[str, List[Item]] = {EGRESS: [], INGRESS: []}
        for key in sorted(self._renderings):
            rendering = self._renderings[key]
            cached = self._items.get(key)
            if cached is None or cached[0] is not rendering:
                egress, ingress = self._read.split(rendering)
                cached = self._items[key] = (rendering, ([i for _, i in egress], [i for _, i in ingress]))
            found[EGRESS].extend(cached[1][0])
            found[INGRESS].extend(cached[1][1])
        return found

    # --- events -------------------------------------------------------------------------------

    def policy_applied(self, key: PolicyKey, policy: Optional[ParsedPolicy],
                       rendering: Optional[PolicyRendering]) -> None:
        """The NetworkPolicy source applied `rendering` (None: the policy is gone or rejected)."""
        self._pending[key] = (policy if rendering is not None else None, rendering)

    def pod_changed(self, old: Optional[PodInfo], new: Optional[PodInfo]) -> None:
        """A pair rule is written while pods realise its ends (`realised.py`)."""
        pod = new if new is not None else old
        if self._refs is not None and pod is not None:
            self._realised.pod_changed(pod.key)

    def namespace_relabelled(self) -> None:
        """Nothing to do here: `namespace_changed` hears of every namespace."""

    def namespace_changed(self, name: str) -> None:
        """Namespace `name` appeared, went or changed labels."""
        if self._refs is not None:
            self._namespaces_changed.add(name)
            self._realised.namespace_changed(name)

    # --- flushing -----------------------------------------------------------------------------

    def flush(self) -> None:
        if self._refs is not None:
            self._pairs.realise()  # the pods first: in a bulk load no end is tracked yet
        if self._namespaces_changed:
            self._meet_again(self._namespaces_changed)
            self._namespaces_changed = set()
        if self._pending:
            self._apply_pending()
        self._realised.settle()

    def _apply_pending(self) -> None:
        pending, self._pending = self._pending, {}
        self.generation += 1
        for key, (policy, rendering) in pending.items():
            if rendering is not None:
                self._renderings[key] = rendering
            else:
                self._renderings.pop(key, None)
                self._items.pop(key, None)
            new = selections_of(policy.selection, policy.spec.directions) if policy is not None else ()
            self._isolation.moved(key[0], self._selections.pop(key, ()), new)
            if new:
                self._selections[key] = new
            if self._refs is not None:
                self._pairs.update(key, *self._read.split(rendering))
        self._isolation.mark_moved()

    def _meet_again(self, namespaces: Set[str]) -> None:
        """The pairs of the applied policies naming these namespaces, met with their labels as
        they are now (a pending policy is met at its own update)."""
        keys = set().union(*(self._pairs.naming(name) for name in namespaces)) - self._pending.keys()
        for key in sorted(keys):
            self._pairs.update(key, *self._read.split(self._renderings.get(key)))

    def _put(self, rule: Rule) -> None:
        assert self._refs is not None
        for tag, definition in rule.tags:
            self._shared.ref_tag(tag, definition)
        for fq_name, body in rule.groups:
            self.ref_group(fq_name, body)
        self._store.put(FIREWALL_RULE, rule.fq_name, rule.body)
        self._refs.set(rule.fq_name, hashed_sequence(rule.fq_name[1]), rule.body["fq_name"])

    def _drop(self, rule: Rule) -> None:
        assert self._refs is not None
        self._refs.discard(rule.fq_name)
        self._store.drop(FIREWALL_RULE, rule.fq_name)
        for tag, _ in rule.tags:
            self._shared.unref_tag(tag)
        for fq_name, _ in rule.groups:
            self.unref_group(fq_name)

    def ref_group(self, fq_name: FqName, body: Body) -> None:
        """One more rule uses an address group `<cluster>--net-...`."""
        count = self._groups.get(fq_name, 0)
        self._groups[fq_name] = count + 1
        if not count:
            self._store.put(ADDRESS_GROUP, fq_name, body)

    def unref_group(self, fq_name: FqName) -> None:
        count = self._groups[fq_name] - 1
        if count:
            self._groups[fq_name] = count
        else:
            del self._groups[fq_name]
            self._store.drop(ADDRESS_GROUP, fq_name)


class ItemReader:
    """A rendering's pass rules as items, (egress, ingress). Renderings share endpoint and service
    bodies (a namespace's pods, a peer, a port), so each body is read once: kept by identity with
    the body itself, which makes an id reused by another object a miss; bounded like the marks."""

    def __init__(self) -> None:
        self._ends: Dict[int, Tuple[Body, Optional[End]]] = {}
        self._services: Dict[int, Tuple[Body, Service]] = {}

    def split(self, rendering: Optional[PolicyRendering]) -> Tuple[List[Tuple[FqName, Item]], List[Tuple[FqName, Item]]]:
        if rendering is None:
            return [], []
        if len(self._ends) >= MARK_CACHE_LIMIT or len(self._services) >= MARK_CACHE_LIMIT:
            self._ends.clear()
            self._services.clear()
        groups: Optional[Dict[str, Tuple]] = None
        egress: List[Tuple[FqName, Item]] = []
        ingress: List[Tuple[FqName, Item]] = []
        ends, services = self._ends, self._services
        for i, (fq_name, body) in enumerate(zip(rendering.rules, rendering.rule_bodies)):
            found: List[Optional[End]] = []
            for endpoint in (body["endpoint_1"], body["endpoint_2"]):
                hit = ends.get(id(endpoint))
                if hit is None or hit[0] is not endpoint:
                    if groups is None:
                        groups = {":".join(fq): block.prefixes for fq, block in rendering.address_groups.items()}
                    hit = ends[id(endpoint)] = (endpoint, end_of(endpoint, groups))
                found.append(hit[1])
            src, dst = found
            if src is None or dst is None:
                continue
            service_body = body["service"]
            known = services.get(id(service_body))
            if known is None or known[0] is not service_body:
                ports = service_body["dst_ports"]
                known = services[id(service_body)] = (
                    service_body, (service_body["protocol"], ports["start_port"], ports["end_port"]))
            item = Item(src, dst, known[1], True)
            (ingress if i < rendering.ingress_rules else egress).append((fq_name, item))
        return egress, ingress
