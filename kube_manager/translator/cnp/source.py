"""ClusterNetworkPolicies as a policy source of the incremental translator (SPEC 13).

A policy event marks its tier (both tiers when the policy moves between them or cannot be placed),
and the flush re-renders only the marked tiers: a rule's objects depend on every rule before it in
its tier, and on nothing outside it. Each re-rendered tier is applied as differences through the
shared objects (tags, `<cidr>` address groups) and the desired objects (its rules, policies, own
address groups, refs in the APS). A tier that read pods (named ports, the IPs of pods a network
rule leaves out) is marked again whenever pods or namespace labels change.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Tuple

from kube_manager.plumbing.kvlog import kv

from ..bodies import ADDRESS_GROUP, FIREWALL_POLICY, FIREWALL_RULE, Body, FqName
from ..changes import ChangeLog
from ..index import ClusterIndex
from ..marks import Marks
from ..match_logging import MatchLogging
from ..model import PodInfo
from ..rejections import describe_object, object_logger
from ..sequenced import SequencedRefs
from ..shared import SharedObjects
from ..store import DesiredObjects
from .model import KIND, TIERS, ParsedCnp
from .render import CnpStatus, TierRenderer, TierRendering, status_errors


@dataclass(eq=False, repr=False)
class ClusterNetworkPolicies:
    """The ClusterNetworkPolicy source: parsed policies in, the tiers' objects out."""

    _renderer: TierRenderer
    _index: ClusterIndex
    _shared: SharedObjects
    _store: DesiredObjects
    _aps_refs: SequencedRefs
    _marks: Marks
    _log: ChangeLog
    _logging: MatchLogging  # each policy's logging of matches, applied to each tier rendering
    _policies: Dict[str, ParsedCnp] = field(default_factory=dict, init=False)
    _renderings: Dict[str, TierRendering] = field(default_factory=dict, init=False)

    # --- events -------------------------------------------------------------------------------

    def upsert(self, policy: ParsedCnp) -> None:
        old = self._policies.get(policy.name)
        if old == policy:
            return
        self._policies[policy.name] = policy
        self._mark(old)
        self._mark(policy)

    def remove(self, name: str) -> None:
        self._mark(self._policies.pop(name, None))

    def mark(self, name: str) -> None:
        """Render the named policy's tier again (its logging of matches changed)."""
        self._mark(self._policies.get(name))

    def _mark(self, policy: Optional[ParsedCnp]) -> None:
        if policy is not None:
            self._marks.tiers.update(dict.fromkeys([policy.tier] if policy.tier in TIERS else TIERS))

    def pod_changed(self, old: Optional[PodInfo], new: Optional[PodInfo]) -> None:
        for tier, rendering in self._renderings.items():
            if rendering.pod_dependent:
                self._marks.tiers[tier] = None

    def namespace_relabelled(self) -> None:
        self.pod_changed(None, None)

    # --- reads --------------------------------------------------------------------------------

    def status(self, name: str) -> Optional[CnpStatus]:
        """What the named policy emitted and its errors, as of the last flush; None when unknown."""
        if name not in self._policies:
            return None
        for rendering in self._renderings.values():
            found = rendering.statuses.get(name)
            if found is not None:
                return found
        return None

    def errors(self) -> Iterator[Dict[str, str]]:
        for tier in TIERS:
            if tier in self._renderings:
                yield from status_errors(self._renderings[tier].statuses)

    # --- flushing -----------------------------------------------------------------------------

    def flush(self) -> None:
        marks = self._marks
        if not marks.tiers:
            return
        dirty, marks.tiers = marks.tiers, {}
        changes = []
        for tier in dirty:
            # A policy rejected whole has no tier; its errors are kept with the Admin tier's.
            policies = [p for p in self._policies.values() if p.tier == tier or (tier == TIERS[0] and p.tier not in TIERS)]
            new = self._renderer.render(tier, policies, self._index) if policies else None
            if new is not None:
                self._logging.cluster_policies(new)
            old = self._renderings.pop(tier, None)
            if new is not None:
                self._renderings[tier] = new
            changes.append((old, new))
            # Every policy of a re-rendered tier may have new objects or errors (a Deny is emitted
            # minus the rules before it): the change report names them, for their records.
            self._log.cluster_policies_rendered([p.name for p in policies] + list(old.statuses if old else ()))
            self._log_new_errors(old, new)
        self._apply(changes)

    def _apply(self, changes: List[Tuple[Optional[TierRendering], Optional[TierRendering]]]) -> None:
        """Move the re-rendered tiers from old to new, all together: a policy moving between tiers
        keeps its firewall policy, and every new reference is taken before an old one is released
        (make before break)."""
        for _, new in changes:
            self._shared.apply(None, new)
        for old, _ in changes:
            self._shared.apply(old, None)
        store = self._store
        for resource_type in (FIREWALL_RULE, FIREWALL_POLICY, ADDRESS_GROUP):
            kept: Dict[FqName, Body] = {}
            for _, new in changes:
                kept.update(new.objects[resource_type] if new is not None else {})
            store.put_all(resource_type, kept.items())
            for old, _ in changes:
                for fq_name in old.objects[resource_type] if old is not None else ():
                    if fq_name not in kept:
                        store.drop(resource_type, fq_name)
        refs: Dict[FqName, str] = {}
        for _, new in changes:
            refs.update(new.aps_refs if new is not None else {})
        for fq_name, sequence in refs.items():
            self._aps_refs.set(fq_name, sequence, store.by_type[FIREWALL_POLICY][fq_name]["fq_name"])
        for old, _ in changes:
            for fq_name in old.aps_refs if old is not None else ():
                if fq_name not in refs:
                    self._aps_refs.discard(fq_name)

    @staticmethod
    def _log_new_errors(old: Optional[TierRendering], new: Optional[TierRendering]) -> None:
        logged = {(name, r) for name, s in (old.statuses.items() if old is not None else ()) for r in s.errors}
        for name, status in new.statuses.items() if new is not None else ():
            for reason in status.errors:  # each reason once
                if (name, reason) not in logged:
                    object_logger(KIND, "", name).warning("%s: %s", describe_object((KIND, "", name)), reason,
                                                          extra=kv(reason=reason))
