"""Typed config objects, serialised exactly as contrail-api expects them.

The daemon mostly moves plain dict bodies (the translator's output); these dataclasses exist for
code that builds or inspects objects by hand (tests, the embedded-server scenario, the benchmark)
and mirror the API's own structure field for field (`SubnetList.subnet`, `KeyValuePairs.key_value_pair`),
so one generic `to_body`/`from_body` pair serves every type without special cases.

`to_body()` returns the inner dict; the client adds the `{"firewall-rule": ...}` wrapper. Fields left
at None are omitted, which matters for updates: a partial PUT must not clear what it does not name.
Refs are `{"to", "uuid", "attr"}` (uuid only when known; attr always, null for plain refs).
`from_body()` keeps what it does not model (href, id_perms, back-refs, children) in `extra`,
read-only: `to_body()` never sends it back.
"""
from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Sequence, Type, TypeVar

S = TypeVar("S", bound="Struct")


def _struct(cls: type) -> Any:
    """An optional nested struct field, decoded with `cls.from_body`."""
    return field(default=None, metadata={"struct": cls})


def _items(cls: type) -> Any:
    """An optional list field whose items are decoded with `cls.from_body`."""
    return field(default=None, metadata={"items": cls})


def _encode(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_body()
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _decode(f: Field, value: Any) -> Any:
    if value is None:
        return None
    struct = f.metadata.get("struct")
    if struct is not None:
        return struct.from_body(value)
    items = f.metadata.get("items")
    if items is not None:
        if not isinstance(value, list):
            raise ValueError(f"{f.name}: expected a list, got {type(value).__name__}")
        return [items.from_body(v) for v in value]
    return value


@dataclass
class Struct:
    """A JSON object of the API; subclasses only declare fields."""

    def to_body(self) -> Dict[str, Any]:
        body: Dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None and f.metadata.get("body", True):
                body[f.name] = _encode(value)
        return body

    @classmethod
    def from_body(cls: Type[S], body: Mapping[str, Any]) -> S:
        if not isinstance(body, Mapping):
            raise ValueError(f"{cls.__name__}: expected a JSON object, got {type(body).__name__}")
        known = {f.name: f for f in fields(cls) if f.metadata.get("body", True)}
        missing = [n for n, f in known.items()
                   if f.default is MISSING and f.default_factory is MISSING and n not in body]
        if missing:
            raise ValueError(f"{cls.__name__}: missing {', '.join(missing)}")
        obj = cls(**{name: _decode(f, body[name]) for name, f in known.items() if name in body})
        obj._keep_extra({k: v for k, v in body.items() if k not in known})
        return obj

    def _keep_extra(self, extra: Dict[str, Any]) -> None:
        """Nested structs drop keys they do not model; VncObject keeps them."""


# --- nested property types ---------------------------------------------------------------------


@dataclass
class KeyValuePair(Struct):
    key: str
    value: str


@dataclass
class KeyValuePairs(Struct):
    """`annotations` of every object; kube-manager's ownership marks live here (SPEC 1)."""

    key_value_pair: List[KeyValuePair] = field(default_factory=list, metadata={"items": KeyValuePair})

    @classmethod
    def of(cls, pairs: Mapping[str, str]) -> "KeyValuePairs":
        return cls([KeyValuePair(k, v) for k, v in sorted(pairs.items())])

    def as_dict(self) -> Dict[str, str]:
        return {kv.key: kv.value for kv in self.key_value_pair}


@dataclass
class Subnet(Struct):
    ip_prefix: str
    ip_prefix_len: int


@dataclass
class SubnetList(Struct):
    subnet: List[Subnet] = field(default_factory=list, metadata={"items": Subnet})


@dataclass
class PortRange(Struct):
    start_port: int = 0
    end_port: int = 65535


@dataclass
class FirewallService(Struct):
    protocol: str = "any"
    protocol_id: Optional[int] = None
    src_ports: Optional[PortRange] = _struct(PortRange)
    dst_ports: Optional[PortRange] = _struct(PortRange)


@dataclass
class FirewallEndpoint(Struct):
    """At most one kind is set: tags, address_group, virtual_network or any."""

    tags: Optional[List[str]] = None
    tag_ids: Optional[List[int]] = None
    address_group: Optional[str] = None
    virtual_network: Optional[str] = None
    any: Optional[bool] = None


@dataclass
class ActionList(Struct):
    simple_action: str


@dataclass
class MatchTags(Struct):
    tag_list: List[str] = field(default_factory=list)


@dataclass
class Ref(Struct):
    to: List[str]
    uuid: Optional[str] = None
    attr: Optional[Dict[str, Any]] = None

    @classmethod
    def sequenced(cls, to: Sequence[str], sequence: str, uuid: Optional[str] = None) -> "Ref":
        """A ref whose attr is a FirewallSequence (policy -> rule, APS -> policy)."""
        return cls(list(to), uuid, {"sequence": sequence})

    def to_body(self) -> Dict[str, Any]:
        body: Dict[str, Any] = {"to": list(self.to), "attr": self.attr}
        if self.uuid is not None:
            body["uuid"] = self.uuid
        return body


# --- resources ---------------------------------------------------------------------------------


@dataclass
class VncObject(Struct):
    """Fields every resource has. `fq_name` is the identity; `name` is its last element."""

    resource_type: ClassVar[str] = ""
    default_parent_type: ClassVar[Optional[str]] = None  # None: global, no parent_type sent

    fq_name: List[str]
    parent_type: Optional[str] = None
    uuid: Optional[str] = None
    display_name: Optional[str] = None
    annotations: Optional[KeyValuePairs] = _struct(KeyValuePairs)
    tag_refs: Optional[List[Ref]] = _items(Ref)
    extra: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False, metadata={"body": False})

    def __post_init__(self) -> None:
        if (not isinstance(self.fq_name, list) or not self.fq_name
                or not all(isinstance(p, str) and p for p in self.fq_name)):
            raise ValueError(f"{self.resource_type}: fq_name must be a non-empty list of non-empty strings,"
                             f" got {self.fq_name!r}")
        if self.parent_type is None:
            self.parent_type = self.default_parent_type

    @property
    def name(self) -> str:
        return self.fq_name[-1]

    def _keep_extra(self, extra: Dict[str, Any]) -> None:
        self.extra = extra


@dataclass
class Tag(VncObject):
    resource_type: ClassVar[str] = "tag"

    tag_type_name: Optional[str] = None
    tag_value: Optional[str] = None
    tag_id: Optional[str] = None  # assigned by the server

    @classmethod
    def named(cls, tag_type: str, value: str, **kwargs: Any) -> "Tag":
        """A global tag `type=value`, named as the server names it."""
        return cls([f"{tag_type}={value}"], tag_type_name=tag_type, tag_value=value, **kwargs)


@dataclass
class AddressGroup(VncObject):
    resource_type: ClassVar[str] = "address-group"
    default_parent_type: ClassVar[Optional[str]] = "policy-management"

    address_group_prefix: Optional[SubnetList] = _struct(SubnetList)


@dataclass
class FirewallRule(VncObject):
    resource_type: ClassVar[str] = "firewall-rule"
    default_parent_type: ClassVar[Optional[str]] = "policy-management"

    action_list: Optional[ActionList] = _struct(ActionList)
    service: Optional[FirewallService] = _struct(FirewallService)
    endpoint_1: Optional[FirewallEndpoint] = _struct(FirewallEndpoint)
    endpoint_2: Optional[FirewallEndpoint] = _struct(FirewallEndpoint)
    direction: Optional[str] = None
    match_tags: Optional[MatchTags] = _struct(MatchTags)


@dataclass
class FirewallPolicy(VncObject):
    resource_type: ClassVar[str] = "firewall-policy"
    default_parent_type: ClassVar[Optional[str]] = "policy-management"

    firewall_rule_refs: Optional[List[Ref]] = _items(Ref)


@dataclass
class ApplicationPolicySet(VncObject):
    resource_type: ClassVar[str] = "application-policy-set"
    default_parent_type: ClassVar[Optional[str]] = "policy-management"

    firewall_policy_refs: Optional[List[Ref]] = _items(Ref)
    all_applications: Optional[bool] = None


@dataclass
class PolicyManagement(VncObject):
    resource_type: ClassVar[str] = "policy-management"


@dataclass
class Project(VncObject):
    resource_type: ClassVar[str] = "project"
    default_parent_type: ClassVar[Optional[str]] = "domain"


@dataclass
class VirtualNetwork(VncObject):
    resource_type: ClassVar[str] = "virtual-network"
    default_parent_type: ClassVar[Optional[str]] = "project"


@dataclass
class VirtualMachine(VncObject):
    resource_type: ClassVar[str] = "virtual-machine"


@dataclass
class VirtualMachineInterface(VncObject):
    resource_type: ClassVar[str] = "virtual-machine-interface"
    default_parent_type: ClassVar[Optional[str]] = "project"

    virtual_network_refs: Optional[List[Ref]] = _items(Ref)
    virtual_machine_refs: Optional[List[Ref]] = _items(Ref)


OBJECT_CLASSES: Dict[str, Type[VncObject]] = {
    cls.resource_type: cls
    for cls in (Tag, AddressGroup, FirewallRule, FirewallPolicy, ApplicationPolicySet, PolicyManagement,
                Project, VirtualNetwork, VirtualMachine, VirtualMachineInterface)
}


def object_from_body(obj_type: str, body: Mapping[str, Any]) -> VncObject:
    """The typed object for a body the client returned (inner dict, without the type wrapper)."""
    try:
        cls = OBJECT_CLASSES[obj_type]
    except KeyError:
        raise ValueError(f"no typed object for resource type {obj_type!r}") from None
    return cls.from_body(body)
