"""The Kubernetes reference verdict for one flow, computed straight from the manifests.

This is the oracle `explain` compares the Contrail evaluation against, so it deliberately shares no
code with the translator: it reads Namespace, Pod and NetworkPolicy dicts (as the API server returns
them) and applies the NetworkPolicy API semantics directly:

- a pod is isolated for a direction when a policy of its namespace selects it and lists that
  direction in its effective `policyTypes` (default `Ingress`, plus `Egress` when `spec.egress` is
  non-empty);
- an isolated direction allows a flow when some rule block of some selecting policy matches the peer
  and the port; a flow is allowed when the source's egress and the destination's ingress allow it;
- peers: `podSelector` (policy namespace), `namespaceSelector` (namespace labels, including
  `kubernetes.io/metadata.name`), both combined, or `ipBlock` (CIDR minus excepts, matched against any
  IP, pod IPs included); a missing or empty `from`/`to` matches everything;
- ports: protocol (default TCP), number, `endPort` range, or a named port resolved on the destination
  pod's container ports (an outside address never matches a named port); missing or empty `ports`
  matches every port of every protocol.

Invalid parts are read as SPEC section 11 prescribes (fail closed): an invalid peer or port matches
nothing, a block whose peers or ports are all invalid allows nothing, and a policy whose own
`podSelector` or `policyTypes` is invalid is ignored. The model never raises on bad manifests.
"""
from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
IPNetwork = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
PROTOCOLS = ("TCP", "UDP", "SCTP")
INGRESS = "Ingress"
EGRESS = "Egress"

_SELECTOR_FIELDS = {"matchLabels", "matchExpressions"}
_EXPRESSION_FIELDS = {"key", "operator", "values"}
_PEER_FIELDS = {"podSelector", "namespaceSelector", "ipBlock"}
_IPBLOCK_FIELDS = {"cidr", "except"}
_PORT_FIELDS = {"protocol", "port", "endPort"}
_BLOCK_FIELDS = {INGRESS: {"from", "ports"}, EGRESS: {"to", "ports"}}
_PEER_LIST = {INGRESS: "from", EGRESS: "to"}
_SPEC_LIST = {INGRESS: "ingress", EGRESS: "egress"}
# IANA service name, as the API server validates a named port.
_PORT_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$")
# Label syntax: a value (or a key's name part) is at most 63 of these, alphanumeric at both ends;
# a key may have a DNS-subdomain prefix and a slash.
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class Invalid(ValueError):
    """A part of a manifest the API server would refuse; the message says why."""


# --------------------------------------------------------------------------------------------------
# Label selectors


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist
    values: frozenset

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        return not present  # DoesNotExist


@dataclass(frozen=True)
class Selector:
    """A compiled metav1.LabelSelector; the empty selector matches everything."""

    requirements: Tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)


def _object(value: Any) -> Mapping[str, Any]:
    """`value` when it is an object, else `{}`: a malformed manifest reads as empty, never raises."""
    return value if isinstance(value, dict) else {}


def _as_list(value: Any, what: str) -> List[Any]:
    """A list field as the API server decodes it: null is empty, null entries are {}."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise Invalid(f"{what} must be a list")
    return [{} if item is None else item for item in value]


def _check_fields(obj: Any, allowed: set, what: str) -> Dict[str, Any]:
    if not isinstance(obj, dict):
        raise Invalid(f"{what} must be an object")
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise Invalid(f"{what} has unknown field(s) {', '.join(map(str, unknown))}")
    return obj


def _check_label(key: Any, values: Iterable[Any], what: str) -> str:
    """Refuse a label key or value the API server would refuse in a selector; the key, checked."""
    prefix, slash, name = key.rpartition("/") if isinstance(key, str) else ("", "", "")
    if (not name or len(name) > 63 or not _LABEL_NAME.match(name)
            or (slash and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)))):
        raise Invalid(f"{what}: invalid label key {key!r}")
    for value in values:
        if not isinstance(value, str) or len(value) > 63 or (value and not _LABEL_NAME.match(value)):
            raise Invalid(f"{what}: invalid label value {value!r} for {key}")
    return key


def compile_selector(raw: Any, what: str = "selector") -> Selector:
    """Compile a label selector; raises Invalid for what the API server would refuse."""
    if raw is None:
        return Selector()
    raw = _check_fields(raw, _SELECTOR_FIELDS, what)
    requirements: List[Requirement] = []
    match_labels = raw.get("matchLabels") or {}
    if not isinstance(match_labels, dict):
        raise Invalid(f"{what}.matchLabels must be a map")
    for key, value in match_labels.items():
        value = "" if value is None else value
        _check_label(key, [value], f"{what}.matchLabels")
        requirements.append(Requirement(key, "In", frozenset([value])))
    for expr in _as_list(raw.get("matchExpressions"), f"{what}.matchExpressions"):
        expr = _check_fields(expr, _EXPRESSION_FIELDS, f"{what}.matchExpressions entry")
        key, operator = expr.get("key"), expr.get("operator")
        values = _as_list(expr.get("values"), f"{what}.matchExpressions values")
        key = _check_label(key, values, f"{what}.matchExpressions")
        if operator in ("In", "NotIn"):
            if not values:
                raise Invalid(f"{what}.matchExpressions {key}: {operator} needs values")
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                raise Invalid(f"{what}.matchExpressions {key}: {operator} takes no values")
        else:
            raise Invalid(f"{what}.matchExpressions {key}: unknown operator {operator!r}")
        requirements.append(Requirement(key, operator, frozenset(values)))
    return Selector(tuple(requirements))


# --------------------------------------------------------------------------------------------------
# Pods and flow endpoints


@dataclass(frozen=True)
class ContainerPort:
    name: str
    protocol: str
    number: int


@dataclass(frozen=True)
class Pod:
    namespace: str
    name: str
    labels: Mapping[str, str]
    ip: Optional[IPAddress]
    ports: Tuple[ContainerPort, ...]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def resolve(self, port_name: str, protocol: str) -> Optional[int]:
        """The number a named port has on this pod for `protocol`, or None."""
        for port in self.ports:
            if port.name == port_name and port.protocol == protocol:
                return port.number
        return None


@dataclass(frozen=True)
class Endpoint:
    """One end of a flow: a cluster pod (with its IP, if any) or an outside address."""

    pod: Optional[Pod]
    ip: Optional[IPAddress]

    def describe(self) -> str:
        return self.pod.key if self.pod else str(self.ip)


def _parse_ip(text: Any) -> Optional[IPAddress]:
    try:
        return ipaddress.ip_address(text) if text else None
    except (ValueError, TypeError):
        return None


def _labels(metadata: Mapping[str, Any]) -> Dict[str, str]:
    labels = metadata.get("labels") or {}
    if not isinstance(labels, dict):
        return {}
    return {str(k): "" if v is None else str(v) for k, v in labels.items()}


def _container_ports(spec: Mapping[str, Any]) -> Tuple[ContainerPort, ...]:
    ports: List[ContainerPort] = []
    containers = spec.get("containers")
    for container in containers if isinstance(containers, list) else ():
        if not isinstance(container, dict):
            continue
        entries = container.get("ports")
        for port in entries if isinstance(entries, list) else ():
            if not isinstance(port, dict):
                continue
            name, number = port.get("name"), port.get("containerPort")
            if isinstance(name, str) and name and isinstance(number, int):
                ports.append(ContainerPort(name, port.get("protocol") or "TCP", number))
    return tuple(ports)


def _pod(manifest: Mapping[str, Any]) -> Optional[Pod]:
    metadata = _object(manifest.get("metadata"))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return None
    spec = _object(manifest.get("spec"))
    status = _object(manifest.get("status"))
    return Pod(
        namespace=metadata.get("namespace") or "default",
        name=name,
        labels=_labels(metadata),
        ip=_parse_ip(status.get("podIP")),
        ports=_container_ports(spec),
    )


# --------------------------------------------------------------------------------------------------
# Policies


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Policy:
    namespace: str
    name: str
    selector: Selector
    # direction -> rule blocks; a direction is present exactly when the policy isolates it.
    directions: Mapping[str, Tuple[RuleBlock, ...]]

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Rejection:
    namespace: str
    name: str
    reason: str


def _network(text: Any, what: str) -> IPNetwork:
    if not isinstance(text, str):
        raise Invalid(f"{what} must be a CIDR string")
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise Invalid(f"{what} {text!r} is not a valid CIDR") from None


def _ipblock_peer(raw: Any) -> Peer:
    raw = _check_fields(raw, _IPBLOCK_FIELDS, "ipBlock")
    network = _network(raw.get("cidr"), "ipBlock.cidr")
    excepts = []
    for text in _as_list(raw.get("except"), "ipBlock.except"):
        excluded = _network(text, "ipBlock.except")
        # typeshed types subnet_of per IP version; the version is compared first.
        if (excluded.version != network.version or not excluded.subnet_of(network)  # type: ignore[arg-type]
                or excluded == network):
            raise Invalid(f"ipBlock.except {text} is not a strict subset of {network}")
        excepts.append(excluded)
    return Peer(network=network, excepts=tuple(excepts))


def _peer(raw: Any, namespace: str) -> Peer:
    raw = _check_fields(raw, _PEER_FIELDS, "peer")
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
    raw = _check_fields(raw, _PORT_FIELDS, "port")
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
        if not _PORT_NAME.match(port) or "--" in port or not re.search("[a-z]", port):
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
    types = _as_list(spec.get("policyTypes"), "policyTypes")
    if not types:
        return (INGRESS, EGRESS) if spec.get("egress") else (INGRESS,)
    for value in types:
        if value not in (INGRESS, EGRESS):
            raise Invalid(f"unknown policyType {value!r}")
    return tuple(dict.fromkeys(types))


def compile_policy(manifest: Mapping[str, Any]) -> Tuple[Optional[Policy], List[str]]:
    """Compile one NetworkPolicy; returns (policy or None when rejected whole, rejection reasons)."""
    metadata = _object(manifest.get("metadata"))
    namespace = metadata.get("namespace") or "default"
    spec = manifest.get("spec") or {}
    reasons: List[str] = []
    try:
        if not isinstance(spec, dict):
            raise Invalid("spec must be an object")
        selector = compile_selector(spec.get("podSelector"), "podSelector")
        types = _policy_types(spec)
    except Invalid as exc:
        return None, [str(exc)]
    directions: Dict[str, Tuple[RuleBlock, ...]] = {}
    for direction in types:
        blocks: List[RuleBlock] = []
        spec_field = _SPEC_LIST[direction]
        try:
            raw_blocks = _as_list(spec.get(spec_field), spec_field)
        except Invalid as exc:
            reasons.append(str(exc))
            raw_blocks = []
        for b, raw in enumerate(raw_blocks):
            where = f"{spec_field}[{b}]"
            try:
                raw = _check_fields(raw, _BLOCK_FIELDS[direction], where)
                peer_field = _PEER_LIST[direction]
                peers = _entries(_as_list(raw.get(peer_field), peer_field),
                                 lambda p: _peer(p, namespace), reasons, f"{where}.{peer_field}")
                ports = _entries(_as_list(raw.get("ports"), "ports"), _port_rule, reasons,
                                 f"{where}.ports")
            except Invalid as exc:
                reasons.append(f"{where}: {exc}")
                continue
            blocks.append(RuleBlock(peers, ports, b))
        directions[direction] = tuple(blocks)
    name = metadata.get("name") or ""
    return Policy(namespace, str(name), selector, directions), reasons


# --------------------------------------------------------------------------------------------------
# The model


@dataclass(frozen=True)
class SideVerdict:
    """One direction at one end: which policies isolate it and which of them allow the flow."""

    isolated: bool
    isolating: Tuple[str, ...] = ()
    allowing: Tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        return not self.isolated or bool(self.allowing)

    def to_dict(self) -> Dict[str, Any]:
        return {"isolated": self.isolated, "allowed": self.allowed,
                "policies": list(self.isolating), "allowed_by": list(self.allowing)}


@dataclass(frozen=True)
class PeerBlocks:
    """One side of a pod pair with the ports left open: each policy isolating that direction of
    the pod (by key) and its blocks whose peers match the other end. A verdict for any port is
    then a check of those blocks' ports (`side`), so a caller asking many ports of one pair (the
    what-if) matches selectors once."""

    policies: Tuple[Tuple[str, Tuple["RuleBlock", ...]], ...] = ()

    def side(self, destination: Endpoint, port: int, protocol: str) -> SideVerdict:
        allowing = [key for key, blocks in self.policies
                    if any(b.port_matches(destination, port, protocol) for b in blocks)]
        return SideVerdict(bool(self.policies), tuple(sorted(key for key, _ in self.policies)),
                           tuple(sorted(allowing)))


@dataclass(frozen=True)
class Verdict:
    egress: SideVerdict   # at the source
    ingress: SideVerdict  # at the destination

    @property
    def allowed(self) -> bool:
        return self.egress.allowed and self.ingress.allowed


class KubernetesModel:
    """Namespaces, pods and policies, for repeated verdicts.

    Building only groups the manifests: a verdict needs the policies of two namespaces and the two
    pods involved, so pods and policies are compiled when first asked for (and kept), and the
    index of pods by IP is made at the first lookup by address. On a large live cluster an
    explain then costs little more than the two namespaces it touches.
    """

    def __init__(self) -> None:
        self.namespace_labels: Dict[str, Dict[str, str]] = {}
        self._pod_manifests: Dict[Tuple[str, str], Mapping[str, Any]] = {}
        self._pods: Dict[Tuple[str, str], Optional[Pod]] = {}
        self._pods_by_ip: Optional[Dict[IPAddress, List[Tuple[str, str]]]] = None
        self._policy_manifests: Dict[str, List[Mapping[str, Any]]] = {}
        self._policies: Dict[str, List[Policy]] = {}
        self._rejections: Dict[str, List[Rejection]] = {}

    @classmethod
    def build(cls, namespaces: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any]],
              network_policies: Iterable[Mapping[str, Any]]) -> "KubernetesModel":
        model = cls()
        for manifest in namespaces:
            metadata = _object(_object(manifest).get("metadata"))
            name = metadata.get("name")
            if isinstance(name, str) and name:
                model.namespace_labels[name] = {**_labels(metadata), NAMESPACE_NAME_LABEL: name}
        for manifest in pods:
            metadata = _object(_object(manifest).get("metadata"))
            name, namespace = metadata.get("name"), metadata.get("namespace") or "default"
            if isinstance(name, str) and name and isinstance(namespace, str):
                model._pod_manifests[(namespace, name)] = manifest
                model._known_namespace(namespace)
        for manifest in network_policies:
            namespace = _object(_object(manifest).get("metadata")).get("namespace") or "default"
            if not isinstance(namespace, str) or not isinstance(manifest, dict):
                continue  # the API server would refuse it; the translator rejects it whole
            model._policy_manifests.setdefault(namespace, []).append(manifest)
            model._known_namespace(namespace)
        return model

    def _known_namespace(self, name: str) -> None:
        self.namespace_labels.setdefault(name, {NAMESPACE_NAME_LABEL: name})

    def pod(self, namespace: str, name: str) -> Optional[Pod]:
        key = (namespace, name)
        if key not in self._pods:
            manifest = self._pod_manifests.get(key)
            self._pods[key] = _pod(manifest) if manifest is not None else None
        return self._pods[key]

    def pods_with_ip(self, ip: IPAddress) -> List[Pod]:
        if self._pods_by_ip is None:
            self._pods_by_ip = {}
            for key, manifest in self._pod_manifests.items():
                address = _parse_ip(_object(manifest.get("status")).get("podIP"))
                if address is not None:
                    self._pods_by_ip.setdefault(address, []).append(key)
        return [p for p in (self.pod(*key) for key in self._pods_by_ip.get(ip, ())) if p]

    def policies(self, namespace: str) -> List[Policy]:
        """The valid policies of a namespace (those rejected whole are left out)."""
        if namespace not in self._policies:
            compiled: List[Policy] = []
            rejected: List[Rejection] = []
            for manifest in self._policy_manifests.get(namespace, ()):
                policy, reasons = compile_policy(manifest)
                name = str((manifest.get("metadata") or {}).get("name") or "")
                rejected.extend(Rejection(namespace, name, reason) for reason in reasons)
                if policy is not None:
                    compiled.append(policy)
            self._policies[namespace], self._rejections[namespace] = compiled, rejected
        return self._policies[namespace]

    def rejected_whole(self, namespace: str) -> List[str]:
        """"ns/name" of the namespace's policies rejected whole (an invalid own podSelector or
        policyTypes): they select nothing, though their author meant them to."""
        valid = {p.name for p in self.policies(namespace)}
        return sorted({f"{namespace}/{r.name}" for r in self._rejections[namespace]
                       if r.name not in valid})

    def rejections(self) -> List[Rejection]:
        """Every rejected part of every policy (compiles them all)."""
        for namespace in sorted(self._policy_manifests):
            self.policies(namespace)
        return [r for namespace in sorted(self._rejections) for r in self._rejections[namespace]]

    def peer_blocks(self, pod: Optional[Pod], direction: str, peer: Endpoint) -> PeerBlocks:
        """`direction` of `pod` against the other end `peer`, ports aside."""
        if pod is None:
            return PeerBlocks()  # outside addresses have no policies
        found = []
        for policy in self.policies(pod.namespace):
            if direction not in policy.directions or not policy.selector.matches(pod.labels):
                continue
            found.append((policy.key, tuple(b for b in policy.directions[direction]
                                            if b.peer_matches(peer, self.namespace_labels))))
        return PeerBlocks(tuple(found))

    def pair(self, src: Endpoint, dst: Endpoint) -> Tuple[PeerBlocks, PeerBlocks]:
        """(egress at the source, ingress at the destination) of src -> dst, ports aside."""
        return self.peer_blocks(src.pod, EGRESS, dst), self.peer_blocks(dst.pod, INGRESS, src)

    def verdict(self, src: Endpoint, dst: Endpoint, port: int, protocol: str) -> Verdict:
        """The NetworkPolicy verdict for a new flow src -> dst on `protocol` (TCP/UDP/SCTP) `port`."""
        egress, ingress = self.pair(src, dst)
        return Verdict(egress=egress.side(dst, port, protocol),
                       ingress=ingress.side(dst, port, protocol))
