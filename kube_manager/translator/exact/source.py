"""Exact enforcement as a policy source of the incremental translator (SPEC 14).

Under `policy_semantics = kubernetes` the APS holds, before every NetworkPolicy's firewall policy,
the firewall policy `<cluster>--isolation` (sequence `0.5`): the pair rules (`<cluster>--pair-<12
hex>`, sequences hashed from their names); then `<cluster>--isolation-deny` (`0.6`) with the rule
`<cluster>--isolated-egress-to-isolated-ingress`, a deny from every egress-isolated pod to every
ingress-isolated pod. Two policies, so that the reconciler can put the deny in force only once the
pair rules are (one ref list could not say which of its refs must go first). Pods carry the isolation tags (`isolation.py`). Under `cluster-wide` nothing
of this exists, and the NetworkPolicies' output is the one of sections 2-5.

The NetworkPolicy source tells this one of each policy whose rendering it applies (`allows.py`
reads the policy itself, never the rendering); the flush then moves the isolation tags and the pair
rules of those policies only. The namespace source tells it of each
namespace that changed; the flush meets again the pairs of the policies naming it, whose ends its
labels may now contradict or no longer. Each pod change is passed on to the pairs' ends
(`realised.py`): a pair is written while pods realise its ends.
"""
from __future__ import annotations

from operator import itemgetter
from typing import Dict, List, Optional, Set, Tuple

from ..bodies import DENY, FIREWALL_POLICY, FIREWALL_RULE, BodyFactory, global_fq_name, sequenced_ref
from ..index import ClusterIndex
from ..model import ParsedPolicy, PodInfo
from ..naming import (hashed_sequence, isolation_deny_name, isolation_deny_policy_name, isolation_policy_name,
                      rule_sequence)
from ..scope_tags import ScopeTags
from ..semantics import isolates_always
from ..sequenced import SequencedRefs
from ..shared import SharedObjects
from ..store import DesiredObjects
from .allows import AllowItems, Keyed
from .emit import Emitter, Rule
from .isolation import EGRESS, INGRESS, Isolation, Selection, selections_of
from .items import Item
from .contradictions import NamespaceContradictions, NamespaceLabels
from .pairs import Pair, PairRuleCounts, PairRules, namespace_key
from .realised import RealisedEnds

ISOLATION_SEQUENCE, ISOLATION_DENY_SEQUENCE = "0.5", "0.6"
PolicyKey = Tuple[str, str]
_ITEM = itemgetter(1)


class ExactEnforcement:
    """The isolation tags and the pair block; inert under `cluster-wide`."""

    def __init__(self, semantics: str, bodies: BodyFactory, shared: SharedObjects, store: DesiredObjects,
                 aps_refs: SequencedRefs, isolation: Isolation, namespace_labels: NamespaceLabels, tags: ScopeTags,
                 index: ClusterIndex) -> None:
        self.exact = isolates_always(semantics)  # the one reading of the mode
        self._shared = shared
        self._store = store
        self._isolation = isolation
        self._pending: Dict[PolicyKey, Optional[ParsedPolicy]] = {}
        self._policies: Dict[PolicyKey, ParsedPolicy] = {}  # those applied with a rendering
        self._items: Dict[PolicyKey, Tuple[Keyed, Keyed]] = {}  # their allows (egress, ingress), once asked for
        self.generation = 0  # counts the flushes that changed some NetworkPolicy
        self._selections: Dict[PolicyKey, Tuple[Selection, ...]] = {}
        self._allows = AllowItems(tags, index)
        self.emitter = Emitter(bodies, shared.origins, isolation.is_tag)
        contradictions = NamespaceContradictions(shared.origins, namespace_labels, namespace_key)
        self._realised: RealisedEnds[Pair] = RealisedEnds(shared.origins, index)
        self._pairs = PairRules(self.emitter, self._put, self._drop, contradictions.possible, self._realised,
                                self._allows_of)
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
        for key in sorted(self._policies):
            egress, ingress = self._allows_of(key)
            found[EGRESS].extend(map(_ITEM, egress))
            found[INGRESS].extend(map(_ITEM, ingress))
        return found

    def _allows_of(self, key: PolicyKey) -> Tuple[Keyed, Keyed]:
        found = self._items.get(key)
        if found is None:
            policy = self._policies.get(key)
            if policy is None:
                return [], []
            found = self._items[key] = self._allows.split(policy)
        return found

    # --- events -------------------------------------------------------------------------------

    def policy_applied(self, key: PolicyKey, policy: Optional[ParsedPolicy]) -> None:
        """The NetworkPolicy source applied a rendering of `policy` (None: the policy is gone or
        rejected): also when it rendered it again for its named ports, which pods resolve anew."""
        self._pending[key] = policy

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
        for key, policy in pending.items():
            self._items.pop(key, None)
            if policy is not None:
                self._policies[key] = policy
            else:
                self._policies.pop(key, None)
            new = selections_of(policy.selection, policy.spec.directions) if policy is not None else ()
            self._isolation.moved(key[0], self._selections.pop(key, ()), new)
            if new:
                self._selections[key] = new
            if self._refs is None:
                continue
            if policy is not None:
                self._pairs.update(key, self._allows.services(policy))
            else:
                self._pairs.remove(key)
        self._isolation.mark_moved()

    def _meet_again(self, namespaces: Set[str]) -> None:
        """The pairs of the applied policies naming these namespaces, met with their labels as
        they are now (a pending policy is met at its own update)."""
        keys = set().union(*(self._pairs.naming(name) for name in namespaces)) - self._pending.keys()
        for key in sorted(keys):
            self._pairs.update(key, self._allows.services(self._policies[key]))

    def _put(self, rule: Rule) -> None:
        assert self._refs is not None
        for tag, definition in rule.tags:
            self._shared.ref_tag(tag, definition)
        for fq_name, networks in rule.groups:
            self._shared.ref_address_group(fq_name, networks)
        self._store.put(FIREWALL_RULE, rule.fq_name, rule.body)
        self._refs.set(rule.fq_name, hashed_sequence(rule.fq_name[1]), rule.body["fq_name"])

    def _drop(self, rule: Rule) -> None:
        assert self._refs is not None
        self._refs.discard(rule.fq_name)
        self._store.drop(FIREWALL_RULE, rule.fq_name)
        for tag, _ in rule.tags:
            self._shared.unref_tag(tag)
        for fq_name, _ in rule.groups:
            self._shared.unref_address_group(fq_name)
