"""The compiled forms of the Contrail objects a flow is evaluated against (SPEC section 6).

A firewall rule compiles to its oriented entries (source -> destination, two for `<>`), each with
its endpoints, service, match tags and action; an address group to its prefixes; a ref's sequence
to a sort key. `flow.py` evaluates flows over them and `flow_index.py` files them; both read the
translator's objects only through these functions, so a surprise in a body (a form the translator
never writes) closes rather than opens, the same way everywhere.
"""
from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple, Union

log = logging.getLogger(__name__)

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
# A prefix as (IP version, host bits, network address as an int): an address belongs to it when
# `int(address) >> host_bits << host_bits` is the network address.
Prefix = Tuple[int, int, int]
# A ref's sequence as a sort key: (0, the number), or (1, 0) for an unreadable one (ordered last).
RefSequence = Tuple[int, Decimal]

FLOW_PROTOCOLS = ("tcp", "udp", "sctp")


class NumericProtocol(ValueError):
    """A rule names its protocol by number. Contrail reads `0` as `any` and tf-controller's config
    API refuses numbers; the translator never writes one, so evaluating such a rule (as anything)
    could only hide a bug."""


@dataclass(frozen=True, slots=True)
class Workload:
    """One end of a flow as Contrail sees it: the tags of its VMIs and its IP (an outside address
    has no tags)."""

    ip: Optional[IPAddress]
    tags: FrozenSet[str]


@dataclass(frozen=True, slots=True)
class RuleEndpoint:
    """A compiled rule endpoint. `kind` is any | tags | group | nothing."""

    kind: str
    tags: FrozenSet[str] = frozenset()
    group: str = ""  # the address group's name, for kind "group"


@dataclass(frozen=True, slots=True)
class RuleService:
    protocol: str  # a name, "any", or "" for a protocol no flow can have
    dst: Tuple[int, int]
    src: Tuple[int, int]

    def matches(self, port: int, protocol: str, src_port: Optional[int]) -> bool:
        if self.protocol != "any" and self.protocol != protocol:
            return False
        if not self.dst[0] <= port <= self.dst[1]:
            return False
        if src_port is None:  # an unknown (ephemeral) source port: only a full range matches
            return self.src == (0, 65535)
        return self.src[0] <= src_port <= self.src[1]


@dataclass(frozen=True, slots=True)
class RuleEntry:
    """One rule in one policy, oriented source -> destination (the index ranks it by its policy's
    place in the APS, then its own in the policy). Slotted: an index holds one per rule and
    orientation, so a per-instance dict would be most of its size."""

    policy: str
    rule: str
    rule_fq_name: Tuple[str, ...]
    source: RuleEndpoint
    destination: RuleEndpoint
    service: RuleService
    match_tags: Tuple[str, ...]
    action: str
    logged: bool


def sequence_of(ref: Mapping[str, Any], seen: Dict[str, RefSequence]) -> RefSequence:
    """A ref's numeric sequence as a sort key, unreadable ones last; refs are ordered by it, ties
    by their target's name (`target_name`). `seen` (text -> key) shares one key among the refs
    of one pass that spell it alike: the rules of every policy repeat the same few sequences."""
    text = str((ref.get("attr") or {}).get("sequence"))
    found = seen.get(text)
    if found is None:
        try:
            found = (0, Decimal(text))
        except (InvalidOperation, ValueError):
            found = (1, Decimal(0))
        seen[text] = found
    return found


def target_name(target: Tuple[str, ...]) -> str:
    """The name a ref's target is ordered by after its sequence."""
    return target[-1] if target else ""


def _port_range(raw: Any) -> Tuple[int, int]:
    """A PortType as a closed range; absent means every port, unreadable means none."""
    if not isinstance(raw, dict):
        return (0, 65535)
    try:
        return (int(raw.get("start_port", 0)), int(raw.get("end_port", 65535)))
    except (TypeError, ValueError):
        log.warning("unreadable port range %r, matches nothing", raw)
        return (1, 0)


def _service(raw: Any) -> RuleService:
    if not isinstance(raw, dict):
        return RuleService("any", (0, 65535), (0, 65535))
    protocol = str(raw.get("protocol") or "any").lower()
    if protocol.isdigit():
        raise NumericProtocol(f"numeric protocol {protocol!r} in a service (Contrail reads 0 as any)")
    if protocol != "any" and protocol not in FLOW_PROTOCOLS:
        protocol = ""
    return RuleService(protocol, _port_range(raw.get("dst_ports")), _port_range(raw.get("src_ports")))


def _endpoint(raw: Any) -> RuleEndpoint:
    """Compile an endpoint; forms the translator never emits (virtual networks, tag ids, empty)
    match nothing rather than everything, so a surprise can only close, never open."""
    if not isinstance(raw, dict):
        return RuleEndpoint("nothing")
    if raw.get("any"):
        return RuleEndpoint("any")
    if raw.get("address_group"):
        return RuleEndpoint("group", group=str(raw["address_group"]))
    if raw.get("tags"):
        return RuleEndpoint("tags", tags=frozenset(str(t) for t in raw["tags"]))
    return RuleEndpoint("nothing")


def parse_prefixes(group: Mapping[str, Any], parsed: Dict[Tuple[Any, Any], Prefix]) -> FrozenSet[Prefix]:
    """The group's prefixes; `parsed` caches the parsing, as groups share most of their prefixes."""
    found = set()
    for subnet in (group.get("address_group_prefix") or {}).get("subnet") or []:
        try:
            key = (subnet["ip_prefix"], subnet["ip_prefix_len"])
            if key not in parsed:
                net = ipaddress.ip_network(f"{key[0]}/{key[1]}", strict=False)
                parsed[key] = (net.version, net.max_prefixlen - net.prefixlen,
                               int(net.network_address))
            found.add(parsed[key])
        except (KeyError, TypeError, ValueError):
            log.warning("address group %s: unreadable prefix %r", group.get("fq_name"), subnet)
    return frozenset(found)


def in_prefix(ip: IPAddress, prefix: Prefix) -> bool:
    version, host_bits, network = prefix
    return ip.version == version and int(ip) >> host_bits << host_bits == network


class SharedParts:
    """A rule's parts compiled once for all the rules sharing them: the translator gives its rules
    one dict per distinct endpoint and service, shared, so they are compiled by identity (each
    held here, so its identity cannot pass to another object while it is a key). For the
    length of one pass over many rules."""

    def __init__(self) -> None:
        self._endpoints: Dict[int, Tuple[Any, RuleEndpoint]] = {}
        self._services: Dict[int, Tuple[Any, RuleService]] = {}

    def endpoint(self, raw: Any) -> RuleEndpoint:
        found = self._endpoints.get(id(raw))
        if found is None or found[0] is not raw:
            found = self._endpoints[id(raw)] = (raw, _endpoint(raw))
        return found[1]

    def service(self, raw: Any) -> RuleService:
        found = self._services.get(id(raw))
        if found is None or found[0] is not raw:
            found = self._services[id(raw)] = (raw, _service(raw))
        return found[1]


def oriented(policy: str, rule_fq: Tuple[str, ...], rule: Mapping[str, Any],
             parts: Optional[SharedParts] = None) -> List[RuleEntry]:
    """The rule's entries in `policy`; `parts`: what the rules compiled before it share with it."""
    parts = parts if parts is not None else SharedParts()
    ep1, ep2 = parts.endpoint(rule.get("endpoint_1")), parts.endpoint(rule.get("endpoint_2"))
    direction = rule.get("direction") or ">"
    pairs = {">": [(ep1, ep2)], "<": [(ep2, ep1)], "<>": [(ep1, ep2), (ep2, ep1)]}.get(direction)
    if pairs is None:
        log.warning("rule %s: unknown direction %r, never matches", rule_fq[-1], direction)
        return []
    action_list = rule.get("action_list") or {}
    action = str(action_list.get("simple_action") or "deny")
    logged = action_list.get("log") is True
    match_tags = tuple((rule.get("match_tags") or {}).get("tag_list") or ())
    service = parts.service(rule.get("service"))
    return [RuleEntry(policy, rule_fq[-1], rule_fq, src, dst, service, match_tags, action, logged)
            for src, dst in pairs]


def ip_or_none(text: Any) -> Optional[IPAddress]:
    try:
        return ipaddress.ip_address(text) if text else None
    except (ValueError, TypeError):
        return None
