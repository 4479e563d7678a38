"""One tier of ClusterNetworkPolicies as two ordered lists of items (SPEC 13, 14).

Per direction, in tier order (priority, then name, then rule index), each rule becomes items:
subject x peer x service, Accept and Pass passing, Deny denying. Nothing is subtracted here: the
order is the meaning, and `exact.product` turns the lists into rules. Subjects and pod peers are
the endpoints of SPEC 2.1 (tags, or a selector tag); networks are address groups; named ports
resolve on the destination pods (SPEC 4), one item per number, the destination narrowed to the
pods where the name is that number (a selector tag).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from ..model import PodScope, SelectorDef
from ..named_ports import PodView
from ..naming import EGRESS, INGRESS
from ..ports import ANY_SERVICE, PROTOCOLS, Service
from ..render import PolicyRenderer
from ..scope_tags import ScopedLabel, TagOrigin
from ..exact.items import ANYTHING, Addresses, End, Item, Pods, normal_networks
from .model import DENY, PASS, CnpRule, Networks, ParsedCnp

DIRECTIONS = (INGRESS, EGRESS)


@dataclass(frozen=True)
class ChainItem:
    item: Item
    action: str  # ACCEPT | DENY | PASS


@dataclass
class TierChains:
    """A tier's two lists, what their endpoints reference, and each policy's errors."""

    chains: Dict[str, List[ChainItem]] = field(default_factory=lambda: {d: [] for d in DIRECTIONS})
    tags: Dict[str, TagOrigin] = field(default_factory=dict)
    scoped_labels: Dict[ScopedLabel, None] = field(default_factory=dict)
    errors: Dict[str, List[str]] = field(default_factory=dict)
    pod_dependent: bool = False  # named ports were resolved: rebuild when pods change

    @property
    def address_groups(self) -> Dict:
        return {}


class ChainBuilder:
    def __init__(self, renderer: PolicyRenderer) -> None:
        self.renderer = renderer

    def build(self, policies: Sequence[ParsedCnp], view: PodView) -> TierChains:
        out = TierChains()
        for policy in sorted((p for p in policies if p.subject is not None), key=lambda p: p.order):
            errors = out.errors.setdefault(policy.name, list(policy.errors))
            assert policy.subject is not None
            subject = self._pods(policy.subject, out)
            for rule in policy.rules:
                for item in self._items(policy, rule, subject, view, errors, out):
                    out.chains[rule.direction].append(ChainItem(item, rule.action))
        for policy in policies:
            out.errors.setdefault(policy.name, list(policy.errors))
        return out

    def _pods(self, scope: PodScope, out: TierChains) -> Pods:
        return Pods(frozenset(self.renderer.scope_endpoint(scope, "", out)["tags"]))

    def _peer(self, peer: object, out: TierChains) -> End:
        if isinstance(peer, Networks):
            return Addresses(normal_networks(peer.cidrs))
        assert isinstance(peer, PodScope)
        return self._pods(peer, out)

    def _items(self, policy: ParsedCnp, rule: CnpRule, subject: Pods, view: PodView, errors: List[str],
               out: TierChains) -> List[Item]:
        allow = rule.action != DENY
        origins = frozenset({policy.name})
        deciders = frozenset() if rule.action == PASS else origins  # a Pass leaves it to what follows
        peers: List[Tuple[Optional[object], End]] = [(None, ANYTHING)] if rule.peers is None else [
            (peer, self._peer(peer, out)) for peer in rule.peers]
        services: List[Service] = [ANY_SERVICE] if rule.ports is None else list(rule.ports)
        items: List[Item] = []
        for raw, peer in peers:
            ends = [(peer, subject)] if rule.direction == INGRESS else [(subject, peer)]
            for service in services:
                items.extend(Item(src, dst, service, allow, origins, deciders) for src, dst in ends)
            for name in rule.named_ports:
                out.pod_dependent = True
                destination = policy.subject if rule.direction == INGRESS else raw
                assert isinstance(destination, PodScope)  # parse_cnp refuses named ports towards networks
                for protocol, number, end in self._named(rule, name, destination, view, errors, out):
                    src, dst = (peer, end) if rule.direction == INGRESS else (subject, end)
                    items.append(Item(src, dst, (protocol.lower(), number, number), allow, origins, deciders))
        return items

    def _named(self, rule: CnpRule, name: str, destination: PodScope, view: PodView, errors: List[str],
               out: TierChains) -> List[Tuple[str, int, Pods]]:
        """Per (protocol, number) the name resolves to on the destination pods, the pods where it does."""
        found = sorted({(protocol, pod.named_ports[(name, protocol)])
                        for pod in view.pods_in(destination) for protocol in PROTOCOLS
                        if (name, protocol) in pod.named_ports})
        if not found:
            errors.append(f"spec.{rule.direction}[{rule.index}]: named port {name!r} resolves on no"
                          " destination pod; that part of the rule matches nothing")
        result = []
        for protocol, number in found:
            definition = SelectorDef(destination, (name, protocol, number))
            tag = self.renderer.tags.selector_tag(definition)
            out.tags[tag] = definition
            result.append((protocol, number, Pods(frozenset({tag}))))
        return result
