"""How Contrail decides a flow under the cluster's application policy set (SPEC section 6).

Input is the translator's JSON object (SPEC section 8): the APS, its firewall policies, their rules,
the address groups, and the `workloads` with each pod's IP and tags. The evaluation is the vRouter's
for one APS: policies by sequence (ties by name), rules by sequence (ties by name), and the first rule
whose `endpoint_1` matches the source, `endpoint_2` the destination and whose service matches
decides. A tag endpoint matches a workload carrying all its tags, an address group matches an IP in
one of its prefixes, `any` matches everything. A flow where neither end carries
`application=<cluster>` is not under the APS and is allowed; a flow under it that no rule matches is
dropped (the APS is a whitelist).

The introspect page calls this on a live DB, so the constructor indexes the rules once: each
oriented rule is filed under one key per endpoint (its `any`, its address group, or its rarest tag),
and a query only looks at the rules filed under the keys its two ends carry. Compiling a rule's
body (orienting it, reading its endpoints and service) is most of that work, so the page keeps an
`OrientedRules` from one index to the next: a rebuild after a change compiles only the bodies that
changed, as the translator replaces a body it changes and shares the others.
"""
from __future__ import annotations

import ipaddress
import logging
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import (Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Set,
                    Tuple, Union)

log = logging.getLogger(__name__)

IPAddress = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
# A prefix as (IP version, host bits, network address as an int): an address belongs to it when
# `int(address) >> host_bits << host_bits` is the network address.
Prefix = Tuple[int, int, int]

FLOW_PROTOCOLS = ("tcp", "udp", "sctp")


class NumericProtocol(ValueError):
    """A rule names its protocol by number. Contrail reads `0` as `any` and tf-controller's config
    API refuses numbers; the translator never writes one, so evaluating such a rule (as anything)
    could only hide a bug."""
_ANY = ("any",)


@dataclass(frozen=True)
class Workload:
    """One end of a flow as Contrail sees it: the tags of its VMIs and its IP (an outside address
    has no tags)."""

    ip: Optional[IPAddress]
    tags: FrozenSet[str]


@dataclass(frozen=True)
class Decision:
    """The outcome of one evaluation. `rule`/`policy` name the deciding objects (None when the flow
    is not under the APS or no rule matched)."""

    allowed: bool
    under_aps: bool
    rule: Optional[str] = None
    rule_fq_name: Optional[Tuple[str, ...]] = None
    policy: Optional[str] = None
    action: Optional[str] = None
    logged: bool = False  # the deciding rule logs its matches (`action_list.log`, SPEC 15)


@dataclass(frozen=True)
class _Endpoint:
    """A compiled rule endpoint. `kind` is any | tags | group | nothing."""

    kind: str
    tags: FrozenSet[str] = frozenset()
    group: str = ""  # the address group's name, for kind "group"


@dataclass(frozen=True)
class _Service:
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


@dataclass(frozen=True)
class _Entry:
    """One rule in one policy, oriented source -> destination; its position in the evaluator's
    list is its global rank."""

    policy: str
    rule: str
    rule_fq_name: Tuple[str, ...]
    source: _Endpoint
    destination: _Endpoint
    service: _Service
    match_tags: Tuple[str, ...]
    action: str
    logged: bool


def _sequence_key(ref: Mapping[str, Any]) -> Tuple[Any, ...]:
    """Order refs by numeric sequence, ties (and unreadable sequences, last) by name."""
    to = tuple(ref.get("to") or ())
    name = to[-1] if to else ""
    sequence = ((ref.get("attr") or {}).get("sequence"))
    try:
        return (0, Decimal(str(sequence)), name)
    except (InvalidOperation, ValueError):
        return (1, Decimal(0), name)


def _port_range(raw: Any) -> Tuple[int, int]:
    """A PortType as a closed range; absent means every port, unreadable means none."""
    if not isinstance(raw, dict):
        return (0, 65535)
    try:
        return (int(raw.get("start_port", 0)), int(raw.get("end_port", 65535)))
    except (TypeError, ValueError):
        log.warning("unreadable port range %r, matches nothing", raw)
        return (1, 0)


def _service(raw: Any) -> _Service:
    if not isinstance(raw, dict):
        return _Service("any", (0, 65535), (0, 65535))
    protocol = str(raw.get("protocol") or "any").lower()
    if protocol.isdigit():
        raise NumericProtocol(f"numeric protocol {protocol!r} in a service (Contrail reads 0 as any)")
    if protocol != "any" and protocol not in FLOW_PROTOCOLS:
        protocol = ""
    return _Service(protocol, _port_range(raw.get("dst_ports")), _port_range(raw.get("src_ports")))


def _endpoint(raw: Any) -> _Endpoint:
    """Compile an endpoint; forms the translator never emits (virtual networks, tag ids, empty)
    match nothing rather than everything, so a surprise can only close, never open."""
    if not isinstance(raw, dict):
        return _Endpoint("nothing")
    if raw.get("any"):
        return _Endpoint("any")
    if raw.get("address_group"):
        return _Endpoint("group", group=str(raw["address_group"]))
    if raw.get("tags"):
        return _Endpoint("tags", tags=frozenset(str(t) for t in raw["tags"]))
    return _Endpoint("nothing")


def _prefixes(group: Mapping[str, Any], parsed: Dict[Tuple[Any, Any], Prefix]) -> FrozenSet[Prefix]:
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


def _in_prefix(ip: IPAddress, prefix: Prefix) -> bool:
    version, host_bits, network = prefix
    return ip.version == version and int(ip) >> host_bits << host_bits == network


def _by_fq_name(objects: Optional[Iterable[Mapping[str, Any]]]) -> Dict[Tuple[str, ...], Mapping[str, Any]]:
    return {tuple(o.get("fq_name") or ()): o for o in objects or ()}


def _tag_value(tags: FrozenSet[str], tag_type: str) -> Optional[str]:
    prefix = tag_type + "="
    return next((t for t in tags if t.startswith(prefix)), None)


class OrientedRules:
    """Each firewall rule body's compiled entries, kept from one evaluator to the next.

    Keyed by the body's identity: the translator's rule bodies are immutable and a changed rule
    is a new body, so an unchanged body compiles to the same entries. (Not so its policies: the
    deny-all policy's and the APS's ref lists are kept in place, so they are read anew each time.)
    Each kept body is held, so its identity cannot pass to another object while it is a key.
    `compiled` counts the bodies compiled anew (what a rebuild after one change should keep small)."""

    def __init__(self) -> None:
        self._kept: Dict[int, Tuple[Mapping[str, Any], str, Tuple[str, ...], List[_Entry]]] = {}
        self._used: Dict[int, Tuple[Mapping[str, Any], str, Tuple[str, ...], List[_Entry]]] = {}
        self.compiled = 0

    def entries(self, policy: str, rule_fq: Tuple[str, ...], rule: Mapping[str, Any]) -> List[_Entry]:
        """The rule's oriented entries in `policy`, compiled only if this body was not seen."""
        found = self._used.get(id(rule)) or self._kept.get(id(rule))
        if found is None or found[0] is not rule or found[1] != policy or found[2] != rule_fq:
            self.compiled += 1
            found = (rule, policy, rule_fq, _oriented(policy, rule_fq, rule))
        self._used[id(rule)] = found
        return found[3]

    def settle(self) -> None:
        """An evaluator is built: keep only the bodies it used, so that replaced ones are freed."""
        self._kept, self._used = self._used, {}


def _oriented(policy: str, rule_fq: Tuple[str, ...], rule: Mapping[str, Any]) -> List[_Entry]:
    ep1, ep2 = _endpoint(rule.get("endpoint_1")), _endpoint(rule.get("endpoint_2"))
    direction = rule.get("direction") or ">"
    pairs = {">": [(ep1, ep2)], "<": [(ep2, ep1)], "<>": [(ep1, ep2), (ep2, ep1)]}.get(direction)
    if pairs is None:
        log.warning("rule %s: unknown direction %r, never matches", rule_fq[-1], direction)
        return []
    action_list = rule.get("action_list") or {}
    action = str(action_list.get("simple_action") or "deny")
    logged = action_list.get("log") is True
    match_tags = tuple((rule.get("match_tags") or {}).get("tag_list") or ())
    service = _service(rule.get("service"))
    return [_Entry(policy, rule_fq[-1], rule_fq, src, dst, service, match_tags, action, logged)
            for src, dst in pairs]


class ContrailEvaluator:
    """Evaluates flows against one translation (the SPEC section 8 JSON object)."""

    def __init__(self, translation: Mapping[str, Any], cluster_name: Optional[str] = None,
                 rules: Optional[OrientedRules] = None) -> None:
        """`rules`: the compiled rules of a previous evaluator over the same kind of input (the
        live DB), reused where the bodies are the same; None compiles every rule."""
        self.cluster_name = cluster_name or translation.get("cluster_name") or "k8s"
        self.application_tag = f"application={self.cluster_name}"
        self.workloads: Dict[Tuple[str, str], Workload] = {}
        self.workloads_by_ip: Dict[IPAddress, List[Tuple[str, str]]] = {}
        for raw in translation.get("workloads") or ():
            ip = _ip_or_none(raw.get("ip"))
            key = (str(raw.get("namespace")), str(raw.get("name")))
            self.workloads[key] = Workload(ip, frozenset(raw.get("tags") or ()))
            if ip is not None:
                self.workloads_by_ip.setdefault(ip, []).append(key)
        parsed: Dict[Tuple[Any, Any], Prefix] = {}
        self._groups: Dict[str, FrozenSet[Prefix]] = {
            ":".join(fq): _prefixes(g, parsed)
            for fq, g in _by_fq_name(translation.get("address_groups")).items()}
        # The prefix shapes in use: an address is looked up once per shape.
        self._shapes = sorted({(v, host_bits) for v, host_bits, _ in parsed.values()})
        self.entries: List[_Entry] = self._entries(translation, rules or OrientedRules())
        if rules is not None:
            rules.settle()
        self._index_entries()

    # ---- building --------------------------------------------------------------------------

    def _entries(self, translation: Mapping[str, Any], compiled: OrientedRules) -> List[_Entry]:
        aps = translation.get("application_policy_set") or {}
        policies = _by_fq_name(translation.get("firewall_policies"))
        rules = _by_fq_name(translation.get("firewall_rules"))
        entries: List[_Entry] = []
        self.policy_rank: Dict[str, int] = {}  # firewall policy name -> its place in the APS
        for policy_ref in sorted(aps.get("firewall_policy_refs") or (), key=_sequence_key):
            policy_fq = tuple(policy_ref.get("to") or ())
            self.policy_rank.setdefault(policy_fq[-1] if policy_fq else "", len(self.policy_rank))
            policy = policies.get(policy_fq)
            if policy is None:
                log.warning("APS refers to unknown firewall policy %s", ":".join(policy_fq))
                continue
            for rule_ref in sorted(policy.get("firewall_rule_refs") or (), key=_sequence_key):
                rule_fq = tuple(rule_ref.get("to") or ())
                rule = rules.get(rule_fq)
                if rule is None:
                    log.warning("policy %s refers to unknown rule %s", policy_fq[-1], rule_fq)
                    continue
                entries.extend(compiled.entries(policy_fq[-1], rule_fq, rule))
        return entries

    def _index_entries(self) -> None:
        popularity = Counter(t for w in self.workloads.values() for t in w.tags)
        self._by_source: Dict[Tuple[Any, ...], Set[int]] = {}
        self._by_destination: Dict[Tuple[Any, ...], Set[int]] = {}
        # Rules share most of their endpoints: each distinct one is filed once.
        keys: Dict[_Endpoint, List[Tuple[Any, ...]]] = {}
        for position, entry in enumerate(self.entries):
            for endpoint, index in ((entry.source, self._by_source), (entry.destination, self._by_destination)):
                found = keys.get(endpoint)
                if found is None:
                    found = keys[endpoint] = self._keys_of(endpoint, popularity)
                for key in found:
                    index.setdefault(key, set()).add(position)

    def _keys_of(self, endpoint: _Endpoint, popularity: Counter) -> List[Tuple[Any, ...]]:
        """Where an endpoint is filed: every end it matches has one of these keys."""
        if endpoint.kind == "any":
            return [_ANY]
        if endpoint.kind == "group":
            return [("prefix",) + p for p in self._groups.get(endpoint.group, ())]
        if endpoint.kind == "tags":
            # A workload matching the endpoint carries every tag; file it under the rarest one.
            return [("tag", min(endpoint.tags, key=lambda t: (popularity[t], t)))]
        return []

    # ---- querying --------------------------------------------------------------------------

    def _keys(self, workload: Workload) -> List[Tuple[Any, ...]]:
        """The index keys a workload has: any, each of its tags, each prefix shape of its IP."""
        keys: List[Tuple[Any, ...]] = [_ANY] + [("tag", t) for t in workload.tags]
        ip = workload.ip
        if ip is not None:
            address = int(ip)
            keys.extend(("prefix", version, host_bits, address >> host_bits << host_bits)
                        for version, host_bits in self._shapes if version == ip.version)
        return keys

    def _candidates(self, src: Workload, dst: Workload) -> List[int]:
        src_sets = [s for s in (self._by_source.get(k) for k in self._keys(src)) if s]
        dst_sets = [s for s in (self._by_destination.get(k) for k in self._keys(dst)) if s]
        found: Set[int] = set()
        for a in src_sets:
            for b in dst_sets:
                found |= a & b
        return sorted(found)

    def _endpoint_matches(self, endpoint: _Endpoint, workload: Workload) -> bool:
        if endpoint.kind == "any":
            return True
        if endpoint.kind == "tags":
            return endpoint.tags <= workload.tags
        if endpoint.kind == "group":
            ip = workload.ip
            return ip is not None and any(_in_prefix(ip, p)
                                          for p in self._groups.get(endpoint.group, ()))
        return False

    def _pair_matches(self, entry: _Entry, src: Workload, dst: Workload) -> bool:
        if not (self._endpoint_matches(entry.source, src)
                and self._endpoint_matches(entry.destination, dst)):
            return False
        for tag_type in entry.match_tags:
            value = _tag_value(src.tags, tag_type)
            if value is None or value != _tag_value(dst.tags, tag_type):
                return False
        return True

    def under_aps(self, src: Workload, dst: Workload) -> bool:
        """A flow where neither end carries application=<cluster> is not under the APS."""
        return self.application_tag in src.tags or self.application_tag in dst.tags

    def pair_rules(self, src: Workload, dst: Workload) -> List[_Entry]:
        """The rules whose endpoints (and match tags) match src -> dst, in evaluation order: what
        decides every port of this pair (`decide`), so the what-if asks for them once per pair."""
        return [self.entries[position] for position in self._candidates(src, dst)
                if self._pair_matches(self.entries[position], src, dst)]

    @staticmethod
    def decide(rules: Sequence[_Entry], port: int, protocol: str,
               src_port: Optional[int] = None) -> Decision:
        """The first of a pair's `rules` whose service matches decides; none matching drops."""
        for entry in rules:
            if entry.service.matches(port, protocol, src_port):
                return Decision(allowed=entry.action == "pass", under_aps=True, rule=entry.rule,
                                rule_fq_name=entry.rule_fq_name, policy=entry.policy,
                                action=entry.action, logged=entry.logged)
        return Decision(allowed=False, under_aps=True)

    def evaluate(self, src: Workload, dst: Workload, port: int, protocol: str,
                 src_port: Optional[int] = None) -> Decision:
        """Decide the flow src -> dst to `protocol` (tcp/udp/sctp) `port`; `src_port` None is an
        unknown ephemeral port, matched only by rules open to every source port."""
        if not self.under_aps(src, dst):
            return Decision(allowed=True, under_aps=False)
        return self.decide(self.pair_rules(src, dst), port, protocol, src_port)

    def workload(self, namespace: str, name: str) -> Optional[Workload]:
        return self.workloads.get((namespace, name))

    def pods_with_ip(self, ip: IPAddress) -> Sequence[Tuple[str, str]]:
        return self.workloads_by_ip.get(ip, ())


def _ip_or_none(text: Any) -> Optional[IPAddress]:
    try:
        return ipaddress.ip_address(text) if text else None
    except (ValueError, TypeError):
        return None
