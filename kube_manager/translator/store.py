"""The desired Contrail objects, the change log of every write to them, and their long ref lists.

Everything the translator wants in Contrail passes through `DesiredObjects`, so that each write is
logged for the change report in one place, whoever makes it (a policy source, the shared objects,
the cluster's own objects). The two objects that refer to every policy (the APS and
`<cluster>-denyall`) keep their refs in `SequencedRefs`, registered here so that one
`commit_refs()` per flush applies and reports them.
"""
from __future__ import annotations

from operator import itemgetter
from typing import Dict, Iterable, List, Optional, Tuple

from .bodies import FIREWALL_POLICY, FIREWALL_RULE, RESOURCE_TYPES, Body, FqName
from .changes import ChangeLog
from .render import PolicyRendering
from .sequenced import SequencedRefs

_FQ_NAME_AND_BODY = itemgetter(0, 1)  # of a deny rule (fq_name, body, sequence)


class DesiredObjects:
    """resource type -> fq_name -> body (`by_type`), written only through this class."""

    def __init__(self, log: ChangeLog) -> None:
        self.log = log
        self.by_type: Dict[str, Dict[FqName, Body]] = {t: {} for t in RESOURCE_TYPES}
        self._ref_lists: List[Tuple[str, FqName, str, SequencedRefs]] = []

    def put(self, resource_type: str, fq_name: FqName, body: Body) -> bool:
        """Store `body`; whether it differs from what was there."""
        store = self.by_type[resource_type]
        previous = store.get(fq_name)
        if previous is not None and (previous is body or previous == body):
            return False
        self.log.object_touched((resource_type, fq_name), previous)
        store[fq_name] = body
        return True

    def put_all(self, resource_type: str, items: Iterable[Tuple[FqName, Body]]) -> bool:
        """`put` of each item; whether any changed. Without a change log (a bulk load) the
        items simply replace what is there: nobody needs to hear which ones differed."""
        if not self.log.enabled:
            self.by_type[resource_type].update(items)
            return True
        changed = False
        for fq_name, body in items:
            changed |= self.put(resource_type, fq_name, body)
        return changed

    def drop(self, resource_type: str, fq_name: FqName) -> None:
        previous = self.by_type[resource_type].pop(fq_name, None)
        if previous is not None:
            self.log.object_touched((resource_type, fq_name), previous)

    def ref_list(self, resource_type: str, fq_name: FqName, body: Body, ref_type: str) -> SequencedRefs:
        """Store `body`, whose refs to `ref_type` objects are many and change one at a time; the
        returned list stages them until `commit_refs`."""
        self.put(resource_type, fq_name, body)
        refs = SequencedRefs(body[f"{ref_type.replace('-', '_')}_refs"])
        self._ref_lists.append((resource_type, fq_name, ref_type, refs))
        return refs

    def commit_refs(self) -> None:
        """Apply the staged refs of every ref list, and log the ref operations that took effect."""
        for resource_type, fq_name, ref_type, refs in self._ref_lists:
            operations = refs.commit(self.log.enabled)
            if operations:
                self.log.object_touched((resource_type, fq_name), self.by_type[resource_type][fq_name])
                self.log.refs_moved(resource_type, fq_name, ref_type, operations)

    def replace_policy(self, old: Optional[PolicyRendering], new: Optional[PolicyRendering],
                       policies: SequencedRefs, denies: SequencedRefs) -> bool:
        """Put one policy's firewall policy and rules as rendered (`new`), drop what only `old`
        had, and stage its refs in the list of `policies` (the APS) and of `denies` (where its deny
        rules go); whether any object changed."""
        if old is None and new is not None and not self.log.enabled:  # a bulk load: nothing to compare
            self._put_new(new, policies, denies)
            return True
        changed = False
        if new is not None:
            changed |= self.put_all(FIREWALL_RULE, zip(new.rules, new.rule_bodies))
            changed |= self.put_all(FIREWALL_RULE, map(_FQ_NAME_AND_BODY, new.deny_rules))
            for fq_name, body, sequence in new.deny_rules:
                denies.set(fq_name, sequence, body["fq_name"])
            changed |= self.put_all(FIREWALL_POLICY, (new.policy,))
            fq_name, body = new.policy
            policies.set(fq_name, new.aps_sequence, body["fq_name"])
        if old is not None:
            kept = set() if new is None else set(new.rules).union(fq_name for fq_name, _, _ in new.deny_rules)
            for fq_name in old.rules:
                if fq_name not in kept:
                    self.drop(FIREWALL_RULE, fq_name)
                    changed = True
            for fq_name, _, _ in old.deny_rules:
                if fq_name not in kept:
                    self.drop(FIREWALL_RULE, fq_name)
                    denies.discard(fq_name)
                    changed = True
            fq_name = old.policy[0]
            if new is None or new.policy[0] != fq_name:
                self.drop(FIREWALL_POLICY, fq_name)
                policies.discard(fq_name)
                changed = True
        return changed

    def _put_new(self, new: PolicyRendering, policies: SequencedRefs, denies: SequencedRefs) -> None:
        """`replace_policy(None, new, ...)` without a change log: written straight into the
        dicts (no iterator per object kind, no comparison with what was there)."""
        rules = self.by_type[FIREWALL_RULE]
        rules.update(zip(new.rules, new.rule_bodies))
        for fq_name, body, sequence in new.deny_rules:
            rules[fq_name] = body
            denies.set(fq_name, sequence, body["fq_name"])
        fq_name, body = new.policy
        self.by_type[FIREWALL_POLICY][fq_name] = body
        policies.set(fq_name, new.aps_sequence, body["fq_name"])
