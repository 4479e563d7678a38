"""The desired state as the translator publishes it: a read-only view for the reconciler.

Besides the bodies (`objects`: resource type -> fq_name -> body), it carries the two facts the
reconciler needs to order its writes (make before break, SPEC 7) that bodies alone do not say:
which NetworkPolicy's firewall policy each deny rule of `<cluster>-denyall` protects
(`deny_owner`), and which tags the endpoints of each firewall policy use (`policy_tags`); and the
tags each pod's interfaces must carry (`pod_tags`). The
translator keeps them as it applies each policy's rendering, so the reconciler never asks anyone
upstream: data flows one way, translator -> reconciler.

Only the translator writes it (`applied`); everyone else reads.
"""
from __future__ import annotations

from typing import Callable, Dict, FrozenSet, Mapping, Optional, Tuple

from kube_manager.plumbing.gcpolicy import TrackedDict

from .bodies import FIELDS, Body, FqName
from .exact.pairs import PairRuleCounts
from .render import PolicyRendering

PolicyKey = Tuple[str, str]


class DesiredState:
    """resource type -> fq_name -> body, with the ordering facts; see the module docstring."""

    # The fields each type's bodies carry, fixed by the translator: known before anything is
    # translated (bodies.FIELDS).
    fields: Mapping[str, FrozenSet[str]] = FIELDS

    def __init__(self, objects: Mapping[str, Mapping[FqName, Body]], live: bool = True,
                 pod_tags: Optional[Mapping[PolicyKey, Tuple[str, ...]]] = None) -> None:
        self._objects = objects
        self._pod_tags = pod_tags if pod_tags is not None else {}  # live: the translator's own map
        # False: not kept up to date (a bulk translation, whose state nobody reconciles) until the
        # translator is asked for it and fills it from its renderings (ClusterTranslator.published).
        self.live = live
        # Each entry with the NetworkPolicy it came from: a name handed over from one policy to
        # another in one flush (SPEC 4 suffixes) is dropped only by the policy that holds it.
        self._deny_owner: Dict[FqName, Tuple[PolicyKey, FqName]] = TrackedDict()
        self._tags_of: Dict[FqName, Tuple[PolicyKey, Mapping[str, object]]] = {}  # the rendering's tags
        self._pair_rules: Callable[[], PairRuleCounts] = lambda: PairRuleCounts(0, {})

    @property
    def objects(self) -> Mapping[str, Mapping[FqName, Body]]:
        """Live: the bodies are shared and must not be modified."""
        return self._objects

    def get(self, resource_type: str, fq_name: FqName) -> Optional[Body]:
        return self._objects.get(resource_type, {}).get(fq_name)

    def follow_pair_rules(self, counts: Callable[[], PairRuleCounts]) -> None:
        """Publish the exact mode's pair rules (its block is made after this view)."""
        self._pair_rules = counts

    def pair_rules(self) -> PairRuleCounts:
        """The `kubernetes` mode's pair rules (SPEC 14) and the NetworkPolicies they come from, as
        of the last flush: what the status room weighs against the bound (none under `cluster-wide`)."""
        return self._pair_rules()

    def pod_tags(self, pod: PolicyKey) -> Optional[Tuple[str, ...]]:
        """The sorted `type=value` tags the pod's VMIs must carry, as of the last flush; None for
        a pod unknown or rejected."""
        return self._pod_tags.get(pod)

    def deny_owner(self, rule: FqName) -> Optional[FqName]:
        """The firewall policy of the NetworkPolicy whose deny rule `rule` is."""
        entry = self._deny_owner.get(rule)
        return entry[1] if entry is not None else None

    def policy_tags(self, policy: FqName) -> Tuple[str, ...]:
        """The label, namespace-label and selector tags the endpoints of that policy use."""
        entry = self._tags_of.get(policy)
        return tuple(sorted(entry[1])) if entry is not None else ()

    def applied(self, key: PolicyKey, old: Optional[PolicyRendering], new: Optional[PolicyRendering]) -> None:
        """The translator replaced the rendering of the NetworkPolicy `key` (while `live`)."""
        if old is not None:
            for rule, _body, _sequence in old.deny_rules:
                if self._deny_owner.get(rule, (None,))[0] == key:
                    del self._deny_owner[rule]
            if self._tags_of.get(old.policy[0], (None,))[0] == key:
                del self._tags_of[old.policy[0]]
        if new is not None:
            policy = new.policy[0]
            for rule, _body, _sequence in new.deny_rules:
                self._deny_owner[rule] = (key, policy)
            self._tags_of[policy] = (key, new.tags)  # sorted when asked: rarely, and never offline
