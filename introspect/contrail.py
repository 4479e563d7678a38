"""A read-only view of the Contrail objects in the DB, as a person wants to read them.

The DB keeps two maps per resource type: what the translator wants (`desired`) and what the config
API holds (`actual`). A page shows one row per object with its presence in each, and describes rule
endpoints and services in the wiki's notation (`namespace=x & app=web`, `tcp/80`). Policy membership
and sequence numbers are read from the refs, so rules can be listed in the order Contrail evaluates
them.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, TypeVar

import gevent

from kube_manager.records.db import Database, FqName
from kube_manager.translator.naming import EGRESS, INGRESS, deny_rule_name, rule_prefix

T = TypeVar("T")
# Items handled between two yields to the gevent loop (see `paced`).
PACE = 256

# Presence of an object, shown as its "state" on the Contrail lists.
PRESENT = "present"   # desired and in the config API (or ours in the config API, nothing to compare)
PENDING = "pending"   # desired, not (yet) in the config API
STALE = "stale"       # in the config API, no longer desired: garbage collection will remove it
MISSING = "missing"   # named by a policy, in neither map
PARKED = "parked"     # the config API refused its last write for good (see the reason)

FIREWALL_RULE = "firewall-rule"
FIREWALL_POLICY = "firewall-policy"
APS = "application-policy-set"
TAG = "tag"
ADDRESS_GROUP = "address-group"

ENDPOINTS = ("endpoint_1", "endpoint_2")

# A sequence that sorts after every real one, for objects not referenced by any policy.
UNREFERENCED = "~"


def paced(items: Iterable[T]) -> Iterator[T]:
    """`items`, yielding to the other greenlets every PACE items.

    The pages run in the daemon's gevent loop; a list of 100,000 rules takes seconds to build, and
    the watches, the reconciler and the loop heartbeat must keep running meanwhile. Callers pass
    materialised lists (never a live dict view), so the DB may change between two items safely.
    """
    for count, item in enumerate(items, 1):
        if count % PACE == 0:
            gevent.sleep(0)
        yield item


@dataclass(slots=True)
class ContrailObject:
    """One Contrail object, from the desired map, the actual map, or both."""

    type: str
    fq_name: FqName
    desired: Optional[Mapping[str, Any]]
    actual: Optional[Mapping[str, Any]]
    parked: str = ""  # the server's refusal, when the reconciler parked it

    @property
    def body(self) -> Mapping[str, Any]:
        """What to show: the desired body when there is one (it is what will be written)."""
        return self.desired if self.desired is not None else (self.actual or {})

    @property
    def name(self) -> str:
        return self.fq_name[-1] if self.fq_name else ""

    @property
    def uuid(self) -> str:
        return str((self.actual or {}).get("uuid", ""))

    @property
    def state(self) -> str:
        if self.parked:
            return PARKED
        if self.desired is None:
            return STALE if self.actual is not None else MISSING
        return PRESENT if self.actual is not None else PENDING

    def annotation(self, key: str) -> str:
        pairs = ((self.body.get("annotations") or {}).get("key_value_pair")) or []
        for pair in pairs:
            if isinstance(pair, dict) and pair.get("key") == key:
                return str(pair.get("value", ""))
        return ""

    def refs(self, field: str) -> List[Tuple[str, str]]:
        """(referred name, sequence) of each ref in `field`, in sequence order then by name."""
        found = []
        for ref in self.body.get(field) or []:
            to = ref.get("to") or []
            attr = ref.get("attr") or {}
            sequence = attr.get("sequence", "") if isinstance(attr, dict) else ""
            found.append((to[-1] if to else "", str(sequence)))
        return sorted(found, key=lambda item: (item[1], item[0]))


@dataclass(frozen=True)
class Membership:
    """Where a rule sits: its firewall policy, its sequence there, and the policy's APS sequence."""

    policy: str
    sequence: str
    policy_sequence: str


class ContrailView:
    """Indexes over the DB's Contrail objects, computed once per request."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._objects: Dict[str, List[ContrailObject]] = {}

    def objects(self, kind: str) -> List[ContrailObject]:
        """Every object of `kind` in either map, sorted by fq_name."""
        if kind not in self._objects:
            desired = self._db.desired.get(kind, {})
            actual = self._db.actual.get(kind, {})
            self._objects[kind] = [
                ContrailObject(kind, tuple(fq_name), desired.get(fq_name), actual.get(fq_name),
                               self._db.parked.get((kind, tuple(fq_name)), ""))
                for fq_name in paced(sorted(set(desired) | set(actual)))
            ]
        return self._objects[kind]

    def find(self, kind: str, fq_name: List[str]) -> Optional[ContrailObject]:
        """One object by fq_name, from either map (None when neither holds it)."""
        key = tuple(fq_name)
        desired = self._db.desired.get(kind, {}).get(key)
        actual = self._db.actual.get(kind, {}).get(key)
        if desired is None and actual is None:
            return None
        return ContrailObject(kind, key, desired, actual, self._db.parked.get((kind, key), ""))

    def count(self, kind: str) -> int:
        """How many objects of `kind` either map holds, without building them."""
        return len(set(self._db.desired.get(kind, {})) | set(self._db.actual.get(kind, {})))

    @cached_property
    def policy_sequences(self) -> Dict[str, str]:
        """Firewall policy name -> its sequence in the APS that refers to it."""
        return {name: seq for aps in self.objects(APS) for name, seq in aps.refs("firewall_policy_refs")}

    @cached_property
    def memberships(self) -> Dict[str, Membership]:
        """Rule name -> the policy it belongs to (the first one, in evaluation order)."""
        found: Dict[str, Membership] = {}
        for policy in paced(self.ordered_policies):
            for rule, sequence in policy.refs("firewall_rule_refs"):
                found.setdefault(rule, Membership(policy.name, sequence, self.policy_sequence(policy.name)))
        return found

    def policy_sequence(self, policy: str) -> str:
        return self.policy_sequences.get(policy, "")

    @cached_property
    def ordered_policies(self) -> List[ContrailObject]:
        """Firewall policies in the order the APS evaluates them, unreferenced ones last."""
        return sorted(self.objects(FIREWALL_POLICY),
                      key=lambda p: (self.policy_sequence(p.name) or UNREFERENCED, p.name))

    def ordered_rules(self) -> List[Tuple[ContrailObject, Optional[Membership]]]:
        """Firewall rules in evaluation order (policy sequence, rule sequence, name)."""
        rules = [(rule, self.memberships.get(rule.name)) for rule in self.objects(FIREWALL_RULE)]
        return sorted(rules, key=lambda item: _membership_key(item[1]) + (item[0].name,))

    @cached_property
    def rules_by_tag(self) -> Dict[str, List[str]]:
        """Tag name -> names of the rules whose endpoints name it."""
        found: Dict[str, List[str]] = {}
        for rule in paced(self.objects(FIREWALL_RULE)):
            for tag in sorted({t for side in ENDPOINTS for t in endpoint_tags(rule.body.get(side))}):
                found.setdefault(tag, []).append(rule.name)
        return found

    @cached_property
    def rules_by_address_group(self) -> Dict[str, List[str]]:
        """Address group name -> names of the rules whose endpoints refer to it."""
        found: Dict[str, List[str]] = {}
        for rule in paced(self.objects(FIREWALL_RULE)):
            for group in sorted({g for side in ENDPOINTS if (g := endpoint_address_group(rule.body.get(side))) is not None}):
                found.setdefault(group, []).append(rule.name)
        return found

    @cached_property
    def pods_by_tag(self) -> Dict[str, List[str]]:
        """Tag name -> "namespace/name" of each pod whose VMIs must carry it."""
        found: Dict[str, List[str]] = {}
        for (namespace, name), pod in paced(sorted(self._db.pods.items())):
            for tag in pod.tags:
                found.setdefault(tag, []).append(f"{namespace}/{name}")
        return found


def deny_rule_names(policy: ContrailObject) -> List[str]:
    """The default-deny rule names of SPEC section 4 for a NetworkPolicy's firewall policy:
    `<cluster>-<ns>-<np>` gives `<cluster>-<ns>-<dir>-<np>-denyall`. Deny rules live in the cluster's
    deny-all policy and carry no namespace mark, so this is how a page ties them to their policy."""
    prefix = f"{policy.annotation('cluster')}-{policy.annotation('namespace')}-"
    if prefix == "--" or not policy.name.startswith(prefix):
        return []
    suffix = policy.name[len(prefix):]
    cluster, namespace = policy.annotation("cluster"), policy.annotation("namespace")
    return [deny_rule_name(rule_prefix(cluster, namespace, direction, suffix)) for direction in (INGRESS, EGRESS)]


def _membership_key(membership: Optional[Membership]) -> Tuple[str, str]:
    if membership is None:
        return (UNREFERENCED, UNREFERENCED)
    return (membership.policy_sequence or UNREFERENCED, membership.sequence or UNREFERENCED)


def describe_endpoint(endpoint: Optional[Mapping[str, Any]]) -> str:
    """A rule endpoint in the wiki's notation: `any`, `a=b & c=d`, `address-group 10.0.0.0/8`."""
    if not endpoint:
        return "-"
    if endpoint.get("any"):
        return "any"
    if endpoint.get("tags"):
        return " & ".join(endpoint["tags"])
    if endpoint.get("address_group"):
        return "address-group " + str(endpoint["address_group"]).split(":")[-1]
    subnet = endpoint.get("subnet")
    if subnet:
        return f"{subnet.get('ip_prefix')}/{subnet.get('ip_prefix_len')}"
    if endpoint.get("virtual_network"):
        return "virtual-network " + str(endpoint["virtual_network"])
    return "-"


def endpoint_tags(endpoint: Optional[Mapping[str, Any]]) -> List[str]:
    return list((endpoint or {}).get("tags") or [])


def endpoint_address_group(endpoint: Optional[Mapping[str, Any]]) -> Optional[str]:
    group = (endpoint or {}).get("address_group")
    return str(group).split(":")[-1] if group else None


def describe_service(service: Optional[Mapping[str, Any]]) -> str:
    """`any`, `tcp`, `tcp/80` or `udp/1000-2000` (destination ports)."""
    if not service:
        return "-"
    protocol = str(service.get("protocol", "any")).lower()
    ports = service.get("dst_ports") or {}
    start, end = ports.get("start_port", 0), ports.get("end_port", 65535)
    if (start, end) == (0, 65535):
        return protocol
    return f"{protocol}/{start}" if start == end else f"{protocol}/{start}-{end}"


def describe_action(rule: Mapping[str, Any]) -> str:
    return str((rule.get("action_list") or {}).get("simple_action", "-"))


def prefixes(group: Mapping[str, Any]) -> List[str]:
    """The CIDRs of an address group's `address_group_prefix`."""
    subnets = (group.get("address_group_prefix") or {}).get("subnet") or []
    return [f"{s.get('ip_prefix')}/{s.get('ip_prefix_len')}" for s in subnets]
