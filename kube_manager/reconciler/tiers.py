"""The ordered blocks of SPEC 14 and their rules, as make before break needs them.

The blocks are `<cluster>--admin`, `<cluster>--isolation`, `<cluster>--baseline-np` and
`<cluster>--baseline`: ordered lists of pass and deny rules whose endpoints may use selector tags
and the isolation tags; pods are tagged independently of the rules. Three windows would let a flow
through that neither state lets through, or drop one both let through: a rule written with a tag
the pods do not carry yet, a pod losing a tag a written rule still uses, and the isolation deny in
force before the pair rules that let the allowed flows between isolated pods through. So
(gates.py, pods.py): a rule joins a block only once no pod is still being given a tag its endpoints
use (the isolation deny, then, only once the pods carry their isolation tags); the isolation deny's
policy joins the APS only after every pair rule has joined the isolation block; and a pod keeps a label tag a block
rule in the config API uses until every block object is as desired. Everything is read from the
rule bodies and ref lists, desired and actual: nothing is asked upstream.
"""
from __future__ import annotations

from typing import AbstractSet, Any, Dict, Iterable, List, Mapping, Optional, Set, Tuple

from kube_manager.translator.naming import (ORDERED_BLOCKS, block_policy_name, isolation_deny_policy_name,
                                           isolation_policy_name)
from vnc_client.schema import DEFAULT_POLICY_MANAGEMENT

from .actual import ActualState
from .compare import ENDPOINT_FIELDS, ObjKey
from .reflists import RefListIndex

RULE_REFS = "firewall_rule_refs"


def endpoint_tags(body: Optional[Mapping[str, Any]]) -> Set[str]:
    """The tags the endpoints of a firewall rule body use."""
    tags: Set[str] = set()
    for name in ENDPOINT_FIELDS:
        endpoint = (body or {}).get(name)
        if isinstance(endpoint, dict):
            tags.update(t for t in endpoint.get("tags") or () if isinstance(t, str))
    return tags


def _rule_keys(body: Optional[Mapping[str, Any]]) -> Iterable[ObjKey]:
    for ref in (body or {}).get(RULE_REFS) or ():
        if isinstance(ref, dict) and ref.get("to"):
            yield ("firewall-rule", tuple(ref["to"]))


class TierDeny:
    """The blocks of one cluster and the rules they refer to (desired or actual)."""

    def __init__(self, cluster: str) -> None:
        pm = tuple(DEFAULT_POLICY_MANAGEMENT)
        self.policies: Tuple[ObjKey, ...] = tuple(
            ("firewall-policy", pm + (block_policy_name(cluster, block),)) for block in ORDERED_BLOCKS)
        self.isolation: ObjKey = ("firewall-policy", pm + (isolation_policy_name(cluster),))
        self.isolation_deny: ObjKey = ("firewall-policy", pm + (isolation_deny_policy_name(cluster),))
        # The isolation block's refs change one at a time (its body is not replaced): they are
        # read from its ref-list index, which gates.py keeps.
        self.isolation_refs = RefListIndex(RULE_REFS, "firewall-rule")
        # per policy and side (desired, actual): the body last read and the rules it refers to
        # (bodies are replaced, never changed, so one identity check says whether it is still true)
        self._read: Dict[Tuple[ObjKey, bool], Tuple[Optional[Mapping[str, Any]], Set[ObjKey]]] = {}

    def _rules(self, actual: ActualState, policy: ObjKey, desired: bool) -> Set[ObjKey]:
        if policy == self.isolation:
            return set(self.isolation_refs.desired if desired else self.isolation_refs.actual)
        body = actual.desired(policy) if desired else actual.get(policy)
        cached = self._read.get((policy, desired))
        if cached is None or cached[0] is not body:
            cached = self._read[(policy, desired)] = (body, set(_rule_keys(body)))
        return cached[1]

    def rules(self, actual: ActualState) -> Set[ObjKey]:
        """Every rule a tier deny policy refers to, in the desired state or in the config API."""
        found: Set[ObjKey] = set()
        for policy in self.policies:
            found |= self._rules(actual, policy, True) | self._rules(actual, policy, False)
        return found

    def is_rule(self, actual: ActualState, key: ObjKey) -> bool:
        return key[0] == "firewall-rule" and any(
            key in self._rules(actual, policy, desired) for policy in self.policies for desired in (True, False))

    def adding(self, actual: ActualState, rule: ObjKey) -> Optional[ObjKey]:
        """The tier deny policy of `rule` while it is still to gain other rules: an update in
        place may narrow `rule` to what those rules then deny, so it waits for them."""
        for policy in self.policies:
            wanted = self._rules(actual, policy, True)
            if rule in wanted:
                held = self._rules(actual, policy, False)
                return policy if actual.get(policy) is not None and any(
                    r not in held and r != rule for r in wanted) else None
        return None

    def unwritten(self, actual: ActualState, policy: ObjKey) -> Optional[ObjKey]:
        """A rule `policy` keeps that is not as desired yet: the policy drops rules only after
        (an update in place may widen it to what the dropped rules denied)."""
        for rule in sorted(self._rules(actual, policy, True)):
            if not actual.settled(rule):
                return rule
        return None

    def hold(self, actual: ActualState, removed: AbstractSet[str]) -> Tuple[Set[str], List[ObjKey]]:
        """Of the tags a pod is to lose, those it keeps for now (used by a tier deny rule in the
        config API while some tier deny object is not as desired yet), and those objects: the pod
        drops the tags once they are written."""
        if not removed:
            return set(), []
        in_force: Set[str] = set()
        for policy in self.policies:
            for rule in self._rules(actual, policy, False):
                in_force |= endpoint_tags(actual.get(rule))
        kept = set(removed) & in_force
        if not kept:
            return set(), []
        waits = sorted(key for key in (*self.policies, *self.rules(actual)) if not actual.settled(key))
        return (kept, waits) if waits else (set(), [])

    def pair_missing(self, target: ObjKey) -> Optional[ObjKey]:
        """For the isolation deny's policy joining the APS while a pair rule is still to join the
        isolation block: the block (written when the pair rules join it)."""
        if target != self.isolation_deny:
            return None
        held = self.isolation_refs.actual
        missing = any(rule not in held for rule in self.isolation_refs.desired)
        return self.isolation if missing else None
