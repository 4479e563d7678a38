"""A NetworkPolicy's allows as items (SPEC 4, 14), read from the translator's model.

The exact mode meets the NetworkPolicies' allows with each other (`pairs.py`) and with the tiers
(`product.py`). It takes them from the validated policy (`ParsedPolicy`), not from the rules the
`cluster-wide` renderer writes, so that the format of those rules cannot change what this mode
writes. What both must name alike is named by those who own the names: a pod scope's tags
(`scope_tags`), an ipBlock's address group (its name, shortened as every name is: `naming`), and
the services of named ports, resolved on the same pods (`named_ports`). The items come in the
order of the policy's rules: ingress blocks, then egress ones, each peer by peer, port by port.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..bodies import MARK_CACHE_LIMIT, FqName, address_group_endpoint
from ..cidr import IpBlock
from ..model import UNBOUND, ParsedPolicy, Peer, PodScope, PolicySpec
from ..named_ports import PodView, ResolvedService, block_services, egress_destination
from ..naming import INGRESS, shorten
from ..ports import Service
from ..scope_tags import ScopeTags
from .items import ANYTHING, Addresses, End, Item, Pods
from .unmet import Services

Keyed = List[Tuple[FqName, Item]]  # items with a key unique in the cluster: (namespace, name, position)


class AllowItems:
    """Builds the items of NetworkPolicies of one cluster. Ends recur (a namespace's pods in every
    policy of the namespace, a peer in every rule of its block), so each is built once: kept by the
    identities of the selectors (shared by the ParseCache) with the scope holding them, which
    makes an identity reused by another object impossible while its entry exists; bounded."""

    def __init__(self, tags: ScopeTags, view: PodView) -> None:
        self._tags = tags
        self._view = view
        self._pods: Dict[Tuple[Optional[str], int, int], Tuple[PodScope, Pods]] = {}
        self._addresses: Dict[int, Tuple[IpBlock, Addresses]] = {}
        self._services: Dict[int, Tuple[PolicySpec, Optional[Services]]] = {}

    def split(self, policy: ParsedPolicy) -> Tuple[Keyed, Keyed]:
        """The allows of a policy rendered (not rejected whole), (egress, ingress)."""
        if len(self._pods) >= MARK_CACHE_LIMIT or len(self._addresses) >= MARK_CACHE_LIMIT:
            self._pods.clear()
            self._addresses.clear()
        namespace = policy.namespace
        selection = policy.spec.selection
        assert selection is not None, "a policy rejected whole allows nothing"
        own = self._scope(selection, namespace)
        name = policy.name
        egress: Keyed = []
        ingress: Keyed = []
        position = 0
        for block in policy.spec.blocks:
            inward = block.direction == INGRESS
            found = ingress if inward else egress
            fixed = block.fixed_services
            named: Optional[List[ResolvedService]] = None
            if fixed is None and inward:  # resolved on the selected pods, the same for every peer
                named = block_services(block, selection.bound(namespace), True, self._view)[0]
            for peer in (None,) if block.peers is None else (peer for _, peer in block.peers):
                end = self._end(peer, namespace)
                src, dst = (end, own) if inward else (own, end)
                if fixed is not None:
                    for service in fixed:
                        found.append(((namespace, name, str(position)), Item(src, dst, service, True)))
                        position += 1
                    continue
                services = named if named is not None else \
                    block_services(block, *egress_destination(peer, namespace), self._view)[0]
                for service, override in services:
                    # the pods where the named port is this number, when not every destination pod
                    narrowed = dst if override is None else Pods(frozenset((self._tags.selector_tag(override),)))
                    found.append(((namespace, name, str(position)), Item(src, narrowed, service, True)))
                    position += 1
        return egress, ingress

    def services(self, policy: ParsedPolicy) -> Optional[Services]:
        """The services of the allows `split` reads, (egress, ingress), or more, from the rule
        blocks alone; None when a block names ports, which resolve on pods. Kept by the spec
        (shared by the ParseCache, held by its entry): policies of one template share them."""
        spec = policy.spec
        found = self._services.get(id(spec))
        if found is None:
            if len(self._services) >= MARK_CACHE_LIMIT:
                self._services.clear()
            found = self._services[id(spec)] = (spec, _services(spec))
        return found[1]

    def _end(self, peer: Optional[Peer], namespace: str) -> End:
        if peer is None:
            return ANYTHING
        if isinstance(peer, IpBlock):
            found = self._addresses.get(id(peer))
            if found is None:
                group = address_group_endpoint(shorten(peer.address_group_name))
                found = self._addresses[id(peer)] = (peer, Addresses(peer.prefixes, group))
            return found[1]
        return self._scope(peer, namespace)

    def _scope(self, scope: PodScope, namespace: str) -> Pods:
        scope_namespace = namespace if scope.namespace == UNBOUND else scope.namespace
        key = (scope_namespace, id(scope.namespace_selector), id(scope.pod_selector))
        found = self._pods.get(key)
        if found is None:
            found = self._pods[key] = (scope, Pods(frozenset(self._tags.of_scope(scope, scope_namespace)[0])))
        return found[1]



def _services(spec: PolicySpec) -> Optional[Services]:
    egress: List[Service] = []
    ingress: List[Service] = []
    for block in spec.blocks:
        fixed = block.fixed_services
        if fixed is None:
            return None
        (ingress if block.direction == INGRESS else egress).extend(fixed)
    return frozenset(egress), frozenset(ingress)
