"""ClusterNetworkPolicies as a policy source of the incremental translator (SPEC 13, 14).

A policy event marks its tier (both tiers when the policy moves between them or cannot be placed);
the flush rebuilds the marked tiers' item lists (`chain.py`) and, when a list or some
NetworkPolicy changed since the last write, writes the blocks again (`exact.product`,
`exact.tiers`): a block's rules depend on both tiers and on every NetworkPolicy allow. A tier
that resolved named ports is marked again whenever pods or namespace labels change.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Dict, Iterator, List, Mapping, Optional

from kube_manager.plumbing.kvlog import kv

from ..changes import ChangeLog
from ..index import ClusterIndex
from ..kind_source import Identity
from ..marks import Marks
from ..model import PodInfo
from ..rejections import describe_object, object_logger
from ..shared import SharedObjects
from ..bodies import global_fq_name
from ..exact.product import Lists, Product
from ..exact.source import ExactEnforcement
from ..exact.tiers import TierBlocks
from ..naming import ADMIN_BLOCK, BASELINE_BLOCK, BASELINE_NP_BLOCK, block_policy_name, shorten
from .chain import DIRECTIONS, ChainBuilder, TierChains
from .model import ADMIN, BASELINE, KIND, TIERS, ParsedCnp
from .parse import cnp_key, parse_cnp
from .status import CnpStatus, status_errors

_BLOCKS_OF = MappingProxyType({ADMIN: (ADMIN_BLOCK,), BASELINE: (BASELINE_NP_BLOCK, BASELINE_BLOCK)})  # a tier's blocks


@dataclass(eq=False, repr=False)
class ClusterNetworkPolicies:
    """The ClusterNetworkPolicy source: parsed policies in, the tier blocks out."""

    _builder: ChainBuilder
    _index: ClusterIndex
    _shared: SharedObjects
    _blocks: TierBlocks
    _exact: ExactEnforcement
    _marks: Marks
    _log: ChangeLog
    _policies: Dict[str, ParsedCnp] = field(default_factory=dict, init=False)
    _chains: Dict[str, TierChains] = field(default_factory=dict, init=False)
    _statuses: Dict[str, CnpStatus] = field(default_factory=dict, init=False)
    _written: Optional[int] = field(default=None, init=False)  # the NetworkPolicy generation last written

    # --- events -------------------------------------------------------------------------------

    kind = KIND

    def identity(self, manifest: Any) -> Identity:
        return "", cnp_key(manifest)

    def upsert(self, manifest: Mapping[str, Any]) -> Identity:
        """Add or replace a policy; its tier is rendered again at the next flush."""
        policy = parse_cnp(manifest)
        old = self._policies.get(policy.name)
        if old != policy:
            self._policies[policy.name] = policy
            self._mark(old)
            self._mark(policy)
        return "", policy.name

    def remove(self, namespace: str, name: str) -> None:
        self._mark(self._policies.pop(name, None))

    def _mark(self, policy: Optional[ParsedCnp]) -> None:
        if policy is not None:
            self._marks.tiers.update(dict.fromkeys([policy.tier] if policy.tier in TIERS else TIERS))

    def pod_changed(self, old: Optional[PodInfo], new: Optional[PodInfo]) -> None:
        for tier, chains in self._chains.items():
            if chains.pod_dependent:
                self._marks.tiers[tier] = None

    def namespace_relabelled(self) -> None:
        self.pod_changed(None, None)

    # --- reads --------------------------------------------------------------------------------

    def status(self, namespace: str, name: str) -> Optional[CnpStatus]:
        """What the named policy emitted and its errors, as of the last flush; None when unknown."""
        return self._statuses.get(name) if name in self._policies else None

    def errors(self) -> Iterator[Dict[str, str]]:
        yield from status_errors(self._statuses)

    # --- flushing -----------------------------------------------------------------------------

    def flush(self) -> None:
        marks = self._marks
        dirty, marks.tiers = marks.tiers, {}
        for tier in dirty:
            # A policy rejected whole has no tier; its errors are kept with the Admin tier's.
            policies = [p for p in self._policies.values() if p.tier == tier or (tier == TIERS[0] and p.tier not in TIERS)]
            new = self._builder.build(policies, self._index) if policies else None
            old = self._chains.pop(tier, None)
            if new is not None:
                self._chains[tier] = new
                self._shared.apply(None, new)
            if old is not None:
                self._shared.apply(old, None)
            self._log.policies_touched(KIND, [("", p.name) for p in policies] + [("", name) for name in (old.errors if old else ())])
            self._log_new_errors(old, new)
        present = any(self._valid(tier) for tier in TIERS)
        if not dirty and (not present or self._written == self._exact.generation):
            return
        self._exact.tiers_present(present)
        self._write()
        self._written = self._exact.generation

    def _valid(self, tier: str) -> bool:
        return any(p.tier == tier and p.subject is not None for p in self._policies.values())

    def _write(self) -> None:
        def lists(tier: str) -> Dict[str, List]:
            chains = self._chains.get(tier)
            return {d: [(c.item, c.action) for c in chains.chains[d]] if chains else [] for d in DIRECTIONS}
        product = Product(Lists(lists(ADMIN), lists(BASELINE), self._exact.network_policy_items()),
                          self._exact.isolation_tags, self._exact.exact)
        made = product.blocks()
        self._blocks.write({block: made[block] if self._valid(tier) else None
                            for tier, blocks in _BLOCKS_OF.items() for block in blocks},
                           {name: policy.logged for name, policy in self._policies.items() if policy.logged})
        cluster = self._exact.emitter.cluster
        statuses: Dict[str, CnpStatus] = {}
        for name, policy in self._policies.items():
            chains = self._chains.get(policy.tier) if policy.tier in TIERS else self._chains.get(TIERS[0])
            errors = tuple(dict.fromkeys(chains.errors.get(name, ()) if chains else policy.errors))
            if policy.subject is None:
                statuses[name] = CnpStatus(None, errors=errors)
                continue
            block = _BLOCKS_OF[policy.tier][-1]
            passes, denies = self._blocks.rules_of(name)
            statuses[name] = CnpStatus(global_fq_name(shorten(block_policy_name(cluster, block))), passes, denies, errors)
        # A policy whose rules moved (a rule of its items met a NetworkPolicy's, say) is reported
        # for its record, as the policies of a re-rendered tier are; the others cost nothing.
        self._log.policies_touched(KIND, (("", name) for name, status in statuses.items()
                                          if self._statuses.get(name) != status))
        self._statuses = statuses

    @staticmethod
    def _log_new_errors(old: Optional[TierChains], new: Optional[TierChains]) -> None:
        logged = {(name, r) for name, reasons in (old.errors.items() if old is not None else ()) for r in reasons}
        for name, reasons in new.errors.items() if new is not None else ():
            for reason in dict.fromkeys(reasons):  # each reason once
                if (name, reason) not in logged:
                    object_logger(KIND, "", name).warning("%s: %s", describe_object((KIND, "", name)), reason,
                                                          extra=kv(reason=reason))
