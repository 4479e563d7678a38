"""Property and reference-attribute validation, as the real server's generated schema checks do.

The real contrail-api validates every property of a request against the XSD-generated types
(`_validate_props_in_request`, `_validate_complex_type`, `_validate_simple_type`): unknown fields
inside a complex type, wrong scalar types and enum or range violations are 400s; integers given as
strings are converted; a falsy value is never checked; subnets are normalised to their network
address. Top-level keys that are not properties or refs of the type are silently dropped (the
Cassandra layer stores known fields only). This module carries the slice of that schema kube-manager
touches: the full property list of each type in `vnc_client.schema`, with the complex types the
firewall objects use modelled field by field and the rest accepted as opaque objects.

Deliberate difference: port numbers must be 0-65535 (the real schema also allows -1).
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from vnc_client.schema import SEQUENCED_REFS
from .errors import bad_request


@dataclass(frozen=True)
class FieldSpec:
    """The type of one field: a scalar kind, a named complex type, or an opaque object."""

    kind: str  # "string" | "integer" | "boolean" | "complex" | "opaque"
    type_name: str = ""  # the complex type's name
    enum: Tuple[str, ...] = ()
    bounds: Optional[Tuple[int, int]] = None
    is_list: bool = False

    def listed(self) -> "FieldSpec":
        return FieldSpec(self.kind, self.type_name, self.enum, self.bounds, True)


STRING = FieldSpec("string")
INTEGER = FieldSpec("integer")
BOOLEAN = FieldSpec("boolean")
OPAQUE = FieldSpec("opaque")  # a complex type we do not model: any JSON object


def _enum(*values: str) -> FieldSpec:
    return FieldSpec("string", enum=values)


def _int(low: int, high: int) -> FieldSpec:
    return FieldSpec("integer", bounds=(low, high))


def _complex(name: str) -> FieldSpec:
    return FieldSpec("complex", type_name=name)


PORT = _int(0, 65535)
DRAFT_MODE_STATE = _enum("created", "updated", "deleted")

COMPLEX_TYPES: Dict[str, Dict[str, FieldSpec]] = {
    "KeyValuePairs": {"key_value_pair": _complex("KeyValuePair").listed()},
    "KeyValuePair": {"key": STRING, "value": STRING},
    "IdPermsType": {
        "enable": BOOLEAN, "description": STRING, "created": STRING, "creator": STRING,
        "user_visible": BOOLEAN, "last_modified": STRING, "permissions": OPAQUE, "uuid": OPAQUE,
    },
    "PermType2": {"owner": STRING, "owner_access": _int(0, 7), "global_access": _int(0, 7),
                  "share": OPAQUE.listed()},
    "ActionListType": {
        "simple_action": _enum("deny", "pass"), "gateway_name": STRING, "apply_service": STRING.listed(),
        "mirror_to": OPAQUE, "assign_routing_instance": STRING, "log": BOOLEAN, "alert": BOOLEAN,
        "qos_action": STRING, "host_based_service": BOOLEAN,
    },
    "FirewallServiceType": {"protocol": STRING, "protocol_id": INTEGER, "src_ports": _complex("PortType"),
                            "dst_ports": _complex("PortType")},
    "PortType": {"start_port": PORT, "end_port": PORT},
    "FirewallRuleEndpointType": {
        "subnet": _complex("SubnetType"), "virtual_network": STRING, "address_group": STRING,
        "tags": STRING.listed(), "tag_ids": INTEGER.listed(), "any": BOOLEAN,
    },
    "SubnetType": {"ip_prefix": STRING, "ip_prefix_len": INTEGER},
    "SubnetListType": {"subnet": _complex("SubnetType").listed()},
    "FirewallRuleMatchTagsType": {"tag_list": STRING.listed()},
    "FirewallRuleMatchTagsTypeIdList": {"tag_type": INTEGER.listed()},
    "FirewallSequence": {"sequence": STRING},
    "FirewallServiceGroupType": {"firewall_service": _complex("FirewallServiceType").listed()},
    "MacAddressesType": {"mac_address": STRING.listed()},
}

_COMMON_PROPS: Dict[str, FieldSpec] = {
    "annotations": _complex("KeyValuePairs"), "display_name": STRING,
    "id_perms": _complex("IdPermsType"), "perms2": _complex("PermType2"),
}


def _props(**extra: FieldSpec) -> Dict[str, FieldSpec]:
    return {**_COMMON_PROPS, **extra}


# Every property of each type, as in the real schema (names from the generated vnc_api classes).
PROPERTIES: Dict[str, Dict[str, FieldSpec]] = {
    "domain": _props(domain_limits=OPAQUE),
    "project": _props(alarm_enable=BOOLEAN, enable_security_policy_draft=BOOLEAN, quota=OPAQUE,
                      vxlan_routing=BOOLEAN),
    "policy-management": _props(),
    "tag-type": _props(tag_type_id=STRING),
    "tag": _props(tag_id=STRING, tag_predefined=BOOLEAN, tag_type_name=STRING, tag_value=STRING),
    "address-group": _props(address_group_prefix=_complex("SubnetListType"), draft_mode_state=DRAFT_MODE_STATE),
    "service-group": _props(service_group_firewall_service_list=_complex("FirewallServiceGroupType"),
                            draft_mode_state=DRAFT_MODE_STATE),
    "firewall-rule": _props(
        action_list=_complex("ActionListType"), direction=_enum("<", ">", "<>"), draft_mode_state=DRAFT_MODE_STATE,
        endpoint_1=_complex("FirewallRuleEndpointType"), endpoint_2=_complex("FirewallRuleEndpointType"),
        match_tag_types=_complex("FirewallRuleMatchTagsTypeIdList"), match_tags=_complex("FirewallRuleMatchTagsType"),
        service=_complex("FirewallServiceType"),
    ),
    "firewall-policy": _props(draft_mode_state=DRAFT_MODE_STATE),
    "application-policy-set": _props(all_applications=BOOLEAN, draft_mode_state=DRAFT_MODE_STATE),
    "virtual-network": _props(
        address_allocation_mode=_enum("user-defined-subnet-preferred", "user-defined-subnet-only",
                                      "flat-subnet-preferred", "flat-subnet-only"),
        ecmp_hashing_include_fields=OPAQUE, export_route_target_list=OPAQUE, external_ipam=BOOLEAN,
        fabric_snat=BOOLEAN, flood_unknown_unicast=BOOLEAN, igmp_enable=BOOLEAN, import_route_target_list=OPAQUE,
        is_provider_network=BOOLEAN, is_shared=BOOLEAN, layer2_control_word=BOOLEAN, mac_aging_time=_int(0, 86400),
        mac_learning_enabled=BOOLEAN, mac_limit_control=OPAQUE, mac_move_control=OPAQUE,
        multi_policy_service_chains_enabled=BOOLEAN, pbb_etree_enable=BOOLEAN, pbb_evpn_enable=BOOLEAN,
        port_security_enabled=BOOLEAN, provider_properties=OPAQUE, route_target_list=OPAQUE,
        router_external=BOOLEAN, virtual_network_category=_enum("infra", "tenant", "internal", "routed"),
        virtual_network_fat_flow_protocols=OPAQUE, virtual_network_network_id=INTEGER,
        virtual_network_properties=OPAQUE, virtual_network_routed_properties=OPAQUE,
    ),
    "virtual-machine": _props(server_type=_enum("virtual-server", "baremetal-server", "container")),
    "virtual-machine-interface": _props(
        ecmp_hashing_include_fields=OPAQUE, igmp_enable=BOOLEAN, port_security_enabled=BOOLEAN,
        virtual_machine_interface_allowed_address_pairs=OPAQUE, virtual_machine_interface_bindings=OPAQUE,
        virtual_machine_interface_device_owner=STRING, virtual_machine_interface_dhcp_option_list=OPAQUE,
        virtual_machine_interface_disable_policy=BOOLEAN, virtual_machine_interface_fat_flow_protocols=OPAQUE,
        virtual_machine_interface_host_routes=OPAQUE,
        virtual_machine_interface_mac_addresses=_complex("MacAddressesType"),
        virtual_machine_interface_properties=OPAQUE, vlan_tag_based_bridge_domain=BOOLEAN, vrf_assign_table=OPAQUE,
    ),
}


class _Invalid(ValueError):
    """A validation failure deep inside a value; the caller words the 400."""


def validate_props(obj_type: str, body: Dict[str, Any], operation: str) -> None:
    """Check (and normalise in place) every property present in `body`.

    `operation` names the request in the message as the real server does ("create", "http_put",
    "ref-update").
    """
    for name, spec in PROPERTIES[obj_type].items():
        value = body.get(name)
        if not value:
            continue
        try:
            if spec.kind in ("complex", "opaque"):
                if not isinstance(value, dict):
                    raise bad_request(f"Bad property in {operation}: Error in property {name} type "
                                      f"{spec.type_name or 'object'} value of {value!r}")
                if spec.kind == "complex":
                    _check_complex(spec.type_name, value)
            else:
                body[name] = _check_scalar(name, spec, value)
        except _Invalid as exc:
            detail = f"{name} value {value!r} " if spec.kind == "complex" else ""
            raise bad_request(f"Bad property in {operation}: Error validating property {detail}{exc}") from None


def validate_ref_attrs(obj_type: str, body: Mapping[str, Any], operation: str) -> None:
    """Check the attribute of every sequenced ref (FirewallSequence) present in `body`."""
    for ref_type, ref_field in SEQUENCED_REFS:
        if ref_type != obj_type:
            continue
        for ref in body.get(ref_field) or []:
            try:
                if not isinstance(ref, dict) or "attr" not in ref:
                    raise _Invalid("a reference needs an 'attr' (FirewallSequence)")
                attr = ref["attr"]
                if attr is not None:
                    if not isinstance(attr, dict):
                        raise _Invalid("attr must be an object")
                    _check_complex("FirewallSequence", attr)
            except _Invalid as exc:
                raise bad_request(f"Bad reference in {operation}: Error validating reference {ref_field} "
                                  f"value {ref!r} {exc}") from None


def _check_complex(type_name: str, body: Any) -> None:
    if body is None:
        return
    if not isinstance(body, dict):
        raise _Invalid(f"{type_name} must be an object, got {body!r}")
    fields = COMPLEX_TYPES[type_name]
    for key in list(body):
        if key not in fields:
            raise _Invalid(f"class {type_name} does not have field {key}")
        spec = fields[key]
        value = body[key]
        if not value:
            continue
        if spec.is_list and not isinstance(value, list):
            raise _Invalid(f"Field {key} must be a list. Received value: {value!r}")
        items = value if spec.is_list else [value]
        for index, item in enumerate(items):
            if spec.kind == "complex":
                _check_complex(spec.type_name, item)
            elif spec.kind == "opaque":
                continue
            else:
                items[index] = _check_scalar(key, spec, item)
        if not spec.is_list:
            body[key] = items[0]
    if type_name == "SubnetType":
        _normalise_subnet(body)


def _check_scalar(name: str, spec: FieldSpec, value: Any) -> Any:
    if value is None:
        return value
    if spec.kind == "integer":
        if not isinstance(value, int):
            try:
                value = int(value)
            except (TypeError, ValueError):
                raise _Invalid(f"{name}: integer value expected instead of {value!r}") from None
        if spec.bounds and not spec.bounds[0] <= value <= spec.bounds[1]:
            raise _Invalid(f"{name}: value must be between {spec.bounds[0]} and {spec.bounds[1]}")
    elif spec.kind == "boolean":
        if not isinstance(value, bool):
            raise _Invalid(f"{name}: true/false expected instead of {value!r}")
    else:
        if not isinstance(value, str):
            raise _Invalid(f"{name}: string value expected instead of {value!r}")
        if spec.enum and value not in spec.enum:
            raise _Invalid(f"{name}: value must be one of {list(spec.enum)}")
    return value


def _normalise_subnet(subnet: Dict[str, Any]) -> None:
    """As the real server: the prefix must parse, and host bits are masked off."""
    text = f"{subnet.get('ip_prefix')}/{subnet.get('ip_prefix_len')}"
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        raise _Invalid(f"Subnet type '{text}' is invalid") from None
    subnet["ip_prefix"] = str(network.network_address)
    subnet["ip_prefix_len"] = network.prefixlen
