"""The config API bodies kube-manager writes (SPEC 1, 3, 4, 5), as plain dicts.

Each body is the inner dict of a POST (`{"firewall-rule": body}` without the wrapper). Parts that
are the same for many objects (annotations, actions, services, endpoints) are shared between
bodies to keep a 100,000-pod cluster small: bodies are read-only for everyone who receives them.
"""
from __future__ import annotations

from operator import itemgetter
from types import MappingProxyType
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from .cidr import Network
from .encoding import split_tag
from .naming import rule_sequence
from .ports import ANY_SERVICE, MAX_PORT, MIN_PORT, Service

Body = Dict[str, Any]
FqName = Tuple[str, ...]

POLICY_MANAGEMENT = "default-policy-management"
POLICY_MANAGEMENT_TYPE = "policy-management"
TAG = "tag"
ADDRESS_GROUP = "address-group"
FIREWALL_RULE = "firewall-rule"
FIREWALL_POLICY = "firewall-policy"
APPLICATION_POLICY_SET = "application-policy-set"
RESOURCE_TYPES = (TAG, ADDRESS_GROUP, FIREWALL_RULE, FIREWALL_POLICY, APPLICATION_POLICY_SET)
PASS, DENY = "pass", "deny"
MARK_CACHE_LIMIT = 65536


# The fields of each type's bodies, as `BodyFactory` makes them (a test holds them to it): what a
# resync reads back of each type, known before anything is translated (a restart sends its first
# listings while it translates its initial lists).
FIELDS: Mapping[str, FrozenSet[str]] = MappingProxyType({
    TAG: frozenset({"fq_name", "tag_type_name", "tag_value", "annotations"}),
    ADDRESS_GROUP: frozenset({"fq_name", "parent_type", "address_group_prefix", "annotations"}),
    FIREWALL_RULE: frozenset({"fq_name", "parent_type", "action_list", "service", "endpoint_1", "direction",
                              "endpoint_2", "match_tags", "annotations"}),
    FIREWALL_POLICY: frozenset({"fq_name", "parent_type", "firewall_rule_refs", "annotations"}),
    APPLICATION_POLICY_SET: frozenset({"fq_name", "parent_type", "tag_refs", "firewall_policy_refs", "annotations"}),
})


def global_fq_name(name: str) -> FqName:
    """fq_name of an object under the global policy management."""
    return (POLICY_MANAGEMENT, name)


def address_group_endpoint(name: str) -> Body:
    return {"address_group": f"{POLICY_MANAGEMENT}:{name}"}


# --- compact bodies -------------------------------------------------------------------------
# A firewall rule and a ref exist once per rule (hundreds of thousands on a large cluster), and a
# dict literal carries its own key table (about a third of a rule's size).
# CPython gives the attribute dicts of one class's instances a key table shared by all ("split"
# dicts, PEP 412): so these bodies are built as an instance's `__dict__`, attributes set always in
# the same order. What comes back is a plain dict in every way (type, equality, key order, JSON);
# only its size differs, and modifying it would merely unshare its table (nobody does: bodies are
# read-only). The instance itself is dropped at once. (Not copies of one such dict: a copy's values
# are sized for the key table's whole capacity, which costs more memory per NetworkPolicy.)


class _Rule:
    """Its `__dict__` is a firewall rule's body (see above); keys in the order of the POST."""

    fq_name: List[str]
    parent_type: str
    action_list: Body
    service: Body
    endpoint_1: Body
    direction: str
    endpoint_2: Body
    match_tags: Body
    annotations: Body


class _Ref:
    """Its `__dict__` is a ref `{"to": [...], "attr": ...}` (see above)."""

    to: List[str]
    attr: Optional[Body]


class _Sequence:
    """Its `__dict__` is a ref's attr `{"sequence": ...}` (see above)."""

    sequence: str


class _Policy:
    """Its `__dict__` is a NetworkPolicy's firewall policy body (see above)."""

    fq_name: List[str]
    parent_type: str
    firewall_rule_refs: List[Body]
    annotations: Body


class _Annotations:
    """Its `__dict__` is `{"key_value_pair": [...]}` (see above)."""

    key_value_pair: List[Body]


class _Pair:
    """Its `__dict__` is an annotation `{"key": ..., "value": ...}` (see above)."""

    key: str
    value: str


_FQ_NAME = itemgetter("fq_name")


def pair_body(key: str, value: str) -> Body:
    """`{"key": key, "value": value}`, compact (see above)."""
    pair = _Pair()
    pair.key = key
    pair.value = value
    return pair.__dict__


def _mark(pairs: Dict[str, Body], key: str, value: str) -> Body:
    """The annotation pair `key: value`, remembered in `pairs` (by value, for one key)."""
    if len(pairs) >= MARK_CACHE_LIMIT:
        pairs.clear()
    pair = pairs[value] = pair_body(key, value)
    return pair


def ref_body(to: List[str], attr: Optional[Body]) -> Body:
    """`{"to": to, "attr": attr}`, compact (see above)."""
    ref = _Ref()
    ref.to = to
    ref.attr = attr
    return ref.__dict__


def sequence_attr(sequence: str) -> Body:
    """`{"sequence": sequence}`, compact (see above)."""
    attr = _Sequence()
    attr.sequence = sequence
    return attr.__dict__


def sequenced_ref(fq_name: FqName, sequence: str) -> Body:
    return ref_body(list(fq_name), sequence_attr(sequence))


def annotations_body(pairs: Dict[str, str]) -> Body:
    """`annotations.key_value_pair`, sorted by key (one canonical form, so that bodies compare equal)."""
    return {"key_value_pair": [{"key": k, "value": pairs[k]} for k in sorted(pairs)]}


def annotation_values(body: Mapping[str, Any], *keys: str) -> Tuple[Any, ...]:
    """The values of `keys` in a body's `annotations.key_value_pair` (None where absent or
    malformed; the last pair of a key wins), read without a map of every pair: a resync asks this
    of every object it lists."""
    found: Dict[str, Any] = {}
    for pair in (body.get("annotations") or {}).get("key_value_pair") or ():
        if isinstance(pair, dict):
            key = pair.get("key")
            if key in keys:
                found[key] = pair.get("value")
    return tuple(found.get(key) for key in keys)


class BodyFactory:
    """Builds the bodies of one cluster, sharing the parts that never differ."""

    def __init__(self, cluster_name: str, owner: str) -> None:
        self.cluster_name = cluster_name
        self.owner = owner
        self._marks = {kind: annotations_body({"owner": owner, "cluster": cluster_name, "kind": kind})
                       for kind in RESOURCE_TYPES}
        self._actions = {PASS: {"simple_action": PASS}, DENY: {"simple_action": DENY}}
        self._cluster_mark = {"key": "cluster", "value": cluster_name}
        self._owner_mark = {"key": "owner", "value": owner}
        self._kind_mark = {kind: {"key": "kind", "value": kind} for kind in RESOURCE_TYPES}
        self._name_marks: Dict[str, Body] = {}
        self._namespace_marks: Dict[str, Body] = {}
        self._spec_marks: Dict[str, Body] = {}
        self._match_tags: Body = {"tag_list": []}
        self.any_endpoint: Body = {"any": True}
        self._services: Dict[Service, Body] = {}
        self._rule_sequences: List[Body] = []

    def service(self, service: Service) -> Body:
        body = self._services.get(service)
        if body is None:
            protocol, start, end = service
            body = {"protocol": protocol,
                    "src_ports": {"start_port": MIN_PORT, "end_port": MAX_PORT},
                    "dst_ports": {"start_port": start, "end_port": end}}
            self._services[service] = body
        return body

    def tag(self, name: str) -> Body:
        tag_type, value = split_tag(name)
        return {"fq_name": [name], "tag_type_name": tag_type, "tag_value": value,
                "annotations": self._marks[TAG]}

    def address_group(self, fq_name: FqName, prefixes: Sequence[Network]) -> Body:
        subnets = [{"ip_prefix": str(net.network_address), "ip_prefix_len": net.prefixlen}
                   for net in prefixes]
        return {"fq_name": list(fq_name), "parent_type": POLICY_MANAGEMENT_TYPE,
                "address_group_prefix": {"subnet": subnets}, "annotations": self._marks[ADDRESS_GROUP]}

    def rule(self, fq_name: FqName, action: str, service: Body, endpoint_1: Body, endpoint_2: Body) -> Body:
        """A firewall rule; `service` is a body from `service()`."""
        body = _Rule()
        body.fq_name = list(fq_name)
        body.parent_type = POLICY_MANAGEMENT_TYPE
        body.action_list = self._actions[action]
        body.service = service
        body.endpoint_1 = endpoint_1
        body.direction = ">"
        body.endpoint_2 = endpoint_2
        body.match_tags = self._match_tags
        body.annotations = self._marks[FIREWALL_RULE]
        return body.__dict__

    def any_rule(self, fq_name: FqName, action: str, endpoint_1: Body, endpoint_2: Body) -> Body:
        """A rule on every protocol and port: deny rules and the allow-all pass rules."""
        return self.rule(fq_name, action, self.service(ANY_SERVICE), endpoint_1, endpoint_2)

    def firewall_policy(self, fq_name: FqName, rule_refs: List[Body]) -> Body:
        """One of the cluster's own firewall policies (`<cluster>-allowall`, `<cluster>-denyall`)."""
        return {"fq_name": list(fq_name), "parent_type": POLICY_MANAGEMENT_TYPE,
                "firewall_rule_refs": rule_refs, "annotations": self._marks[FIREWALL_POLICY]}

    def network_policy(self, fq_name: FqName, rules: Sequence[Body], namespace: str, name: str,
                       uid: str, spec_sha256: str) -> Body:
        """The firewall policy of a NetworkPolicy, referring to its pass `rules` (their bodies)
        in order, its annotations marked with the NetworkPolicy's identity (SPEC 1)."""
        attrs = self._rule_sequences
        while len(attrs) < len(rules):
            attrs.append({"sequence": rule_sequence(len(attrs))})
        # Ref attrs and fq_name lists are shared with the rules: refs are read-only.
        refs = list(map(ref_body, map(_FQ_NAME, rules), attrs))
        # Pairs shared by every policy with that pair (names repeat across namespaces, namespaces
        # across their policies, specs across both); a pair is a non-empty dict, so `or` tells a miss.
        names, namespaces, specs = self._name_marks, self._namespace_marks, self._spec_marks
        annotations = _Annotations()
        annotations.key_value_pair = [
            self._cluster_mark, pair_body("k8s_uuid", uid), self._kind_mark[FIREWALL_POLICY],
            names.get(name) or _mark(names, "name", name),
            namespaces.get(namespace) or _mark(namespaces, "namespace", namespace), self._owner_mark,
            specs.get(spec_sha256) or _mark(specs, "spec_sha256", spec_sha256),
        ]  # sorted by key, as annotations_body() writes them
        body = _Policy()
        body.fq_name = list(fq_name)
        body.parent_type = POLICY_MANAGEMENT_TYPE
        body.firewall_rule_refs = refs
        body.annotations = annotations.__dict__
        return body.__dict__

    def application_policy_set(self, fq_name: FqName, application_tag: str,
                               policy_refs: List[Body]) -> Body:
        return {"fq_name": list(fq_name), "parent_type": POLICY_MANAGEMENT_TYPE,
                "tag_refs": [{"to": [application_tag], "attr": None}],
                "firewall_policy_refs": policy_refs,
                "annotations": self._marks[APPLICATION_POLICY_SET]}
