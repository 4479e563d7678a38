"""A NetworkPolicy block's ports as services, named ports resolved on the destination pods (SPEC 4).

A named port stands for every number the name has on the destination pods: one service per
number. When every destination pod gives the name one and the same number, and the destination is
written as tags (a pod scope, not networks), the usual destination stands; otherwise each service
goes to the pods where the name is that number (a `SelectorDef` with the port). The renderer and
the exact mode both read a block through here, so they cannot resolve a name differently.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, List, Optional, Protocol, Tuple

from .cidr import IpBlock
from .model import CLUSTER_SCOPE, Block, Peer, PodInfo, PodSet, SelectorDef
from .ports import PortSpec, Service

# A service, with the destination to use instead of the usual one (None: the usual one)
ResolvedService = Tuple[Service, Optional[SelectorDef]]


class PodView(Protocol):
    """The cluster's pods, as named ports need them."""

    def pods_in(self, pods: PodSet) -> Iterable[PodInfo]:
        ...  # pragma: no cover


def egress_destination(peer: Optional[Peer], namespace: str) -> Tuple[PodSet, bool]:
    """Where an egress block's named ports resolve towards one peer (None: every peer) of a policy
    of `namespace`, and whether that destination is written as tags."""
    if peer is None:
        return CLUSTER_SCOPE, False
    if isinstance(peer, IpBlock):
        return peer, False
    return peer.bound(namespace), True


def block_services(block: Block, destination: PodSet, tag_destination: bool,
                   view: PodView) -> Tuple[List[ResolvedService], List[Tuple[int, PortSpec]]]:
    """The services of a block with a named port towards `destination` (written as tags when
    `tag_destination`), in port order, and the named ports that resolve on no destination pod."""
    assert block.ports is not None  # a block without ports has fixed services
    services: List[ResolvedService] = []
    unresolved: List[Tuple[int, PortSpec]] = []
    for index, port in block.ports:
        if port.name is None:
            services.append((port.service(), None))
            continue
        numbers: Counter = Counter()
        total = 0
        for pod in view.pods_in(destination):
            total += 1
            number = pod.named_ports.get((port.name, port.protocol))
            if number is not None:
                numbers[number] += 1
        if not numbers:
            unresolved.append((index, port))
            continue
        usual = tag_destination and len(numbers) == 1 and total == next(iter(numbers.values()))
        protocol = port.protocol.lower()
        for number in sorted(numbers):
            override = None if usual else SelectorDef(destination, (port.name, port.protocol, number))
            services.append(((protocol, number, number), override))
    return services, unresolved
