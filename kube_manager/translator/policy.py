"""Validation of NetworkPolicy manifests into ParsedPolicy values (SPEC 4 and 11).

Rejection is as narrow as possible: a bad peer or port drops only itself, a bad block (unknown
field, unreadable `from`/`ports`) drops only that block, and only a bad own `podSelector` or
`policyTypes` rejects the whole policy. Indices are manifest positions, rejected entries included,
so fixing one entry renames nothing.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, List, Mapping, Optional, Tuple

from .canonical import spec_digest
from .cidr import parse_ip_block
from .model import UNBOUND, Block, ParsedPolicy, Peer, PodScope, PolicySpec
from .naming import EGRESS, INGRESS
from .parsecache import ParseCache, content_key
from .ports import ANY_SERVICE, PortSpec, Service, parse_port
from .selectors import parse_selector
from .inputs import identity
from .shapes import EGRESS_RULE, INGRESS_RULE, PEER, POLICY, POLICY_SPEC, as_object, conform, conform_field, unknown_fields
from .validation import InvalidInput, metadata_problem

_POLICY_TYPES = MappingProxyType({"Ingress": INGRESS, "Egress": EGRESS})
_PEER_FIELD = MappingProxyType({INGRESS: "from", EGRESS: "to"})
_RULE_SHAPE = MappingProxyType({INGRESS: INGRESS_RULE, EGRESS: EGRESS_RULE})
# What _policy_types makes of the lists nearly every policy gives, found without working it out.
_USUAL_POLICY_TYPES = MappingProxyType({("Ingress",): (INGRESS,), ("Egress",): (EGRESS,),
                                        ("Ingress", "Egress"): (INGRESS, EGRESS),
                                        ("Egress", "Ingress"): (INGRESS, EGRESS)})


def parse_peer(raw: Any, namespace: str, path: str, cache: ParseCache) -> Peer:
    """A NetworkPolicyPeer: exactly an ipBlock, or a pod and/or namespace selector."""
    body = conform(raw, PEER, path) if raw is not None else {}
    raw_pods, raw_namespaces = body.get("podSelector"), body.get("namespaceSelector")
    pods = None if raw_pods is None else cache.get(parse_selector, raw_pods, f"{path}.podSelector")
    namespaces = None if raw_namespaces is None else cache.get(parse_selector, raw_namespaces,
                                                               f"{path}.namespaceSelector")
    if body.get("ipBlock") is not None:
        if pods is not None or namespaces is not None:
            raise InvalidInput(f"{path}: may not specify both ipBlock and another peer")
        return cache.get(parse_ip_block, body["ipBlock"], f"{path}.ipBlock")
    if pods is None and namespaces is None:
        raise InvalidInput(f"{path}: must specify a peer (podSelector, namespaceSelector or ipBlock)")
    if namespaces is None:
        return PodScope(namespace=namespace, pod_selector=pods)
    return PodScope(namespace_selector=namespaces, pod_selector=pods)


def _parse_block(raw: Any, direction: str, index: int, namespace: str, errors: List[str],
                 cache: ParseCache) -> Optional[Block]:
    path = f"spec.{direction}[{index}]"
    peer_field = _PEER_FIELD[direction]
    try:
        body = conform(raw, _RULE_SHAPE[direction], path) if raw is not None else {}
    except InvalidInput as exc:
        errors.append(f"{exc}; the block is ignored")
        return None
    raw_peers, raw_ports = body.get(peer_field), body.get("ports")
    peers: Optional[Tuple[Tuple[int, Peer], ...]] = None
    if raw_peers:
        kept_peers = []
        for p, entry in enumerate(raw_peers):
            try:
                kept_peers.append((p, parse_peer(entry, namespace, f"{path}.{peer_field}[{p}]", cache)))
            except InvalidInput as exc:
                errors.append(f"{exc}; the peer is ignored")
        peers = tuple(kept_peers)
    ports: Optional[Tuple[Tuple[int, PortSpec], ...]] = None
    if raw_ports:
        kept_ports = []
        for i, entry in enumerate(raw_ports):
            try:
                kept_ports.append((i, cache.get(parse_port, entry, f"{path}.ports[{i}]")))
            except InvalidInput as exc:
                errors.append(f"{exc}; the port is ignored")
        ports = tuple(kept_ports)
    fixed: Optional[Tuple[Service, ...]] = None
    if ports is None:
        fixed = (ANY_SERVICE,)
    elif all(port.name is None for _, port in ports):
        fixed = tuple(port.service() for _, port in ports)
    return Block(direction, index, peers, ports, fixed)


def _policy_types(spec: Mapping[str, Any]) -> Tuple[str, ...]:
    entries = conform_field(spec, POLICY_SPEC, "policyTypes", "spec") or ()
    usual = _USUAL_POLICY_TYPES.get(tuple(entries))
    if usual is not None:
        return usual
    if len(entries) > 2:
        raise InvalidInput("spec.policyTypes: may not list more than two policy types")
    for i, entry in enumerate(entries):
        if entry not in _POLICY_TYPES:
            raise InvalidInput(f"spec.policyTypes[{i}]: {entry!r} is not Ingress or Egress")
    given = {_POLICY_TYPES[e] for e in entries}
    return tuple(d for d in (INGRESS, EGRESS) if d in given)


def _absent_effect(spec: Mapping[str, Any], types: Tuple[str, ...]) -> str:
    """What the policy does without the fields it lacks, said beside an unknown field (most often
    the misspelling of one of them), so that a typo's consequence is not left to be guessed."""
    effects = []
    if "podSelector" not in spec:
        effects.append("without spec.podSelector it selects every pod of its namespace")
    for direction, field_name, traffic in ((INGRESS, "ingress", "no ingress traffic to"),
                                           (EGRESS, "egress", "no egress traffic from")):
        if direction in types and field_name not in spec:
            effects.append(f"without spec.{field_name} it allows {traffic} the pods it selects")
    return f"; {'; '.join(effects)}" if effects else ""


def parse_spec(raw_spec: Any, digest: str, cache: ParseCache) -> PolicySpec:
    """Validate a NetworkPolicy spec on its own: peers of "the policy's namespace" are left unbound."""
    errors: List[str] = []
    try:
        spec = as_object(raw_spec, "spec")  # each field on its own: a bad ingress list is no reason
        selection = PodScope(UNBOUND, None, cache.get(parse_selector, spec.get("podSelector"), "spec.podSelector"))
        types = _policy_types(spec)
    except InvalidInput as exc:
        return PolicySpec(digest, None, errors=(f"{exc}; the policy is rejected whole",))
    unknown = [] if POLICY_SPEC.fields.keys() >= spec.keys() else sorted(
        str(k) for k in spec if k not in POLICY_SPEC.fields)  # (sorted only when one is unknown)
    raw_blocks = {}
    for direction in (INGRESS, EGRESS):
        try:
            raw_blocks[direction] = conform_field(spec, POLICY_SPEC, direction, "spec") or []
        except InvalidInput as exc:
            errors.append(f"{exc}; no {direction} rule is written")
            raw_blocks[direction] = None
    if not types:
        # Defaulted as the API server does; an unreadable egress list counts as given (fail closed).
        egress = raw_blocks[EGRESS]
        types = (INGRESS, EGRESS) if egress is None or egress else (INGRESS,)
    if unknown:  # (after the defaults: what an absent field means depends on them)
        errors.append(f"spec: {unknown_fields(unknown, POLICY_SPEC.fields)}; ignored{_absent_effect(spec, types)}")
    blocks = []
    for direction in types:
        for b, raw in enumerate(raw_blocks[direction] or ()):
            block, block_errors = cache.memo("block", (direction, b, content_key(raw)),
                                             lambda: _memo_block(raw, direction, b, cache))
            errors.extend(block_errors)
            if block is not None:
                blocks.append(block)
    return PolicySpec(digest, selection, types, tuple(blocks), tuple(errors))


def _memo_block(raw: Any, direction: str, index: int, cache: ParseCache) -> Tuple[Optional[Block], Tuple[str, ...]]:
    errors: List[str] = []
    block = _parse_block(raw, direction, index, UNBOUND, errors, cache)
    return block, tuple(errors)


def parse_policy(manifest: Any, cache: Optional[ParseCache] = None) -> ParsedPolicy:
    """Validate one NetworkPolicy manifest.

    Raises InvalidInput only when the object cannot be identified (bad metadata); every problem
    of the spec is reported in `errors` instead, as narrowly as SPEC 11 says. A spec is validated
    once per distinct content (parsecache.content_key, which tells "1" from 1 and dates from strings), however
    many namespaces repeat it, and shared by all of them.
    """
    _, metadata, namespace, uid = identity(manifest, POLICY)
    name = metadata.get("name")
    cache = cache if cache is not None else ParseCache()
    problem = metadata_problem(namespace, name, cache.namespaces)
    if problem:
        raise InvalidInput(problem)
    assert isinstance(name, str)  # the check above refuses anything else
    raw_spec = manifest.get("spec")
    spec = cache.memo("spec", content_key(raw_spec),
                      lambda: parse_spec(raw_spec, spec_digest(raw_spec), cache))
    return ParsedPolicy(namespace, name, uid, spec)
