"""Reading ClusterNetworkPolicy manifests into ParsedCnp values (SPEC 11 and 13).

Bad input never raises past `parse_cnp` except for an object that cannot be identified (no valid
name): every other problem is reported in `errors` and fails closed as the API says for peers it
does not know: an Accept rule matches nothing, a Deny or Pass rule denies all traffic of its
subject in its direction. A policy whose tier, priority or subject cannot be read is rejected whole
(it renders nothing): without them there is no place in the APS and no pod it applies to.
"""
from __future__ import annotations

from types import MappingProxyType
from typing import Any, List, Mapping, Optional, Tuple

from ..canonical import spec_digest
from ..cidr import network_key, parse_cidr
from ..inputs import identity
from ..match_logging import annotation_of, logged_actions
from ..model import PodScope
from ..naming import EGRESS, INGRESS
from ..ports import MAX_PORT
from ..selectors import LabelSelector, parse_selector
from ..shapes import (CNP, CNP_EGRESS_RULE, CNP_INGRESS_RULE, CNP_PEER, CNP_PROTOCOL, CNP_SPEC,
                      CNP_SUBJECT, as_object, conform, conform_field, unknown_fields)
from ..validation import InvalidInput, object_name_problem, port_name_problem
from .model import ACCEPT, ACTIONS, DENY, MAX_PRIORITY, TIERS, CnpPeer, CnpRule, Networks, ParsedCnp, PortRange

MAX_ITEMS = 25  # rules per direction, peers per rule, protocols per rule, networks per peer
MAX_RULE_NAME = 100
_PEER_FIELD = MappingProxyType({INGRESS: "from", EGRESS: "to"})
_RULE_SHAPE = MappingProxyType({INGRESS: CNP_INGRESS_RULE, EGRESS: CNP_EGRESS_RULE})
_UNENFORCEABLE = ("nodes", "domainNames")


def cnp_key(manifest: Any) -> str:
    """The name of a ClusterNetworkPolicy manifest as far as it can be read, for error reports."""
    metadata = manifest.get("metadata") if isinstance(manifest, dict) else None
    name = metadata.get("name") if isinstance(metadata, dict) else None
    return name if isinstance(name, str) else ""


def _namespaced_pods(raw: Any, path: str) -> PodScope:
    body = as_object(raw, path)
    if body.get("podSelector") is None:
        raise InvalidInput(f"{path}.podSelector: required")
    namespaces = parse_selector(body.get("namespaceSelector"), f"{path}.namespaceSelector")
    return PodScope(namespace_selector=namespaces, pod_selector=parse_selector(body["podSelector"], f"{path}.podSelector"))


def _one_field(body: Mapping[str, Any], path: str, what: str) -> str:
    """The one field set in `body` (the API's MinProperties=1, MaxProperties=1)."""
    present = sorted(k for k, v in body.items() if v is not None)
    if len(present) != 1:
        raise InvalidInput(f"{path}: {what} must set exactly one field, not {present or 'none'}")
    return present[0]


def parse_subject(raw: Any) -> PodScope:
    body = conform(raw, CNP_SUBJECT, "spec.subject") if raw is not None else {}
    kind = _one_field(body, "spec.subject", "a subject")
    if kind == "namespaces":
        selector: LabelSelector = parse_selector(body["namespaces"], "spec.subject.namespaces")
        return PodScope(namespace_selector=selector)
    return _namespaced_pods(body["pods"], "spec.subject.pods")


def _networks(raw: List[Any], path: str) -> Networks:
    if not raw or len(raw) > MAX_ITEMS:
        raise InvalidInput(f"{path}: must list 1-{MAX_ITEMS} CIDRs")
    cidrs = {parse_cidr(text, f"{path}[{i}]") for i, text in enumerate(raw)}
    return Networks(tuple(sorted(cidrs, key=network_key)))


def parse_peer(raw: Any, path: str) -> CnpPeer:
    """One peer; raises InvalidInput for a peer that is invalid or cannot be enforced."""
    body = conform(raw, CNP_PEER, path) if raw is not None else {}
    kind = _one_field(body, path, "a peer")
    if kind in _UNENFORCEABLE:
        raise InvalidInput(f"{path}.{kind}: peers of this kind cannot be enforced by kube-manager")
    if kind == "networks":
        return _networks(body["networks"], f"{path}.networks")
    if kind == "namespaces":
        return PodScope(namespace_selector=parse_selector(body["namespaces"], f"{path}.namespaces"))
    return _namespaced_pods(body["pods"], f"{path}.pods")


def parse_protocol(raw: Any, path: str) -> Tuple[Optional[PortRange], Optional[str]]:
    """(numbered range, None) or (None, named port) of one `protocols` entry."""
    body = conform(raw, CNP_PROTOCOL, path) if raw is not None else {}
    kind = _one_field(body, path, "a protocol")
    if kind == "destinationNamedPort":
        name = body[kind]
        problem = port_name_problem(name)
        if problem:
            raise InvalidInput(f"{path}.destinationNamedPort: {problem}")
        return None, name
    port = (body[kind] or {}).get("destinationPort")
    where = f"{path}.{kind}.destinationPort"
    if port is None:
        raise InvalidInput(f"{where}: required")
    chosen = _one_field(port, where, "a port")
    if chosen == "number":
        start = end = port["number"]
    else:
        start, end = port["range"].get("start"), port["range"].get("end")
        if start is None or end is None or start >= end:
            raise InvalidInput(f"{where}.range: start and end are required, start below end")
    for value in (start, end):
        if not 1 <= value <= MAX_PORT:
            raise InvalidInput(f"{where}: {value} must be between 1 and {MAX_PORT}")
    return (kind, start, end), None


def _parse_rule(raw: Any, direction: str, index: int) -> CnpRule:
    """A rule as written; raises InvalidInput (with the action when it could be read) otherwise."""
    path = f"spec.{direction}[{index}]"
    body = conform(raw, _RULE_SHAPE[direction], path) if raw is not None else {}
    action, name = body.get("action"), body.get("name", "")
    if action not in ACTIONS:
        raise InvalidInput(f"{path}.action: {action!r} is not one of {', '.join(ACTIONS)}")
    if len(name) > MAX_RULE_NAME:
        raise InvalidInput(f"{path}.name: longer than {MAX_RULE_NAME} characters")
    field = _PEER_FIELD[direction]
    raw_peers = body.get(field) or []
    if not raw_peers or len(raw_peers) > MAX_ITEMS:
        raise InvalidInput(f"{path}.{field}: must list 1-{MAX_ITEMS} peers")
    peers = tuple(parse_peer(peer, f"{path}.{field}[{p}]") for p, peer in enumerate(raw_peers))
    raw_protocols = body.get("protocols")
    if raw_protocols is None:
        return CnpRule(direction, index, action, peers, None, (), name)
    if not raw_protocols or len(raw_protocols) > MAX_ITEMS:
        raise InvalidInput(f"{path}.protocols: must list 1-{MAX_ITEMS} protocols when given")
    ranges: List[PortRange] = []
    named: List[str] = []
    for i, entry in enumerate(raw_protocols):
        numbered, port_name = parse_protocol(entry, f"{path}.protocols[{i}]")
        if numbered is not None:
            ranges.append(numbered)
        elif port_name not in named:
            named.append(port_name)  # type: ignore[arg-type]
    if named and any(isinstance(peer, Networks) for peer in peers):
        raise InvalidInput(f"{path}: a networks peer cannot be combined with destinationNamedPort")
    return CnpRule(direction, index, action, peers, tuple(ranges), tuple(named), name)


def _rule_or_fail_closed(raw: Any, direction: str, index: int, errors: List[str]) -> Optional[CnpRule]:
    """The rule, or its fail-closed form: None for an Accept, a Deny of everything otherwise (also
    when the action itself cannot be read)."""
    try:
        return _parse_rule(raw, direction, index)
    except InvalidInput as exc:
        action = raw.get("action") if isinstance(raw, dict) else None
        if action == ACCEPT:
            errors.append(f"{exc}; the Accept rule fails closed: it matches nothing")
            return None
        errors.append(f"{exc}; the rule fails closed: it denies all {direction} traffic of the subject")
        return CnpRule(direction, index, DENY, None, None, (), "")


def _rules(spec: Mapping[str, Any], errors: List[str]) -> Tuple[CnpRule, ...]:
    rules: List[CnpRule] = []
    for direction in (INGRESS, EGRESS):
        try:
            entries = conform_field(spec, CNP_SPEC, direction, "spec") or []
        except InvalidInput as exc:  # the list itself unreadable: deny the whole direction
            errors.append(f"{exc}; the subject's {direction} traffic is denied (fail closed)")
            rules.append(CnpRule(direction, 0, DENY, None))
            continue
        if len(entries) > MAX_ITEMS:
            errors.append(f"spec.{direction}: more than {MAX_ITEMS} rules (the API server refuses"
                          " this); every rule is still enforced")
        for index, raw in enumerate(entries):
            rule = _rule_or_fail_closed(raw, direction, index, errors)
            if rule is not None:
                rules.append(rule)
    return tuple(rules)


def parse_cnp(manifest: Any) -> ParsedCnp:
    """Validate one ClusterNetworkPolicy manifest. Raises InvalidInput only when it has no valid
    name; everything else is reported in `errors`."""
    _, metadata, _, uid = identity(manifest, CNP)
    name = metadata.get("name")
    problem = object_name_problem(name)
    if problem:
        raise InvalidInput(f"metadata.name: {problem}")
    assert isinstance(name, str)
    raw_spec = manifest.get("spec")
    digest = spec_digest(raw_spec)
    logged, logging_problem = logged_actions(annotation_of(manifest), "")
    errors: List[str] = [logging_problem] if logging_problem else []
    try:
        spec = as_object(raw_spec, "spec")
        tier = conform_field(spec, CNP_SPEC, "tier", "spec")
        if tier not in TIERS:
            raise InvalidInput(f"spec.tier: {tier!r} is not one of {', '.join(TIERS)}")
        priority = conform_field(spec, CNP_SPEC, "priority", "spec")
        if priority is None or not 0 <= priority <= MAX_PRIORITY:
            raise InvalidInput(f"spec.priority: {priority!r} must be an integer from 0 to {MAX_PRIORITY}")
        subject = parse_subject(spec.get("subject"))
    except InvalidInput as exc:
        return ParsedCnp(name, uid, digest, "", 0, None, (), (f"{exc}; the policy is rejected whole", *errors))
    unknown = sorted(str(k) for k in spec if k not in CNP_SPEC.fields)
    if unknown:
        errors.append(f"spec: {unknown_fields(unknown, CNP_SPEC.fields)}; ignored")
    rules = _rules(spec, errors)
    return ParsedCnp(name, uid, digest, tier, priority, subject, rules, tuple(errors), logged)

