"""Make before break (SPEC section 7), on top of plain existence.

The deny rules of a NetworkPolicy are added to `<cluster>-denyall` only once that NetworkPolicy's
firewall policy holds all its pass rules and is in the APS, and no pod is still being given a tag
that policy's rules use (else that pod would be denied what the new rules allow it); refs are
dropped from any other policy or from the APS only once the denyall policy holds no deny rule that
is no longer wanted. Which NetworkPolicy a deny rule protects, and which tags its rules use, are
part of the translator's published desired state: the gates never ask anyone upstream.

The rules of the ordered blocks (`<cluster>--admin`, `--isolation`, `--baseline-np`, `--baseline`;
tiers.py) protect no policy, but their endpoints may use selector and isolation tags: a write of such
a rule (update, or its ref from the block) waits for the pods still being given a tag its desired
endpoints use, read from the rule body; additions go first, updates next, drops last. The isolation
block's refs change one at a time, like the APS's and `<cluster>-denyall`'s, so it has an index too.
"""
from __future__ import annotations

from typing import Dict, Iterable, Optional, Set, Tuple

from kube_manager.translator.naming import application_policy_set_name, denyall_policy_name
from kube_manager.translator.published import DesiredState
from vnc_client.schema import DEFAULT_POLICY_MANAGEMENT

from .actual import ActualState, unlink
from .diff import ObjKey
from .reflists import RefListIndex
from .tiers import RULE_REFS, TierDeny, endpoint_tags


class Gates:
    """The two objects that refer to every NetworkPolicy, their ref-list indexes, and the pods
    being tagged; `gate_add` / `gate_remove` answer `diff.View`'s questions."""

    def __init__(self, cluster: str, desired: DesiredState) -> None:
        pm = tuple(DEFAULT_POLICY_MANAGEMENT)
        self.aps_key: ObjKey = ("application-policy-set", pm + (application_policy_set_name(cluster),))
        self.denyall_key: ObjKey = ("firewall-policy", pm + (denyall_policy_name(cluster),))
        self._desired = desired
        self.tiers = TierDeny(cluster)
        # The two ref lists that refer to every NetworkPolicy, planned from their differences.
        self._aps_refs = RefListIndex("firewall_policy_refs", "firewall-policy")
        self._deny_refs = RefListIndex("firewall_rule_refs", "firewall-rule")
        self.indexes: Dict[ObjKey, Dict[str, RefListIndex]] = {
            self.aps_key: {self._aps_refs.ref_field: self._aps_refs},
            self.denyall_key: {self._deny_refs.ref_field: self._deny_refs},
            self.tiers.isolation: {RULE_REFS: self.tiers.isolation_refs}}
        # Pods being tagged (ACTIVE), by the tags they are to carry and lack: deny rules wait for them.
        self._tagging: Dict[ObjKey, Tuple[str, ...]] = {}
        self._tagging_by_tag: Dict[str, Set[ObjKey]] = {}

    def tagging(self, pod: ObjKey, tags: Optional[Iterable[str]]) -> None:
        """The pod `pod` is being given `tags` (None: it is not being tagged any more)."""
        for tag in self._tagging.pop(pod, ()):
            unlink(self._tagging_by_tag, tag, pod)
        if tags is not None:
            self._tagging[pod] = tuple(tags)
            for tag in self._tagging[pod]:
                self._tagging_by_tag.setdefault(tag, set()).add(pod)

    def gate_add(self, actual: ActualState, holder: ObjKey, ref_field: str, target: ObjKey) -> Optional[ObjKey]:
        if ref_field == RULE_REFS and holder in self.tiers.policies:
            return self._being_tagged(sorted(endpoint_tags(actual.desired(target))))
        if holder == self.aps_key:
            return self.tiers.pair_missing(target)
        if holder != self.denyall_key or ref_field != RULE_REFS:
            return None
        owner = self._desired.deny_owner(target[1])
        if owner is None:
            return None
        policy = ("firewall-policy", owner)
        if not actual.settled(policy):
            return policy
        if actual.get(self.aps_key) is not None and policy not in self._aps_refs.actual:
            return self.aps_key
        return self._being_tagged(self._desired.policy_tags(owner))

    def gate_write(self, actual: ActualState, rule: ObjKey) -> Optional[ObjKey]:
        """What an update of the tier deny rule `rule` waits for: its tier deny policy gaining its
        other new rules, then the pods still being given its tags (None: go ahead, or not such a rule)."""
        if not self.tiers.is_rule(actual, rule):
            return None
        return (self.tiers.adding(actual, rule)
                or self._being_tagged(sorted(endpoint_tags(actual.desired(rule)))))

    def _being_tagged(self, tags: Iterable[str]) -> Optional[ObjKey]:
        """A pod still being given one of `tags`."""
        for tag in tags:
            for pod in self._tagging_by_tag.get(tag, ()):
                return pod
        return None

    def gate_remove(self, actual: ActualState, holder: ObjKey) -> Optional[ObjKey]:
        if holder in self.tiers.policies:
            return self.tiers.unwritten(actual, holder)
        if holder == self.denyall_key or actual.get(self.denyall_key) is None:
            return None
        return self.denyall_key if self._deny_refs.stale else None
