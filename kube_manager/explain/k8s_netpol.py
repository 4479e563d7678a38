"""NetworkPolicy (networking.k8s.io/v1) as the reference model (k8s_semantics) reads it.

- a pod is isolated for a direction when a policy of its namespace selects it and lists that
  direction in its effective `policyTypes` (default `Ingress`, plus `Egress` when `spec.egress` is
  non-empty);
- an isolated direction allows a flow when some rule block of some selecting policy matches the peer
  and the port;
- peers: `podSelector` (policy namespace), `namespaceSelector` (namespace labels, including
  `kubernetes.io/metadata.name`), both combined, or `ipBlock` (CIDR minus excepts, matched against any
  IP, pod IPs included); a missing or empty `from`/`to` matches everything;
- ports: protocol (default TCP), number, `endPort` range, or a named port resolved on the destination
  pod's container ports (an outside address never matches a named port); missing or empty `ports`
  matches every port of every protocol.

Invalid parts are read as SPEC section 11 prescribes (fail closed): an invalid peer or port matches
nothing, a block whose peers or ports are all invalid allows nothing, and a policy whose own
`podSelector` or `policyTypes` is invalid is rejected whole. Parsing never raises on bad manifests.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple, TypeVar

from .k8s_pods import Endpoint
from .k8s_selectors import (IPNetwork, Invalid, Selector, as_list, check_fields, compile_selector,
                            object_or_empty, parse_network)

PROTOCOLS = ("TCP", "UDP", "SCTP")
INGRESS = "Ingress"
EGRESS = "Egress"

_PEER_FIELDS = {"podSelector", "namespaceSelector", "ipBlock"}
_IPBLOCK_FIELDS = {"cidr", "except"}
_PORT_FIELDS = {"protocol", "port", "endPort"}
_BLOCK_FIELDS = {INGRESS: {"from", "ports"}, EGRESS: {"to", "ports"}}
_PEER_LIST = {INGRESS: "from", EGRESS: "to"}
_SPEC_LIST = {INGRESS: "ingress", EGRESS: "egress"}
_Part = TypeVar("_Part")
_PARTS, _BLOCK = object(), object()  # what a key made of identities starts with (`_Shared`)
# IANA service name, as the API server validates a named port.
_PORT_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$")


def valid_port_name(name: Any) -> bool:
    """An IANA service name, as the API server validates a named port."""
    return (isinstance(name, str) and bool(_PORT_NAME.match(name)) and "--" not in name
            and re.search("[a-z]", name) is not None)


@dataclass(frozen=True, slots=True)
class Peer:
    """One entry of `from`/`to`. `namespace` is set for a podSelector-only peer (its policy's
    namespace); `network` for an ipBlock."""

    namespace: Optional[str] = None
    namespace_selector: Optional[Selector] = None
    pod_selector: Optional[Selector] = None
    network: Optional[IPNetwork] = None
    excepts: Tuple[IPNetwork, ...] = ()

    def matches(self, endpoint: Endpoint, namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
        if self.network is not None:
            ip = endpoint.ip
            return (ip is not None and ip in self.network
                    and not any(ip in e for e in self.excepts))
        pod = endpoint.pod
        if pod is None:
            return False  # selectors pick pods only
        if self.namespace is not None:
            if pod.namespace != self.namespace:
                return False
        elif self.namespace_selector is None or not self.namespace_selector.matches(
                namespace_labels.get(pod.namespace, {})):
            return False
        return self.pod_selector is None or self.pod_selector.matches(pod.labels)


@dataclass(frozen=True, slots=True)
class PortRule:
    """One entry of `ports`: a protocol and either a number range or a port name."""

    protocol: str
    start: int = 0
    end: int = 65535
    name: Optional[str] = None

    def matches(self, port: int, protocol: str, destination: Endpoint) -> bool:
        if protocol != self.protocol:
            return False
        if self.name is None:
            return self.start <= port <= self.end
        pod = destination.pod
        return pod is not None and pod.resolve(self.name, self.protocol) == port


@dataclass(frozen=True, slots=True)
class RuleBlock:
    """One ingress/egress rule. None means "all" (missing or empty list); an empty tuple after
    rejecting every entry means "none"."""

    peers: Optional[Tuple[Peer, ...]]
    ports: Optional[Tuple[PortRule, ...]]
    index: int = 0  # position in the manifest's ingress/egress list (rejected blocks counted)

    def peer_matches(self, peer: Endpoint,
                     namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
        return self.peers is None or any(p.matches(peer, namespace_labels) for p in self.peers)

    def port_matches(self, destination: Endpoint, port: int, protocol: str) -> bool:
        return self.ports is None or any(p.matches(port, protocol, destination) for p in self.ports)


@dataclass(frozen=True, slots=True)
class Policy:
    namespace: str
    name: str
    selector: Selector
    # direction -> rule blocks; a direction is present exactly when the policy isolates it.
    directions: Mapping[str, Tuple[RuleBlock, ...]]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Rejection:
    namespace: str
    name: str
    reason: str


def _ipblock_peer(raw: Any) -> Peer:
    raw = check_fields(raw, _IPBLOCK_FIELDS, "ipBlock")
    network = parse_network(raw.get("cidr"), "ipBlock.cidr")
    excepts = []
    for text in as_list(raw.get("except"), "ipBlock.except"):
        excluded = parse_network(text, "ipBlock.except")
        # typeshed types subnet_of per IP version; the version is compared first.
        if (excluded.version != network.version or not excluded.subnet_of(network)  # type: ignore[arg-type]
                or excluded == network):
            raise Invalid(f"ipBlock.except {text} is not a strict subset of {network}")
        excepts.append(excluded)
    return Peer(network=network, excepts=tuple(excepts))


def _peer(raw: Any, namespace: str) -> Peer:
    raw = check_fields(raw, _PEER_FIELDS, "peer")
    present = {k for k in _PEER_FIELDS if raw.get(k) is not None}
    if not present:
        raise Invalid("peer selects nothing (no podSelector, namespaceSelector or ipBlock)")
    if "ipBlock" in present:
        if len(present) > 1:
            raise Invalid("peer mixes ipBlock with a selector")
        return _ipblock_peer(raw["ipBlock"])
    pod_selector = compile_selector(raw.get("podSelector"), "podSelector") \
        if "podSelector" in present else None
    if "namespaceSelector" not in present:
        return Peer(namespace=namespace, pod_selector=pod_selector)
    return Peer(namespace_selector=compile_selector(raw["namespaceSelector"], "namespaceSelector"),
                pod_selector=pod_selector)


def _port_rule(raw: Any) -> PortRule:
    raw = check_fields(raw, _PORT_FIELDS, "port")
    protocol = raw.get("protocol") or "TCP"
    if protocol not in PROTOCOLS:
        raise Invalid(f"unknown protocol {protocol!r}")
    port, end_port = raw.get("port"), raw.get("endPort")
    if port is None:
        if end_port is not None:
            raise Invalid("endPort without port")
        return PortRule(protocol)
    if isinstance(port, str):
        if end_port is not None:
            raise Invalid("endPort cannot be used with a named port")
        if not valid_port_name(port):
            raise Invalid(f"invalid port name {port!r}")
        return PortRule(protocol, name=port)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise Invalid(f"invalid port {port!r}")
    if end_port is None:
        return PortRule(protocol, port, port)
    if isinstance(end_port, bool) or not isinstance(end_port, int) or not port <= end_port <= 65535:
        raise Invalid(f"invalid endPort {end_port!r} for port {port}")
    return PortRule(protocol, port, end_port)


def _entries(items: List[Any], parse, rejections: List[str], what: str) -> Optional[tuple]:
    """Parse a peers/ports list: None for "all" when empty, else the valid entries."""
    if not items:
        return None
    parsed = []
    for index, item in enumerate(items):
        try:
            parsed.append(parse(item))
        except Invalid as exc:
            rejections.append(f"{what}[{index}]: {exc}")
    return tuple(parsed)


def _policy_types(spec: Mapping[str, Any]) -> Tuple[str, ...]:
    types = as_list(spec.get("policyTypes"), "policyTypes")
    if not types:
        return (INGRESS, EGRESS) if spec.get("egress") else (INGRESS,)
    for value in types:
        if value not in (INGRESS, EGRESS):
            raise Invalid(f"unknown policyType {value!r}")
    return tuple(dict.fromkeys(types))


class _Shared:
    """The parts of policies compiled together, each equal part one object: a selector, peer or
    port by its value; a tuple of shared parts, or a block of them, by their identities (equal
    exactly when the parts are the same objects, and much cheaper to hash than their values).
    The table holds every part it returns, so no identity in a key passes to another object."""

    def __init__(self, table: Dict[Any, Any]) -> None:
        self._table = table

    def part(self, part: _Part) -> _Part:
        return self._table.setdefault(part, part)

    def parts(self, parts: Optional[Tuple[_Part, ...]]) -> Optional[Tuple[_Part, ...]]:
        if parts is None:
            return None
        parts = tuple(map(self.part, parts))
        return self._table.setdefault((_PARTS,) + tuple(map(id, parts)), parts)

    def blocks(self, blocks: List[RuleBlock]) -> Tuple[RuleBlock, ...]:
        """The blocks, each made of shared peers and ports."""
        found = [self._table.setdefault((_BLOCK, id(block.peers), id(block.ports), block.index), block)
                 for block in blocks]
        return self._table.setdefault((_PARTS,) + tuple(map(id, found)), tuple(found))


def compile_policy(manifest: Mapping[str, Any],
                   shared: Optional[Dict[Any, Any]] = None) -> Tuple[Optional[Policy], List[str]]:
    """Compile one NetworkPolicy; returns (policy or None when rejected whole, rejection reasons).
    `shared`: the parts compiled before it (policies compiled together), each equal part made
    one object: they are immutable values, and a namespace's policies repeat their selectors,
    peers and ports, whose copies would be most of what compiled policies hold."""
    share = _Shared(shared if shared is not None else {})
    metadata = object_or_empty(manifest.get("metadata"))
    namespace = metadata.get("namespace") or "default"
    spec = manifest.get("spec") or {}
    reasons: List[str] = []
    try:
        if not isinstance(spec, dict):
            raise Invalid("spec must be an object")
        selector = share.part(compile_selector(spec.get("podSelector"), "podSelector"))
        types = _policy_types(spec)
    except Invalid as exc:
        return None, [str(exc)]
    directions: Dict[str, Tuple[RuleBlock, ...]] = {}
    for direction in types:
        blocks: List[RuleBlock] = []
        spec_field = _SPEC_LIST[direction]
        try:
            raw_blocks = as_list(spec.get(spec_field), spec_field)
        except Invalid as exc:
            reasons.append(str(exc))
            raw_blocks = []
        for b, raw in enumerate(raw_blocks):
            where = f"{spec_field}[{b}]"
            try:
                raw = check_fields(raw, _BLOCK_FIELDS[direction], where)
                peer_field = _PEER_LIST[direction]
                peers = _entries(as_list(raw.get(peer_field), peer_field),
                                 lambda p: _peer(p, namespace), reasons, f"{where}.{peer_field}")
                ports = _entries(as_list(raw.get("ports"), "ports"), _port_rule, reasons,
                                 f"{where}.ports")
            except Invalid as exc:
                reasons.append(f"{where}: {exc}")
                continue
            blocks.append(RuleBlock(share.parts(peers), share.parts(ports), b))
        directions[direction] = share.blocks(blocks)
    name = metadata.get("name") or ""
    return Policy(namespace, str(name), selector, directions), reasons
