"""The tier blocks in Contrail (SPEC 13, 14): `product.py`'s item lists written as three firewall
policies, re-rendered whole when a tier, a NetworkPolicy or (for named ports) a pod changes.

| APS sequence | firewall policy | holds |
| --- | --- | --- |
| `0.1` | `<cluster>--admin` | the Admin rows and columns |
| `0.7` | `<cluster>--baseline-np` | the NetworkPolicy allows met with the Baseline tier |
| `2.1` | `<cluster>--baseline` | the Baseline rows and columns |

A block's rules are named by their contents (`<cluster>--<block>-<12 hex>`) and ordered by
sequence (`%05d.0`, their position), so a re-render rewrites only the rules that changed and the
block's ref list. A block exists while its tier has a policy. A rule logs its matches when a
ClusterNetworkPolicy deciding it asks (SPEC 15, `match_logging`): `log` is in its body, not its name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Dict, FrozenSet, List, Mapping, Optional, Tuple

from ..bodies import FIREWALL_POLICY, FIREWALL_RULE, DENY as DENY_ACTION, BodyFactory, FqName, global_fq_name, \
    sequenced_ref
from ..match_logging import decided_logging
from ..naming import ADMIN_BLOCK, BASELINE_BLOCK, BASELINE_NP_BLOCK, block_policy_name, rule_sequence
from ..scope_tags import ScopedLabel, TagOrigin
from ..sequenced import SequencedRefs
from ..shared import SharedObjects
from ..store import DesiredObjects
from .emit import Emitter, Rule, rules_of

BLOCKS = MappingProxyType({ADMIN_BLOCK: "0.1", BASELINE_NP_BLOCK: "0.7", BASELINE_BLOCK: "2.1"})  # block -> APS sequence


@dataclass
class BlockUse:
    """The selector tags the blocks' endpoints add (a SharedUse)."""

    tags: Dict[str, TagOrigin] = field(default_factory=dict)
    scoped_labels: Tuple[ScopedLabel, ...] = ()

    @property
    def address_groups(self) -> Dict:
        return {}


class TierBlocks:
    """The three blocks as last written; `write` replaces them."""

    def __init__(self, bodies: BodyFactory, emitter: Emitter, shared: SharedObjects, store: DesiredObjects,
                 aps_refs: SequencedRefs) -> None:
        self._bodies = bodies
        self._emitter = emitter
        self._shared = shared
        self._store = store
        self._aps_refs = aps_refs
        self._rules: Dict[str, List[Rule]] = {}
        self._use = BlockUse()

    def write(self, blocks: Mapping[str, Optional[List]], logged: Mapping[str, FrozenSet[str]]) -> None:
        """Each block's items (None: the block does not exist), new objects before old ones go.
        `logged`: the actions each ClusterNetworkPolicy logs when it decides a rule (SPEC 15); not
        part of a rule's name, so a change of it rewrites the bodies of the rules it decides only."""
        new_rules = {block: rules_of(self._emitter, block, items) for block, items in blocks.items() if items is not None}
        use = BlockUse({tag: definition for rules in new_rules.values() for rule in rules for tag, definition in rule.tags})
        self._shared.apply(None, use)
        kept: Dict[FqName, None] = {}
        for block, rules in new_rules.items():
            for rule in rules:
                self._store.put(FIREWALL_RULE, rule.fq_name, decided_logging(rule.body, rule.deciders, logged))
                for fq_name, networks in rule.groups:
                    self._shared.ref_address_group(fq_name, networks)
                kept[rule.fq_name] = None
            fq_name = global_fq_name(block_policy_name(self._bodies.cluster_name, block))
            refs = [sequenced_ref(rule.fq_name, rule_sequence(i)) for i, rule in enumerate(rules)]
            body = self._bodies.firewall_policy(fq_name, refs)
            self._store.put(FIREWALL_POLICY, fq_name, body)
            self._aps_refs.set(fq_name, BLOCKS[block], body["fq_name"])
        for block, rules in self._rules.items():
            if block not in new_rules:
                fq_name = global_fq_name(block_policy_name(self._bodies.cluster_name, block))
                self._aps_refs.discard(fq_name)
                self._store.drop(FIREWALL_POLICY, fq_name)
            for rule in rules:
                if rule.fq_name not in kept:
                    self._store.drop(FIREWALL_RULE, rule.fq_name)
                for fq_name, _ in rule.groups:
                    self._shared.unref_address_group(fq_name)
        self._shared.apply(self._use, None)
        self._rules, self._use = new_rules, use

    def rules_of(self, origin: str) -> Tuple[Tuple[FqName, ...], Tuple[FqName, ...]]:
        """The (pass, deny) rules that stand for some item of the named ClusterNetworkPolicy."""
        passes: List[FqName] = []
        denies: List[FqName] = []
        for rules in self._rules.values():
            for rule in rules:
                if origin in rule.origins:
                    (denies if rule.body["action_list"]["simple_action"] == DENY_ACTION else passes).append(rule.fq_name)
        return tuple(passes), tuple(denies)
