"""Rendering one tier of ClusterNetworkPolicies into Contrail objects (SPEC 13).

A tier is rendered whole: a rule's objects depend on every rule that precedes it in the tier (it is
emitted minus them), so one policy change recomputes its tier and nothing else. Per direction, in
tier order (priority, then name, then rule index): a Deny is emitted minus every preceding Accept
and Pass, an Accept minus every preceding Pass, and a Pass only takes its traffic out of what
follows. Deny pieces go to the tier's deny policy, Accept pieces to the policy's own firewall policy.

Names: every object starts `<cluster>--`, which no NetworkPolicy name can (a namespace never starts
with `-`): `<cluster>--admin-deny`, `<cluster>--baseline-deny`, `<cluster>--cnp-<name>`, rules
`<cluster>--cnp-<name>-<dir>-<rule>-<box>-<piece>-<service>`, address groups no NetworkPolicy could
share `<cluster>--<tier>-net-<12 hex>`.
"""
from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..bodies import DENY as DENY_ACTION, PASS as PASS_ACTION, Body, BodyFactory, FqName, \
    address_group_endpoint, global_fq_name, sequenced_ref
from ..canonical import canonical_json, sha1_of_json
from ..cidr import IpBlock, Network, cidr_text, subtract
from ..model import SelectorDef
from ..naming import INGRESS, rule_sequence, shorten
from ..ports import ANY_SERVICE, PROTOCOLS
from ..render import PodView, PolicyRenderer, ScopedLabel, TagOrigin
from .algebra import (EVERY_NETWORK, Box, NetSet, Peer, PodSet, PortAtom, TooManyPieces, boxes_apart, conjoin,
                      normal_networks, pods_of, subtract_rule)
from .model import ACCEPT, ADMIN, BASELINE, DENY, KIND, PASS, CnpRule, Networks, ParsedCnp
from .portsets import ALL_PORTS, PortSet, port_set

# Per written rule, the most firewall rules its pieces may make: past this a Deny is emitted whole
# and an Accept not at all (fail closed), so that no policy can flood the config API.
MAX_RULES = 4096
# Every IP protocol but TCP, UDP and SCTP, by number: what "all traffic" keeps once ports of those
# three are taken out of it (a Contrail service names one protocol).
OTHER_PROTOCOLS = tuple(n for n in range(256) if n not in (6, 17, 132))
TIER_SEQUENCES = MappingProxyType({ADMIN: ("0.1", "0.2"), BASELINE: ("2.1", "2.2")})  # deny policy, own policies


def deny_policy_name(cluster: str, tier: str) -> str:
    return f"{cluster}--{tier.lower()}-deny"


def cnp_policy_name(cluster: str, name: str) -> str:
    return f"{cluster}--cnp-{name}"


def cnp_sequence(tier: str, priority: int, policy_name: str) -> str:
    """`0.2<pppp><8 digits>` (Admin) or `2.2...` (Baseline): the priority in 4 digits, then the first
    8 decimal digits of int(sha1(policy name)) as SPEC 5 takes 12."""
    digits = str(int.from_bytes(hashlib.sha1(policy_name.encode("utf-8")).digest(), "big"))[:8]
    return f"{TIER_SEQUENCES[tier][1]}{priority:04d}{digits}"


@dataclass(frozen=True)
class CnpStatus:
    """What one ClusterNetworkPolicy emitted, for the introspect page and the reconciler."""

    firewall_policy: Optional[FqName]  # None: rejected whole
    rules: Tuple[FqName, ...] = ()  # its Accept rules, in its own policy
    deny_rules: Tuple[FqName, ...] = ()  # in the tier's deny policy
    errors: Tuple[str, ...] = ()


@dataclass
class TierRendering:
    """Everything one tier contributes. `objects` are owned by the tier (rules, policies, its own
    address groups); tags and `<cidr>` address groups are shared and reference-counted by the caller."""

    objects: Dict[str, Dict[FqName, Body]] = field(default_factory=dict)
    aps_refs: Dict[FqName, str] = field(default_factory=dict)  # firewall policy -> APS sequence
    tags: Dict[str, TagOrigin] = field(default_factory=dict)
    scoped_labels: Dict[ScopedLabel, None] = field(default_factory=dict)
    address_groups: Dict[FqName, IpBlock] = field(default_factory=dict)
    statuses: Dict[str, CnpStatus] = field(default_factory=dict)
    pod_dependent: bool = False  # named ports or pod IPs were read: re-render when pods change
    rule_count: int = 0


@dataclass
class _Sink:
    """What the endpoints of one rule's pieces reference (an EndpointSink), kept with its memo."""

    tags: Dict[str, TagOrigin] = field(default_factory=dict)
    scoped_labels: Dict[ScopedLabel, None] = field(default_factory=dict)
    address_groups: Dict[FqName, IpBlock] = field(default_factory=dict)
    owned_groups: Dict[FqName, Body] = field(default_factory=dict)  # address groups that take out pods
    pod_dependent: bool = False


class _Memo:
    """Results of the last two renders of a tier, by a key that determines them: a render reuses
    what the previous one made for unchanged rules, and keeps only what it used itself."""

    def __init__(self) -> None:
        self._previous: Dict[Any, Any] = {}
        self._current: Dict[Any, Any] = {}

    def get(self, key: Any) -> Any:
        found = self._current.get(key)
        if found is None:
            found = self._previous.get(key)
            if found is not None:
                self._current[key] = found
        return found

    def put(self, key: Any, value: Any) -> None:
        self._current[key] = value

    def turn(self) -> None:
        self._previous, self._current = self._current, {}


@dataclass
class _PolicyWork:
    accept_rules: List[Tuple[FqName, Body]] = field(default_factory=list)
    deny_rules: List[FqName] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)


class TierRenderer:
    """Renders the tiers of one cluster; holds only the shared NetworkPolicy renderer."""

    def __init__(self, renderer: PolicyRenderer) -> None:
        self.renderer = renderer
        self.bodies: BodyFactory = renderer.bodies
        self.cluster = renderer.cluster
        self._memos: Dict[str, _Memo] = {}

    def render(self, tier: str, policies: Sequence[ParsedCnp], view: PodView) -> TierRendering:
        out = TierRendering(objects={"firewall-rule": {}, "firewall-policy": {}, "address-group": {}})
        valid = sorted((p for p in policies if p.subject is not None), key=lambda p: p.order)
        for policy in policies:
            if policy.subject is None:
                out.statuses[policy.name] = CnpStatus(None, errors=policy.errors)
        if not valid:
            return out
        work = {p.name: _PolicyWork(errors=list(p.errors)) for p in valid}
        deny_refs: List[Body] = []
        memo = self._memos.setdefault(tier, _Memo())
        memo.turn()
        for direction in ("ingress", "egress"):
            self._direction(tier, direction, valid, view, work, deny_refs, out)
        deny_fq = global_fq_name(deny_policy_name(self.cluster, tier))
        out.objects["firewall-policy"][deny_fq] = self.bodies.firewall_policy(deny_fq, deny_refs)
        out.aps_refs[deny_fq] = TIER_SEQUENCES[tier][0]
        for policy in valid:
            done = work[policy.name]
            fq_name = global_fq_name(shorten(cnp_policy_name(self.cluster, policy.name)))
            body = self.bodies.network_policy(fq_name, [rule for _, rule in done.accept_rules], "", policy.name,
                                              policy.uid, policy.spec_sha256)
            out.objects["firewall-policy"][fq_name] = body
            out.aps_refs[fq_name] = cnp_sequence(tier, policy.priority, fq_name[1])
            out.statuses[policy.name] = CnpStatus(fq_name, tuple(fq for fq, _ in done.accept_rules),
                                                  tuple(done.deny_rules), tuple(dict.fromkeys(done.errors)))
        return out

    def _direction(self, tier: str, direction: str, policies: Sequence[ParsedCnp], view: PodView,
                   work: Mapping[str, _PolicyWork], deny_refs: List[Body], out: TierRendering) -> None:
        decided: List[Box] = []  # Accept and Pass boxes so far: a Deny is emitted minus these
        passed: List[Box] = []  # Pass boxes so far: an Accept is emitted minus these
        for policy in policies:
            own = work[policy.name]
            for rule in policy.rules:
                if rule.direction != direction:
                    continue
                boxes = self._boxes(policy, rule, view, own.errors, out)
                before = passed if rule.action == ACCEPT else decided
                try:
                    pieces = [(b, self._subtracted(tier, box, before)) for b, box in boxes]
                    if sum(self._service_count(piece.ports) for _, found in pieces for piece in found) > MAX_RULES:
                        raise TooManyPieces()
                except TooManyPieces:
                    pieces = self._too_many(rule, boxes, own.errors)
                if rule.action == DENY:
                    memo = self._memos[tier]
                    for fq_name, body in self._rules(policy, rule, pieces, DENY_ACTION, tier, view, out):
                        ref = memo.get((fq_name, len(deny_refs)))
                        if ref is None:
                            ref = sequenced_ref(fq_name, rule_sequence(len(deny_refs)))
                            memo.put((fq_name, len(deny_refs)), ref)
                        deny_refs.append(ref)
                        own.deny_rules.append(fq_name)
                elif rule.action == ACCEPT:
                    own.accept_rules.extend(self._rules(policy, rule, pieces, PASS_ACTION, tier, view, out))
                    if pieces:  # an Accept failed closed matches nothing: what follows keeps its traffic
                        decided.extend(box for _, box in boxes)
                else:
                    assert rule.action == PASS
                    decided.extend(box for _, box in boxes)
                    passed.extend(box for _, box in boxes)

    def _subtracted(self, tier: str, box: Box, before: Sequence[Box]) -> List[Box]:
        """`box` minus `before`, reused from the previous render when the boxes of `before` that
        can meet it (most are about other pods) are the same."""
        relevant = tuple(other for other in before if not boxes_apart(box, other))
        memo = self._memos[tier]
        found: Optional[List[Box]] = memo.get((box, relevant))
        if found is None:
            found = subtract_rule(box, relevant, MAX_RULES)
            memo.put((box, relevant), found)
        return found

    @staticmethod
    def _too_many(rule: CnpRule, boxes: List[Tuple[int, Box]], errors: List[str]) -> List[Tuple[int, List[Box]]]:
        where = f"spec.{rule.direction}[{rule.index}]"
        if rule.action == DENY:
            errors.append(f"{where}: minus the rules before it, this Deny makes over {MAX_RULES} firewall"
                          " rules; it is enforced whole, also on traffic they accept or pass (fail closed)")
            return [(b, [box]) for b, box in boxes]
        errors.append(f"{where}: minus the Pass rules before it, this Accept makes over {MAX_RULES} firewall"
                      " rules; it fails closed: it matches nothing")
        return []

    @staticmethod
    def _service_count(ports: PortSet) -> int:
        """How many firewall rules (one service each) a piece with these ports makes."""
        if ports == ALL_PORTS:
            return 1
        return len(ports.ranges) + (len(OTHER_PROTOCOLS) if ports.other else 0)

    # --- boxes --------------------------------------------------------------------------------

    def _boxes(self, policy: ParsedCnp, rule: CnpRule, view: PodView, errors: List[str],
               out: TierRendering) -> List[Tuple[int, Box]]:
        """The rule's boxes, numbered: per peer, its numbered ports, then each named port number."""
        assert policy.subject is not None
        subject = pods_of(policy.subject)
        peers: List[Peer] = [NetSet(EVERY_NETWORK)] if rule.peers is None else [
            NetSet(normal_networks(peer.cidrs)) if isinstance(peer, Networks) else pods_of(peer)
            for peer in rule.peers]
        numbered: Optional[PortSet] = ALL_PORTS if rule.ports is None else (
            port_set(rule.ports) if rule.ports else None)
        boxes: List[Box] = []
        for peer in peers:
            if numbered is not None:
                boxes.append(Box(subject, peer, numbered))
            for name in rule.named_ports:
                out.pod_dependent = True
                boxes.extend(self._named_port_boxes(rule, subject, peer, name, view, errors))
        return list(enumerate(boxes))

    def _named_port_boxes(self, rule: CnpRule, subject: PodSet, peer: Peer, name: str, view: PodView,
                          errors: List[str]) -> List[Box]:
        """One box per (protocol, number) the name resolves to on the destination pods (SPEC 4)."""
        destination = subject if rule.direction == INGRESS else peer
        assert isinstance(destination, PodSet)  # parse_cnp refuses named ports towards networks
        found = sorted({(protocol, pod.named_ports[(name, protocol)])
                        for pod in view.pods_in(destination) for protocol in PROTOCOLS
                        if (name, protocol) in pod.named_ports})
        if not found:
            errors.append(f"spec.{rule.direction}[{rule.index}]: named port {name!r} resolves on no"
                          " destination pod; that part of the rule matches nothing")
        boxes = []
        for protocol, number in found:
            narrowed = conjoin(destination, (True, PortAtom(name, protocol, number)))
            if narrowed is None:
                continue
            ports = port_set([(protocol.lower(), number, number)])
            boxes.append(Box(narrowed, peer, ports) if rule.direction == INGRESS else Box(subject, narrowed, ports))
        return boxes

    # --- objects ------------------------------------------------------------------------------

    def _rules(self, policy: ParsedCnp, rule: CnpRule, pieces: List[Tuple[int, List[Box]]], action: str,
               tier: str, view: PodView, out: TierRendering) -> List[Tuple[FqName, Body]]:
        """The firewall rules of a rule's pieces, reused from the previous render when the pieces
        are the same (unless an address group takes out pods, whose IPs may have moved)."""
        stem = f"{cnp_policy_name(self.cluster, policy.name)}-{rule.direction}-{rule.index}"
        key = (stem, action, tuple((b, tuple(boxes)) for b, boxes in pieces))
        memo = self._memos[tier]
        found = memo.get(key)
        if found is None:
            found = self._made_rules(stem, rule.direction, pieces, action, tier, view)
            if not found[1].pod_dependent:
                memo.put(key, found)
        result, sink = found
        out.tags.update(sink.tags)
        out.scoped_labels.update(sink.scoped_labels)
        out.address_groups.update(sink.address_groups)
        out.objects["address-group"].update(sink.owned_groups)
        out.pod_dependent |= sink.pod_dependent
        out.objects["firewall-rule"].update(result)
        out.rule_count += len(result)
        return result

    def _made_rules(self, stem: str, direction: str, pieces: List[Tuple[int, List[Box]]], action: str,
                    tier: str, view: PodView) -> Tuple[List[Tuple[FqName, Body]], _Sink]:
        sink = _Sink()
        result = []
        for b, boxes in pieces:
            for k, box in enumerate(boxes):
                subject = self._pods_endpoint(box.subject, sink)
                peer = self._peer_endpoint(box.peer, tier, view, sink)
                first, second = (peer, subject) if direction == INGRESS else (subject, peer)
                for v, service in enumerate(self._services(box.ports)):
                    fq_name = global_fq_name(shorten(f"{stem}-{b}-{k}-{v}"))
                    result.append((fq_name, self.bodies.rule(fq_name, action, service, first, second)))
        return result, sink

    def _services(self, ports: PortSet) -> List[Body]:
        if ports == ALL_PORTS:
            return [self.bodies.service(ANY_SERVICE)]
        services = [self.bodies.service(r) for r in ports.ranges]
        if ports.other:
            services.extend(self.bodies.service((str(n), 0, 65535)) for n in OTHER_PROTOCOLS)
        return services

    def _pods_endpoint(self, pods: PodSet, out: _Sink) -> Body:
        scope = pods.single_scope()
        if scope is not None:
            return self.renderer.scope_endpoint(scope, "", out)
        definition = SelectorDef(pods)
        tag = self.renderer.selector_tag(definition)
        out.tags[tag] = definition
        return {"tags": [tag]}

    def _peer_endpoint(self, peer: Peer, tier: str, view: PodView, out: _Sink) -> Body:
        if isinstance(peer, PodSet):
            return self._pods_endpoint(peer, out)
        if peer.is_everything:
            return self.bodies.any_endpoint
        if not peer.excluded and len(peer.cidrs) == 1:
            (cidr,) = peer.cidrs
            name = cidr_text(cidr)
            fq_name = global_fq_name(name)
            out.address_groups[fq_name] = IpBlock(cidr, (), (cidr,), name, name)
            return address_group_endpoint(name)
        holes: List[Network] = []
        for excluded in peer.excluded:
            out.pod_dependent = True
            # A host-network pod's IP is its node's, which no pod peer stands for: it stays in.
            holes.extend(ipaddress.ip_network(pod.ip) for pod in view.pods_in(excluded)
                         if pod.ip and not pod.host_network)
        prefixes = [p for cidr in peer.cidrs
                    for p in subtract(cidr, tuple(h for h in holes if h.version == cidr.version and h.subnet_of(cidr)))]  # type: ignore[arg-type]
        key = {"networks": [str(c) for c in peer.cidrs],
               "exceptPods": sorted((e.hash_input() for e in peer.excluded), key=canonical_json)}
        name = f"{self.cluster}--{tier.lower()}-net-{sha1_of_json(key)[:12]}"
        fq_name = global_fq_name(name)
        out.owned_groups[fq_name] = self.bodies.address_group(fq_name, normal_networks(prefixes))
        return address_group_endpoint(name)


def status_errors(statuses: Mapping[str, CnpStatus]) -> List[Dict[str, str]]:
    """The tier's errors in the translator's error form (SPEC 8)."""
    return [{"kind": KIND, "namespace": "", "name": name, "reason": reason}
            for name, status in sorted(statuses.items()) for reason in status.errors]
