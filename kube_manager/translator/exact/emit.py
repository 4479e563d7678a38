"""Items written as Contrail objects: endpoints, services and rules with deterministic names.

A rule's name hashes its contents (`<cluster>--<block>-<12 hex>`), so an item that survives a
re-render keeps its rule and only its position (the sequence) can move. What an endpoint needs
beyond the tags the policies already reference is reported in `Uses`: a selector tag for pods
narrowed to networks, an address group `<cluster>--net-<12 hex>` for networks no ipBlock names.
Isolation tags stay plain tags beside such a selector tag (the endpoint is a conjunction), so no
selector needs to know who is isolated.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Dict, FrozenSet, List, Mapping, Tuple

from ..bodies import DENY, PASS, Body, BodyFactory, FqName, address_group_endpoint, global_fq_name
from ..canonical import sha1_of_json
from ..cidr import Network
from ..encoding import NAMESPACE, selector_tag, split_tag
from ..model import SelectorDef
from ..scope_tags import TagOrigin
from .expressions import TaggedPodsInNetworks
from .items import Addresses, Anything, End, Item, Pods


@dataclass
class Uses:
    """Objects a set of rules needs that no NetworkPolicy or ClusterNetworkPolicy references."""

    tags: Dict[str, SelectorDef] = field(default_factory=dict)
    groups: Dict[FqName, Tuple[Network, ...]] = field(default_factory=dict)  # with their networks


@dataclass(frozen=True)
class Rule:
    fq_name: FqName
    body: Body
    tags: Tuple[Tuple[str, SelectorDef], ...]
    groups: Tuple[Tuple[FqName, Tuple[Network, ...]], ...]
    origins: FrozenSet[str] = frozenset()  # the ClusterNetworkPolicies its items come from
    deciders: FrozenSet[str] = frozenset()  # those deciding its action (items.Item)


class Emitter:
    """Writes items for one cluster. `origins` tells what each referenced tag stands for;
    `plain` says which tags are kept out of selector definitions (the isolation tags)."""

    def __init__(self, bodies: BodyFactory, origins: Mapping[str, TagOrigin], plain: Callable[[str], bool]) -> None:
        self.bodies = bodies
        self.cluster = bodies.cluster_name
        self._origins = origins
        self._plain = plain

    def endpoint(self, end: End, uses: Uses) -> Body:
        if isinstance(end, Anything):
            return self.bodies.any_endpoint
        if isinstance(end, Addresses):
            if end.body is not None:
                return end.body
            name = f"{self.cluster}--net-{sha1_of_json([str(n) for n in end.networks])[:12]}"
            uses.groups[global_fq_name(name)] = end.networks
            return address_group_endpoint(name)
        assert isinstance(end, Pods)
        if end.networks is None:
            return {"tags": sorted(end.tags)}
        plain = [tag for tag in end.tags if self._plain(tag)]
        conditions = tuple(sorted((tag, self._origins.get(tag)) for tag in end.tags if not self._plain(tag)))
        namespace = next((split_tag(tag)[1] for tag, _ in conditions if split_tag(tag)[0] == NAMESPACE), None)
        definition = SelectorDef(TaggedPodsInNetworks(conditions, end.networks, namespace))
        tag = selector_tag(self.cluster, sha1_of_json(definition.hash_input())[:12])
        uses.tags[tag] = definition
        return {"tags": sorted(plain + [tag])}

    def rule(self, block: str, item: Item) -> Rule:
        uses = Uses()
        first, second = self.endpoint(item.src, uses), self.endpoint(item.dst, uses)
        service = self.bodies.service(item.service)
        action = PASS if item.allow else DENY
        name = f"{self.cluster}--{block}-{sha1_of_json([first, second, service, action])[:12]}"
        fq_name = global_fq_name(name)
        return Rule(fq_name, self.bodies.rule(fq_name, action, service, first, second),
                    tuple(uses.tags.items()), tuple(uses.groups.items()), item.origins, item.deciders)


def rules_of(emitter: Emitter, block: str, items: List[Item]) -> List[Rule]:
    """The rules of `items` in order, a rule equal to an earlier one left out (it never decides:
    the earlier one stands for both items' policies, and keeps its own deciders)."""
    found: Dict[FqName, Rule] = {}
    for item in items:
        rule = emitter.rule(block, item)
        earlier = found.get(rule.fq_name)
        found[rule.fq_name] = rule if earlier is None else replace(earlier, origins=earlier.origins | rule.origins)
    return list(found.values())
