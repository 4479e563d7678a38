"""The translator's validated view of Kubernetes objects.

Manifests are parsed once into these frozen values; everything downstream (rendering, indexes,
selector evaluation) works on them and never looks at raw dicts again.
"""
from __future__ import annotations

import ipaddress
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from .cidr import Address, IpBlock
from .ports import PortSpec, Service
from .selectors import EVERYTHING, LabelSelector

METADATA_NAME_LABEL = "kubernetes.io/metadata.name"
UNBOUND = ""  # the namespace of "the policy's namespace" in a spec parsed on its own; never valid


@dataclass(frozen=True)
class PodScope:
    """A set of pods: a namespace scope plus an optional pod selector (SPEC 2.1).

    The scope is either one namespace (`namespace`) or the namespaces a selector picks
    (`namespace_selector`); `pod_selector` None means the field was absent (all pods of the scope).
    """

    namespace: Optional[str] = None
    namespace_selector: Optional[LabelSelector] = None
    pod_selector: Optional[LabelSelector] = None

    def __hash__(self) -> int:
        # The dataclass's own hash (of the fields' tuple), computed once per scope: a scope keys
        # the isolation counts, and hashing it walks its selectors' tuples.
        found: Optional[int] = self.__dict__.get("_hash")
        if found is None:
            found = self.__dict__["_hash"] = hash((self.namespace, self.namespace_selector, self.pod_selector))
        return found

    def bound(self, namespace: str) -> "PodScope":
        """This scope in a policy of `namespace`: an UNBOUND scope becomes that namespace."""
        if self.namespace != UNBOUND:
            return self
        return PodScope(namespace, None, self.pod_selector)

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


class PodExpression(ABC):
    """A set of pods no single selector describes (pods of some tags whose IP is in some networks,
    where a tier block meets pods with networks: SPEC 13, 14). It stands in Contrail as a selector
    tag kube-manager evaluates, so it says which pods it holds and where to look for them."""

    namespace: Optional[str] = None  # never confined to one namespace, as selector tags go

    @abstractmethod
    def hash_input(self) -> Any:
        """The canonical set expression its selector tag hashes."""

    @abstractmethod
    def contains(self, pod: "PodInfo", namespace_labels: Mapping[str, str]) -> bool:
        ...

    @abstractmethod
    def candidates(self) -> Optional[PodScope]:
        """A scope holding every member (None: any pod may be one), to narrow the search."""


Peer = Union[PodScope, IpBlock]
PodSet = Union[PodScope, IpBlock, PodExpression]
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
class PolicySpec:
    """A validated NetworkPolicy spec, on its own: peers of "the policy's namespace" are left
    unbound (namespace UNBOUND), so one PolicySpec serves every policy with the same spec.
    `selection` (the policy's own pods, unbound) None: the policy is rejected whole (SPEC 11)."""

    spec_sha256: str
    selection: Optional[PodScope]
    directions: Tuple[str, ...] = ()
    blocks: Tuple[Block, ...] = ()
    errors: Tuple[str, ...] = ()


@dataclass(slots=True)
class ParsedPolicy:
    """A NetworkPolicy after validation: its identity and its (shared) validated spec.

    Built once per event, so a plain slotted dataclass rather than a frozen one (whose
    initialisation costs three times as much); never modified after construction.
    """

    namespace: str
    name: str
    uid: str
    spec: PolicySpec

    @property
    def key(self) -> Tuple[str, str]:
        return (self.namespace, self.name)

    @property
    def spec_sha256(self) -> str:
        return self.spec.spec_sha256

    @property
    def errors(self) -> Tuple[str, ...]:
        return self.spec.errors

    @property
    def selection(self) -> Optional[PodScope]:
        """The pods the policy selects; None when it is rejected whole."""
        selection = self.spec.selection
        return None if selection is None else selection.bound(self.namespace)


@dataclass(slots=True)
class PodInfo:
    """The parts of a pod the translator reads. Never modified after construction (slotted and
    not frozen, as one is built per pod event); `key` is built once and shared by every index."""

    namespace: str
    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    ip: Optional[str] = None  # canonical
    named_ports: Mapping[Tuple[str, str], int] = field(default_factory=dict)  # (name, protocol)
    # On the node's network: its IP is the node's, and ClusterNetworkPolicy pod peers leave it out.
    host_network: bool = False
    key: Tuple[str, str] = field(init=False, repr=False, compare=False)
    _address: Optional[Address] = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.key = (self.namespace, self.name)

    @property
    def address(self) -> Optional[Address]:
        """The IP as an address, parsed only when an ipBlock needs it (then remembered)."""
        if self._address is None and self.ip:
            self._address = ipaddress.ip_address(self.ip)
        return self._address


@dataclass(slots=True)
class NamespaceInfo:
    """A namespace; `labels` always hold kubernetes.io/metadata.name, as the API server sets it.
    Never modified after construction."""

    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    explicit: bool = True  # False: known only from its pods or policies
