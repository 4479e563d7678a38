"""The items of a per-direction chain and their conjunction (SPEC 14).

An item is what one firewall rule matches, read as sets: a source, a destination and one service,
with an action. Kubernetes decides a flow with two ordered lists of items (the source's egress
chain, the destination's ingress chain); Contrail with one. The conjunction of two items matches
the flows both match and passes exactly when both pass; a list of such conjunctions, in an order
extending the product order of the two lists, decides first-match as both lists together do.

Ends are kept as Contrail can write them: `anything`, an address group (networks), or a tag
conjunction (a rule endpoint's `tags` list is a conjunction), optionally narrowed to pods whose IP
is in some networks (written as one selector tag). A conjunction empty by construction is None:
two values of a single-valued tag type, a namespace identity against another namespace's name
label, disjoint networks or services. Services are one protocol (`any`, `tcp`, `udp`, `sctp`) and
one destination port range: the meet of two is one service or none, never a list.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, NamedTuple, Optional, Tuple, Union

from ..bodies import Body
from ..cidr import Network, network_key
from ..encoding import NAMESPACE, encode_namespace_key, encode_value, split_tag
from ..model import METADATA_NAME_LABEL
from ..ports import ANY_PROTOCOL, Service

NAME_LABEL_TYPE = encode_namespace_key(METADATA_NAME_LABEL)
MULTI_VALUED_TYPE = "label"


@dataclass(frozen=True)
class Anything:
    """Every address, pods and outside ones."""


ANYTHING = Anything()


@dataclass(frozen=True)
class Addresses:
    """Every address in `networks` (pods and outside ones); `body` the endpoint naming exactly
    these (a NetworkPolicy's ipBlock group), when there is one."""

    networks: Tuple[Network, ...]
    body: Optional[Body] = field(default=None, compare=False, hash=False)


@dataclass(frozen=True)
class Pods:
    """The pods carrying every tag of `tags`, and, when `networks` is set, whose IP is in them."""

    tags: FrozenSet[str]
    networks: Optional[Tuple[Network, ...]] = None


End = Union[Anything, Addresses, Pods]


class Item(NamedTuple):
    """Flows from `src` to `dst` on `service`; `allow` the action; `origins` the
    ClusterNetworkPolicies it comes from (for their status); `deciders` those whose Accept or Deny
    decides the action (for their logging of matches, SPEC 15): a Pass decides nothing. A named
    tuple rather than a frozen dataclass (same fields, same hash): one is built per allow of every
    NetworkPolicy, and a tuple is built at C speed."""

    src: End
    dst: End
    service: Service
    allow: bool
    origins: FrozenSet[str] = frozenset()
    deciders: FrozenSet[str] = frozenset()


def normal_networks(networks: Iterable[Network]) -> Tuple[Network, ...]:
    """Collapsed, in ascending address order (IPv4 first)."""
    result: List[Network] = []
    for version in (4, 6):
        group = [n for n in networks if n.version == version]
        result.extend(ipaddress.collapse_addresses(group))  # type: ignore[type-var]
    return tuple(sorted(result, key=network_key))


def networks_and(a: Tuple[Network, ...], b: Tuple[Network, ...]) -> Tuple[Network, ...]:
    found = [x if x.subnet_of(y) else y  # type: ignore[arg-type]
             for x in a for y in b if x.version == y.version and x.overlaps(y)]
    return normal_networks(found)


def tags_conflict(tags: FrozenSet[str]) -> bool:
    """No pod can carry all of `tags`: a single-valued type with two values, or a namespace
    identity with another namespace's name label (every namespace carries its own, SPEC 2)."""
    seen: Dict[str, str] = {}
    for tag in tags:
        tag_type, value = split_tag(tag)
        if tag_type == MULTI_VALUED_TYPE:
            continue
        if seen.setdefault(tag_type, value) != value:
            return True
    namespace, name = seen.get(NAMESPACE), seen.get(NAME_LABEL_TYPE)
    return namespace is not None and name is not None and encode_value(namespace) != name


def meet_ends(a: End, b: End) -> Optional[End]:
    if isinstance(a, Anything):
        return b
    if isinstance(b, Anything):
        return a
    if isinstance(a, Addresses) and isinstance(b, Addresses):
        if a.networks == b.networks:
            return a
        networks = networks_and(a.networks, b.networks)
        return Addresses(networks) if networks else None
    if isinstance(a, Addresses):
        a, b = b, a
    assert isinstance(a, Pods)
    nets: Optional[Tuple[Network, ...]]
    if isinstance(b, Addresses):
        tags, nets = a.tags, b.networks
    else:
        tags, nets = a.tags | b.tags, b.networks
        if tags_conflict(tags):
            return None
    if a.networks is not None and nets is not None:
        nets = networks_and(a.networks, nets)
        if not nets:
            return None
    elif nets is None:
        nets = a.networks
    return Pods(tags, nets)


def meet_services(a: Service, b: Service) -> Optional[Service]:
    if a[0] == ANY_PROTOCOL:
        protocol = b[0]
    elif b[0] == ANY_PROTOCOL or a[0] == b[0]:
        protocol = a[0]
    else:
        return None
    start, end = max(a[1], b[1]), min(a[2], b[2])
    return (protocol, start, end) if start <= end else None


def meet(a: Item, b: Item) -> Optional[Item]:
    """The flows both items match, passing when both pass; None when empty by construction.
    Decided by the items whose action is the conjunction's: both when it passes, the denying ones
    when it denies."""
    service = meet_services(a.service, b.service)
    if service is None:
        return None
    src = meet_ends(a.src, b.src)
    if src is None:
        return None
    dst = meet_ends(a.dst, b.dst)
    if dst is None:
        return None
    allow = a.allow and b.allow
    deciders = (a.deciders if a.allow == allow else frozenset()) | (b.deciders if b.allow == allow else frozenset())
    return Item(src, dst, service, allow, a.origins | b.origins, deciders)
