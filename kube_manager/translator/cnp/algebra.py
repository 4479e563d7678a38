"""Exact set algebra of ClusterNetworkPolicy rules (SPEC 13).

Contrail evaluates every Deny of a tier before any Accept (they live in the tier's deny policy, which
comes first), and has no action for Pass. So a rule is emitted minus the rules that precede it and
would have decided its traffic first. A rule is a union of *boxes*: subject pods x peer x ports. The
difference of two boxes splits the first into at most three disjoint boxes (the subject outside the
second's, else the peer outside the second's, else the ports outside the second's); a box empty by
construction is dropped.

Pod sets are conjunctions of literals over atoms (a selector scope, the pod's IP in some networks, a
named port resolving to one number); they stand in Contrail as plain tag endpoints when they are one
simple selector, else as selector tags over their canonical expression, evaluated by kube-manager.
Networks are address groups: CIDRs (CIDR subtraction as SPEC 3), less the IPs of the pods a
preceding pod rule took out. Ports are per-protocol ranges, plus "every other IP protocol".
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Tuple, Union

from ..canonical import canonical_json
from ..cidr import Network, network_key
from ..model import PodExpression, PodInfo, PodScope
from .portsets import PortSet, intersect_ports, port_set, subtract_ports

EVERY_NETWORK: Tuple[Network, ...] = (ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0"))


# --- atoms ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PodAtom:
    """The pods of a scope (a namespace selector and an optional pod selector)."""

    scope: PodScope

    @cached_property
    def labels(self) -> Tuple[Optional[Mapping[str, str]], Optional[Mapping[str, str]]]:
        """The namespace and pod labels the scope requires, each None when not a plain conjunction."""
        return _simple(self.scope.namespace_selector), _simple(self.scope.pod_selector)

    def holds(self, pod: PodInfo, namespace_labels: Mapping[str, str]) -> bool:
        return self.scope.matches(pod.namespace, pod.labels, namespace_labels)

    def hash_input(self) -> Any:
        return {"pods": self.scope.hash_input()}


@dataclass(frozen=True)
class AddressAtom:
    """The pods whose IP is in one of `cidrs`."""

    cidrs: Tuple[Network, ...]

    def holds(self, pod: PodInfo, namespace_labels: Mapping[str, str]) -> bool:
        address = pod.address
        return address is not None and any(address.version == c.version and address in c for c in self.cidrs)

    def hash_input(self) -> Any:
        return {"ip": [str(c) for c in self.cidrs]}


@dataclass(frozen=True)
class PortAtom:
    """The pods where the named port `name` (`protocol` as Kubernetes spells it) is `number`."""

    name: str
    protocol: str
    number: int

    def holds(self, pod: PodInfo, namespace_labels: Mapping[str, str]) -> bool:
        return pod.named_ports.get((self.name, self.protocol)) == self.number

    def hash_input(self) -> Any:
        return {"namedPort": [self.name, self.protocol, self.number]}


Atom = Union[PodAtom, AddressAtom, PortAtom]
Literal = Tuple[bool, Union[Atom, "PodSet"]]  # (positive, term)


def _simple(selector: Any) -> Optional[Mapping[str, str]]:
    """A selector's labels when it is a plain conjunction of them (None selector: no labels)."""
    if selector is None:
        return {}
    return dict(selector.simple_labels) if selector.is_simple else None


def _pod_subset(a: PodAtom, b: PodAtom) -> bool:
    """Every pod of `a` is in `b`, as far as the selectors show."""
    if a == b:
        return True
    return all(inner is not None and outer is not None and outer.items() <= inner.items()
               for inner, outer in zip(a.labels, b.labels))


def _pod_disjoint(a: PodAtom, b: PodAtom) -> bool:
    """No pod is in both, as far as the selectors show (a label required with two values)."""
    for x, y in zip(a.labels, b.labels):
        if x is not None and y is not None and any(k in y and y[k] != v for k, v in x.items()):
            return True
    return False


def _apart(a: PodSet, b: PodSet) -> bool:
    first = [term for positive, term in a.literals if positive and isinstance(term, PodAtom)]
    second = [term for positive, term in b.literals if positive and isinstance(term, PodAtom)]
    return any(_pod_disjoint(x, y) for x in first for y in second)


def _networks_and(a: Tuple[Network, ...], b: Tuple[Network, ...]) -> Tuple[Network, ...]:
    found = []
    for x in a:
        for y in b:
            if x.version == y.version and x.overlaps(y):
                found.append(x if x.subnet_of(y) else y)  # type: ignore[arg-type]
    return normal_networks(found)


def networks_minus(a: Tuple[Network, ...], b: Iterable[Network]) -> Tuple[Network, ...]:
    remaining = list(a)
    for excluded in b:
        kept: List[Network] = []
        for net in remaining:
            if net.version != excluded.version or not net.overlaps(excluded):
                kept.append(net)
            elif excluded.subnet_of(net) and net != excluded:  # type: ignore[arg-type]
                kept.extend(net.address_exclude(excluded))  # type: ignore[arg-type]
        remaining = kept
    return normal_networks(remaining)


def normal_networks(networks: Iterable[Network]) -> Tuple[Network, ...]:
    """Collapsed, in ascending address order (IPv4 first)."""
    result: List[Network] = []
    for version in (4, 6):
        group = [n for n in networks if n.version == version]
        result.extend(ipaddress.collapse_addresses(group))  # type: ignore[type-var]
    return tuple(sorted(result, key=network_key))


# --- pod sets ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class PodSet(PodExpression):
    """A conjunction of literals; a literal's term is an atom or (negated) another PodSet."""

    literals: FrozenSet[Literal]

    def hash_input(self) -> Any:
        terms = [["+" if positive else "-", term.hash_input()] for positive, term in self.literals]
        return {"and": sorted(terms, key=canonical_json)}

    def contains(self, pod: PodInfo, namespace_labels: Mapping[str, str]) -> bool:
        for positive, term in self.literals:
            inside = term.contains(pod, namespace_labels) if isinstance(term, PodSet) else term.holds(pod, namespace_labels)
            if inside != positive:
                return False
        return True

    def candidates(self) -> Optional[PodScope]:
        scopes = sorted((term.scope for positive, term in self.literals if positive and isinstance(term, PodAtom)),
                        key=lambda s: canonical_json(s.hash_input()))
        return scopes[0] if scopes else None

    def single_scope(self) -> Optional[PodScope]:
        """The scope when the set is exactly one selector scope (a plain endpoint), else None."""
        if len(self.literals) == 1:
            ((positive, term),) = self.literals
            if positive and isinstance(term, PodAtom):
                return term.scope
        return None

    def positives(self) -> List[Atom]:
        return [term for positive, term in self.literals if positive and not isinstance(term, PodSet)]


def pods_of(scope: PodScope) -> PodSet:
    return PodSet(frozenset({(True, PodAtom(scope))}))


def _address_span(pods: PodSet) -> Optional[Tuple[Network, ...]]:
    """Where the IPs of `pods` can be: the intersection of its positive address atoms (None: anywhere)."""
    span: Optional[Tuple[Network, ...]] = None
    for atom in pods.positives():
        if isinstance(atom, AddressAtom):
            span = atom.cidrs if span is None else _networks_and(span, atom.cidrs)
    return span


def _implies(pods: PodSet, literal: Literal) -> bool:
    """Every pod of `pods` satisfies `literal`, as far as construction shows."""
    if literal in pods.literals:
        return True
    positive, term = literal
    atoms = pods.positives()
    if isinstance(term, PodAtom):
        pod_atoms = [a for a in atoms if isinstance(a, PodAtom)]
        if positive:
            return any(_pod_subset(a, term) for a in pod_atoms)
        return any(_pod_disjoint(a, term) for a in pod_atoms)
    if isinstance(term, AddressAtom):
        span = _address_span(pods)
        if span is None:
            return False
        return not networks_minus(span, term.cidrs) if positive else not _networks_and(span, term.cidrs)
    if isinstance(term, PortAtom) and not positive:
        return any(isinstance(a, PortAtom) and a.name == term.name and a != term for a in atoms)
    return False


def conjoin(pods: PodSet, literal: Literal) -> Optional[PodSet]:
    """`pods` and `literal`; None when that is empty by construction."""
    if _implies(pods, literal):
        return pods
    if _implies(pods, (not literal[0], literal[1])):
        return None
    positive, term = literal
    if isinstance(term, PodSet):
        if positive:
            result: Optional[PodSet] = pods
            for inner in term.literals:
                result = conjoin(result, inner) if result is not None else None
            return result
        return subtract_pods(pods, term)
    literals = set(pods.literals)
    if positive and isinstance(term, PodAtom):  # a narrower scope makes a wider one redundant
        literals = {lit for lit in literals if not (lit[0] and isinstance(lit[1], PodAtom) and _pod_subset(term, lit[1]))}
    literals.add(literal)
    if positive:  # a negation the new literal implies is redundant: `x=1 and not x=2` is `x=1`
        literals = {lit for lit in literals if lit[0] or not _implies(PodSet(frozenset(literals - {lit})), lit)}
    result = PodSet(frozenset(literals))
    span = _address_span(result)
    if span is not None and not networks_minus(span, ()):
        return None
    return result


def intersect_pods(a: PodSet, b: PodSet) -> Optional[PodSet]:
    return conjoin(a, (True, b))


def subtract_pods(a: PodSet, b: PodSet) -> Optional[PodSet]:
    """`a` minus `b` as one conjunction; None when empty by construction."""
    if intersect_pods(a, b) is None:
        return a
    rest = [lit for lit in b.literals if not _implies(a, lit)]  # b's literals `a` already satisfies
    if not rest:
        return None
    if len(rest) == 1:
        positive, term = rest[0]
        return conjoin(a, (not positive, term))
    return PodSet(a.literals | {(False, PodSet(frozenset(rest)))})


# --- networks ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class NetSet:
    """IP addresses in `cidrs` except those of the pods in `excluded` (their IPs when rendered)."""

    cidrs: Tuple[Network, ...]
    excluded: FrozenSet[PodSet] = frozenset()

    @property
    def is_everything(self) -> bool:
        return self.cidrs == EVERY_NETWORK and not self.excluded


Peer = Union[PodSet, NetSet]


def _pods_in_networks(pods: PodSet, nets: NetSet) -> Optional[PodSet]:
    result = conjoin(pods, (True, AddressAtom(nets.cidrs))) if not nets.is_everything else pods
    for excluded in sorted(nets.excluded, key=lambda e: canonical_json(e.hash_input())):
        result = subtract_pods(result, excluded) if result is not None else None
    return result


def intersect_peers(a: Peer, b: Peer) -> Optional[Peer]:
    if isinstance(a, PodSet):
        return intersect_pods(a, b) if isinstance(b, PodSet) else _pods_in_networks(a, b)
    if isinstance(b, PodSet):
        return _pods_in_networks(b, a)
    cidrs = _networks_and(a.cidrs, b.cidrs)
    return NetSet(cidrs, a.excluded | b.excluded) if cidrs else None


def subtract_peers(a: Peer, b: Peer) -> List[Peer]:
    """`a` minus `b` as disjoint pieces (none when it is empty by construction)."""
    if isinstance(a, PodSet):
        if isinstance(b, PodSet):
            rest = subtract_pods(a, b)
            return [rest] if rest is not None else []
        pieces: List[Peer] = []
        outside = a if b.is_everything else conjoin(a, (False, AddressAtom(b.cidrs)))
        if outside is not None and not b.is_everything:
            pieces.append(outside)
        inside = a if b.is_everything else conjoin(a, (True, AddressAtom(b.cidrs)))
        for excluded in sorted(b.excluded, key=lambda e: canonical_json(e.hash_input())):
            if inside is None:
                break
            kept = intersect_pods(inside, excluded)
            if kept is not None:
                pieces.append(kept)
            inside = subtract_pods(inside, excluded)
        return pieces
    if isinstance(b, PodSet):
        if any(subtract_pods(b, e) is None for e in a.excluded):
            return [a]  # already taken out
        return [NetSet(a.cidrs, a.excluded | {b})]
    pieces = []
    remaining = networks_minus(a.cidrs, b.cidrs)
    if remaining:
        pieces.append(NetSet(remaining, a.excluded))
    overlap = _networks_and(a.cidrs, b.cidrs)
    for excluded in sorted(b.excluded - a.excluded, key=lambda e: canonical_json(e.hash_input())):
        kept = _pods_in_networks(excluded, NetSet(overlap, a.excluded)) if overlap else None
        if kept is not None:
            pieces.append(kept)
    return pieces


# --- boxes ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Box:
    """The traffic one piece of a rule matches: its subject's pods, the peer, the ports."""

    subject: PodSet
    peer: Peer
    ports: PortSet


def boxes_apart(a: Box, b: Box) -> bool:
    """A quick look for subjects (or pod peers) no pod can share: most pairs of rules of a tier
    are about different pods, and this spares them the full intersection."""
    if _apart(a.subject, b.subject):
        return True
    return isinstance(a.peer, PodSet) and isinstance(b.peer, PodSet) and _apart(a.peer, b.peer)


def subtract_box(a: Box, b: Box) -> List[Box]:
    """`a` minus `b` as disjoint boxes; `a` itself when they do not meet."""
    if boxes_apart(a, b):
        return [a]
    subject = intersect_pods(a.subject, b.subject)
    peer = intersect_peers(a.peer, b.peer) if subject is not None else None
    ports = intersect_ports(a.ports, b.ports) if peer is not None else None
    if subject is None or peer is None or ports is None or ports.is_empty:
        return [a]
    pieces: List[Box] = []
    rest_subject = subtract_pods(a.subject, b.subject)
    if rest_subject is not None:
        pieces.append(Box(rest_subject, a.peer, a.ports))
    pieces.extend(Box(subject, rest, a.ports) for rest in subtract_peers(a.peer, b.peer))
    rest_ports = subtract_ports(a.ports, b.ports)
    if not rest_ports.is_empty:
        pieces.append(Box(subject, peer, rest_ports))
    return pieces


class TooManyPieces(Exception):
    """A subtraction that would split one rule into more pieces than the limit."""


def subtract_all(boxes: Iterable[Box], before: Iterable[Box], limit: int) -> List[Box]:
    """`boxes` minus every box of `before`; raises TooManyPieces past `limit` pieces."""
    pieces = list(boxes)
    for other in before:
        pieces = [piece for box in pieces for piece in subtract_box(box, other)]
        if len(pieces) > limit:
            raise TooManyPieces()
    return pieces


def subtract_rule(box: Box, before: Iterable[Box], limit: int) -> List[Box]:
    """`box` minus every box of `before`, its ports taken apart for the subtraction: TCP, UDP and
    SCTP ranges on one side, every other protocol on the other. Only a rule without protocols takes
    traffic of other protocols, so that side usually stays one piece, where subtracting it with
    the ports would have repeated it (253 rules, one per protocol number) in every port piece.
    Pieces of equal subject and peer are joined again (both sides whole: "any")."""
    parts = [Box(box.subject, box.peer, ports) for ports in (PortSet(box.ports.ranges), PortSet((), box.ports.other))
             if not ports.is_empty]
    joined: Dict[Tuple[PodSet, Peer], PortSet] = {}
    for piece in subtract_all(parts, before, limit):
        key = (piece.subject, piece.peer)
        found = joined.get(key)
        joined[key] = piece.ports if found is None else port_set(found.ranges + piece.ports.ranges,
                                                                 found.other or piece.ports.other)
    return [Box(subject, peer, ports) for (subject, peer), ports in joined.items()]
