"""ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2) as the reference model reads it.

Read straight from the manifest with the API's semantics (upstream: kubernetes-sigs/network-policy-api,
apis/v1alpha2/clusternetworkpolicy_types.go), sharing no code with the translator:

- `tier` Admin or Baseline, `priority` 0-1000 (lower first; SPEC 13 orders equal priorities by
  name), `subject` exactly one of `namespaces` (a namespace selector) or `pods` (namespace and pod
  selectors);
- rules per direction, in order, each with an `action` (Accept, Deny, Pass), peers (`from`/`to`,
  at least one) and optional `protocols`; the first rule matching the peer and the port decides;
- ingress peers: `namespaces`, `pods`; egress peers also `networks` (CIDRs, matched against any IP,
  pod IPs included), `nodes` and `domainNames`;
- protocols: `tcp`/`udp`/`sctp` with a `destinationPort` `number` or `range` (start < end, both
  inclusive), or a `destinationNamedPort` resolved on the destination pod (a container port of
  that name and the flow's protocol; an outside address never has one); no `protocols` is every
  port.

Fail closed as the API and SPEC 13 prescribe: a rule with a part this version cannot enforce
(`nodes`, `domainNames`) or an invalid part is, when Accept, a rule that matches nothing and, when
Deny or Pass, a rule that denies all traffic of its subject in its direction (`fail_closed` says
why); so is an `ingress`/`egress` that is not a list. A policy whose own tier, priority or subject
is invalid is rejected whole and selects nothing; unknown fields of its spec are reported and
ignored. Parsing never raises on bad manifests.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .k8s_netpol import EGRESS, INGRESS, valid_port_name
from .k8s_pods import Endpoint, Pod
from .k8s_selectors import (IPNetwork, Invalid, Selector, as_list, check_fields, compile_selector,
                            object_or_empty, parse_network)

ADMIN = "Admin"
BASELINE = "Baseline"
TIERS = (ADMIN, BASELINE)
ACCEPT = "Accept"
DENY = "Deny"
PASS = "Pass"
ACTIONS = (ACCEPT, DENY, PASS)
MAX_PRIORITY = 1000
MAX_ITEMS = 25  # the API's limit on peers and protocols per rule and networks per peer
MAX_RULE_NAME = 100

_SPEC_FIELDS = {"tier", "priority", "subject", "ingress", "egress"}
_SUBJECT_FIELDS = {"namespaces", "pods"}
_NAMESPACED_POD_FIELDS = {"namespaceSelector", "podSelector"}
_PEER_FIELDS = {INGRESS: {"namespaces", "pods"},
                EGRESS: {"namespaces", "pods", "nodes", "networks", "domainNames"}}
_UNENFORCED_PEERS = ("nodes", "domainNames")
_RULE_FIELDS = {INGRESS: {"name", "action", "from", "protocols"},
                EGRESS: {"name", "action", "to", "protocols"}}
_PEER_LIST = {INGRESS: "from", EGRESS: "to"}
_SPEC_LIST = {INGRESS: "ingress", EGRESS: "egress"}
_PROTOCOL_FIELDS = {"tcp": "TCP", "udp": "UDP", "sctp": "SCTP"}
_NAMED_PORT = "destinationNamedPort"


class Unenforced(Invalid):
    """A valid part this version cannot enforce (SPEC 13: `nodes`, `domainNames`); fails closed."""


@dataclass(frozen=True)
class PodSelection:
    """A subject or a `namespaces`/`pods` peer: pods whose namespace matches `namespaces` and,
    for a `pods` selection, whose labels match `pods`."""

    namespaces: Selector
    pods: Optional[Selector] = None

    def matches(self, pod: Pod, namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
        return (self.namespaces.matches(namespace_labels.get(pod.namespace, {}))
                and (self.pods is None or self.pods.matches(pod.labels)))


@dataclass(frozen=True)
class ClusterPeer:
    """One entry of `from`/`to`: a pod set or networks."""

    pod_set: Optional[PodSelection] = None
    networks: Tuple[IPNetwork, ...] = ()

    def matches(self, endpoint: Endpoint, namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
        if self.pod_set is None:
            ip = endpoint.ip
            return ip is not None and any(ip in network for network in self.networks)
        return endpoint.pod is not None and self.pod_set.matches(endpoint.pod, namespace_labels)


@dataclass(frozen=True)
class ClusterPort:
    """One entry of `protocols`: a protocol and a port range, or a destination named port."""

    protocol: str = ""  # TCP | UDP | SCTP; empty for a named port (the container port has one)
    start: int = 1
    end: int = 65535
    name: Optional[str] = None

    def matches(self, port: int, protocol: str, destination: Endpoint) -> bool:
        if self.name is None:
            return protocol == self.protocol and self.start <= port <= self.end
        pod = destination.pod  # the name is looked up with the flow's protocol (SPEC 4)
        return pod is not None and pod.resolve(self.name, protocol) == port


@dataclass(frozen=True)
class TierRule:
    """One rule of one direction. `ports` None is every port. `fail_closed` is the reason the rule
    is read fail-closed (then it matches nothing when Accept, everything when Deny or Pass, and
    acts as Deny), or None."""

    index: int
    name: str
    action: str
    peers: Tuple[ClusterPeer, ...] = ()
    ports: Optional[Tuple[ClusterPort, ...]] = None
    fail_closed: Optional[str] = None

    @property
    def effect(self) -> str:
        """The action the rule takes when it matches: a Pass read fail-closed denies."""
        return DENY if self.fail_closed is not None and self.action != ACCEPT else self.action

    def peer_matches(self, peer: Endpoint, namespace_labels: Mapping[str, Mapping[str, str]]) -> bool:
        if self.fail_closed is not None:
            return self.action != ACCEPT
        return any(p.matches(peer, namespace_labels) for p in self.peers)

    def port_matches(self, destination: Endpoint, port: int, protocol: str) -> bool:
        if self.fail_closed is not None:
            return self.action != ACCEPT
        if self.ports is None:
            return True  # no protocols: every port of every protocol
        return any(p.matches(port, protocol, destination) for p in self.ports)


@dataclass(frozen=True)
class ClusterPolicy:
    """One valid ClusterNetworkPolicy: its place (tier, priority), subject and rules."""

    name: str
    tier: str
    priority: int
    subject: PodSelection
    # direction -> its rules in order; a direction without rules is absent.
    directions: Mapping[str, Tuple[TierRule, ...]]

    @property
    def order(self) -> Tuple[int, str]:
        """Evaluation order within the tier: priority, then name (SPEC 13)."""
        return (self.priority, self.name)


def _pod_set(raw: Any, what: str) -> PodSelection:
    """`namespaces: <selector>` or `pods: {namespaceSelector, podSelector}`, exactly one."""
    present = [key for key in ("namespaces", "pods") if raw.get(key) is not None]
    if len(present) != 1:
        raise Invalid(f"{what} must set exactly one of namespaces, pods")
    if present[0] == "namespaces":
        return PodSelection(compile_selector(raw["namespaces"], f"{what}.namespaces"))
    pods = check_fields(raw["pods"], _NAMESPACED_POD_FIELDS, f"{what}.pods")
    if pods.get("podSelector") is None:
        raise Invalid(f"{what}.pods.podSelector is required")
    return PodSelection(compile_selector(pods.get("namespaceSelector"), f"{what}.pods.namespaceSelector"),
                  compile_selector(pods["podSelector"], f"{what}.pods.podSelector"))


def _peer(raw: Any, direction: str, what: str) -> ClusterPeer:
    raw = check_fields(raw, _PEER_FIELDS[direction], what)
    present = [key for key in sorted(_PEER_FIELDS[direction]) if raw.get(key) is not None]
    if len(present) != 1:
        raise Invalid(f"{what} must set exactly one of {', '.join(sorted(_PEER_FIELDS[direction]))}")
    kind = present[0]
    if kind in _UNENFORCED_PEERS:
        raise Unenforced(f"{what}: {kind} peers are not enforced by this version")
    if kind == "networks":
        cidrs = as_list(raw["networks"], f"{what}.networks")
        if not 1 <= len(cidrs) <= MAX_ITEMS:
            raise Invalid(f"{what}.networks must list 1-{MAX_ITEMS} CIDRs")
        return ClusterPeer(networks=tuple(parse_network(c, f"{what}.networks") for c in cidrs))
    return ClusterPeer(pod_set=_pod_set(raw, what))


def _number(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise Invalid(f"{what} {value!r} is not a port number (1-65535)")
    return value


def _port(raw: Any, what: str) -> ClusterPort:
    raw = check_fields(raw, set(_PROTOCOL_FIELDS) | {_NAMED_PORT}, what)
    present = [key for key in sorted(raw) if raw.get(key) is not None]
    if len(present) != 1:
        raise Invalid(f"{what} must set exactly one of tcp, udp, sctp, {_NAMED_PORT}")
    if present[0] == _NAMED_PORT:
        if not valid_port_name(raw[_NAMED_PORT]):
            raise Invalid(f"{what}: invalid port name {raw[_NAMED_PORT]!r}")
        return ClusterPort(name=raw[_NAMED_PORT])
    protocol = _PROTOCOL_FIELDS[present[0]]
    where = f"{what}.{present[0]}"
    destination = check_fields(raw[present[0]], {"destinationPort"}, where).get("destinationPort")
    destination = check_fields(destination, {"number", "range"}, f"{where}.destinationPort")
    given = [key for key in ("number", "range") if destination.get(key) is not None]
    if len(given) != 1:
        raise Invalid(f"{where}.destinationPort must set exactly one of number, range")
    if given[0] == "number":
        number = _number(destination["number"], f"{where}.destinationPort.number")
        return ClusterPort(protocol, number, number)
    bounds = check_fields(destination["range"], {"start", "end"}, f"{where}.destinationPort.range")
    start = _number(bounds.get("start"), f"{where}.destinationPort.range.start")
    end = _number(bounds.get("end"), f"{where}.destinationPort.range.end")
    if start >= end:
        raise Invalid(f"{where}.destinationPort.range: start {start} must be less than end {end}")
    return ClusterPort(protocol, start, end)


def _rule(raw: Any, direction: str, index: int, what: str) -> TierRule:
    """One rule; an invalid or unenforceable part makes it fail closed, never raises."""
    raw = object_or_empty(raw)
    name = raw.get("name") if isinstance(raw.get("name"), str) else ""
    action = raw.get("action") if raw.get("action") in ACTIONS else DENY
    try:
        check_fields(raw, _RULE_FIELDS[direction], what)
        if raw.get("action") not in ACTIONS:
            raise Invalid(f"{what}: unknown action {raw.get('action')!r}")
        given_name = raw.get("name")
        if given_name is not None and (not isinstance(given_name, str)
                                       or len(given_name) > MAX_RULE_NAME):
            raise Invalid(f"{what}.name must be a string of at most {MAX_RULE_NAME} characters")
        peer_field = _PEER_LIST[direction]
        raw_peers = as_list(raw.get(peer_field), f"{what}.{peer_field}")
        if not 1 <= len(raw_peers) <= MAX_ITEMS:
            raise Invalid(f"{what}.{peer_field} must list 1-{MAX_ITEMS} peers")
        peers = tuple(_peer(p, direction, f"{what}.{peer_field}[{i}]")
                      for i, p in enumerate(raw_peers))
        ports: Optional[Tuple[ClusterPort, ...]] = None
        if raw.get("protocols") is not None:
            raw_ports = as_list(raw["protocols"], f"{what}.protocols")
            if not 1 <= len(raw_ports) <= MAX_ITEMS:
                raise Invalid(f"{what}.protocols, when given, must list 1-{MAX_ITEMS} entries")
            ports = tuple(_port(p, f"{what}.protocols[{i}]") for i, p in enumerate(raw_ports))
            if any(p.name for p in ports) and any(p.pod_set is None for p in peers):
                raise Invalid(f"{what}: a named port cannot be used with networks peers")
    except Invalid as exc:
        return TierRule(index, name, action, fail_closed=str(exc))
    return TierRule(index, name, action, peers, ports)


def compile_cluster_policy(manifest: Mapping[str, Any]) -> Tuple[Optional[ClusterPolicy], List[str]]:
    """Compile one ClusterNetworkPolicy; returns (policy or None when rejected whole, the reasons
    for every rejected or fail-closed part)."""
    metadata = object_or_empty(manifest.get("metadata"))
    name = metadata.get("name")
    spec = manifest.get("spec")
    try:
        if not isinstance(name, str) or not name:
            raise Invalid("metadata.name is required")
        if not isinstance(spec, dict):
            raise Invalid("spec must be an object")
        tier, priority = spec.get("tier"), spec.get("priority")
        if tier not in TIERS:
            raise Invalid(f"spec.tier must be Admin or Baseline, not {tier!r}")
        if isinstance(priority, bool) or not isinstance(priority, int) \
                or not 0 <= priority <= MAX_PRIORITY:
            raise Invalid(f"spec.priority must be an integer from 0 to {MAX_PRIORITY}, not {priority!r}")
        subject = _pod_set(check_fields(spec.get("subject"), _SUBJECT_FIELDS, "spec.subject"),
                           "spec.subject")
    except Invalid as exc:
        return None, [str(exc)]
    directions: Dict[str, Tuple[TierRule, ...]] = {}
    reasons = [f"spec: unknown field {key!r}, ignored" for key in sorted(map(str, spec))
               if key not in _SPEC_FIELDS]
    for direction in (INGRESS, EGRESS):
        what = f"spec.{_SPEC_LIST[direction]}"
        try:
            rules = as_list(spec.get(_SPEC_LIST[direction]), what)
        except Invalid as exc:  # the list itself unreadable: deny the whole direction
            directions[direction] = (TierRule(0, "", DENY, fail_closed=str(exc)),)
            reasons.append(str(exc))
            continue
        compiled = [_rule(raw, direction, i, f"{_SPEC_LIST[direction]}[{i}]")
                    for i, raw in enumerate(rules)]
        reasons.extend(rule.fail_closed for rule in compiled if rule.fail_closed is not None)
        if compiled:
            directions[direction] = tuple(compiled)
    return ClusterPolicy(name, tier, priority, subject, directions), reasons


@dataclass(frozen=True)
class TierDecision:
    """The rule that decided one direction in one tier: its policy, index and name, and its effect."""

    tier: str
    policy: str
    priority: int
    index: int
    rule: str
    action: str  # the effect: Accept | Deny | Pass
    fail_closed: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"tier": self.tier, "policy": self.policy, "priority": self.priority,
                "index": self.index, "rule": self.rule, "action": self.action,
                "fail_closed": self.fail_closed}


@dataclass(frozen=True)
class TierCandidates:
    """One tier on one side of a pod pair with the ports left open: the rules of the policies
    selecting the pod, in evaluation order, whose peers match the other end. The first of them
    whose ports match decides (`decide`), so a caller asking many ports matches selectors once."""

    rules: Tuple[Tuple[ClusterPolicy, TierRule], ...] = ()

    def decide(self, destination: Endpoint, port: int, protocol: str) -> Optional[TierDecision]:
        for policy, rule in self.rules:
            if rule.port_matches(destination, port, protocol):
                return TierDecision(policy.tier, policy.name, policy.priority, rule.index,
                                    rule.name, rule.effect, rule.fail_closed)
        return None


def tier_candidates(policies: Sequence[ClusterPolicy], pod: Optional[Pod], direction: str,
                    peer: Endpoint,
                    namespace_labels: Mapping[str, Mapping[str, str]]) -> TierCandidates:
    """`policies` (one tier, in evaluation order) for `direction` of `pod` against `peer`."""
    if pod is None:
        return TierCandidates()  # outside addresses are no subject
    found: List[Tuple[ClusterPolicy, TierRule]] = []
    for policy in policies:
        rules = policy.directions.get(direction)
        if not rules or not policy.subject.matches(pod, namespace_labels):
            continue
        found.extend((policy, rule) for rule in rules if rule.peer_matches(peer, namespace_labels))
    return TierCandidates(tuple(found))


__all__ = ["ACCEPT", "ADMIN", "BASELINE", "DENY", "PASS", "ClusterPeer", "ClusterPolicy",
           "ClusterPort", "PodSelection", "TierCandidates", "TierDecision", "TierRule",
           "compile_cluster_policy", "tier_candidates"]
