"""The translator's validated view of Kubernetes objects.

Manifests are parsed once into these frozen values; everything downstream (rendering, indexes,
selector evaluation) works on them and never looks at raw dicts again.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from .cidr import Address, IpBlock
from .ports import PortSpec, Service
from .selectors import EVERYTHING, LabelSelector

METADATA_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class PodScope:
    """A set of pods: a namespace scope plus an optional pod selector (SPEC 2.1).

    The scope is either one namespace (`namespace`) or the namespaces a selector picks
    (`namespace_selector`); `pod_selector` None means the field was absent (all pods of the scope).
    """

    namespace: Optional[str] = None
    namespace_selector: Optional[LabelSelector] = None
    pod_selector: Optional[LabelSelector] = None

    @property
    def is_simple(self) -> bool:
        return ((self.namespace_selector is None or self.namespace_selector.is_simple)
                and (self.pod_selector is None or self.pod_selector.is_simple))

    def hash_input(self) -> List[Any]:
        """`[scope, podSelector]` in SPEC 2.1's normal form."""
        if self.namespace is not None:
            scope: Dict[str, Any] = {"namespace": self.namespace}
        else:
            scope = {"namespaceSelector": (self.namespace_selector or EVERYTHING).normalised()}
        pod = None if self.pod_selector is None else self.pod_selector.normalised()
        return [scope, pod]

    def matches(self, namespace: str, labels: Mapping[str, str],
                namespace_labels: Mapping[str, str]) -> bool:
        if self.namespace is not None:
            if namespace != self.namespace:
                return False
        elif self.namespace_selector is not None and not self.namespace_selector.matches(namespace_labels):
            return False
        return self.pod_selector is None or self.pod_selector.matches(labels)


# Every pod of the cluster: the destination of an egress block without peers (SPEC 4).
CLUSTER_SCOPE = PodScope(namespace_selector=EVERYTHING)

Peer = Union[PodScope, IpBlock]
PodSet = Union[PodScope, IpBlock]
NamedPort = Tuple[str, str, int]  # (port name, protocol as Kubernetes spells it, number)


@dataclass(frozen=True)
class SelectorDef:
    """What a selector tag `label=<cluster>-sel-<h>` stands for: pods of `pods`, optionally only
    those where the named port `port` resolves to its number."""

    pods: PodSet
    port: Optional[NamedPort] = None

    def hash_input(self) -> Any:
        destination = self.pods.hash_input()
        if self.port is None:
            return destination
        return [destination, self.port[0], self.port[1], self.port[2]]


@dataclass(frozen=True)
class Block:
    """One validated `ingress`/`egress` rule block.

    `peers` None: every peer (from/to missing or empty); `ports` None: every port. Rejected peers
    and ports are left out, keeping the manifest index of the survivors. `fixed_services` holds
    the services when no port is named (they are then the same for every peer), else None.
    """

    direction: str  # "ingress" | "egress"
    index: int
    peers: Optional[Tuple[Tuple[int, Peer], ...]]
    ports: Optional[Tuple[Tuple[int, PortSpec], ...]]
    fixed_services: Optional[Tuple[Service, ...]] = field(default=None, compare=False)


@dataclass(frozen=True)
class ParsedPolicy:
    """A NetworkPolicy after validation. `selection` None: rejected whole (SPEC 11)."""

    namespace: str
    name: str
    uid: str
    spec_sha256: str
    selection: Optional[PodScope]
    directions: Tuple[str, ...] = ()
    blocks: Tuple[Block, ...] = ()
    errors: Tuple[str, ...] = ()

    @property
    def key(self) -> Tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def has_named_ports(self) -> bool:
        return any(p.name is not None for b in self.blocks for _, p in (b.ports or ()))


@dataclass(frozen=True)
class PodInfo:
    """The parts of a pod the translator reads."""

    namespace: str
    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    ip: Optional[str] = None  # canonical
    named_ports: Mapping[Tuple[str, str], int] = field(default_factory=dict)  # (name, protocol)

    @property
    def key(self) -> Tuple[str, str]:
        return (self.namespace, self.name)

    @cached_property
    def address(self) -> Optional[Address]:
        """The IP as an address, parsed only when an ipBlock needs it."""
        return ipaddress.ip_address(self.ip) if self.ip else None


@dataclass(frozen=True)
class NamespaceInfo:
    """A namespace; `labels` always hold kubernetes.io/metadata.name, as the API server sets it."""

    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    explicit: bool = True  # False: known only from its pods or policies
