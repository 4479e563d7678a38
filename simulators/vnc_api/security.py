"""Firewall objects (rules, policies, application policy sets, address and service groups) with the
real server's rules (resources/firewall_rule.py, _security_base.py and friends).

A firewall rule:
- has exactly one of `service` and `service_group_refs`;
- names its protocol by one of the known names (`tcp`, `udp`, `sctp`, `icmp`, `icmp6`, `any`, ...)
  or a number 0-255, and gets `protocol_id`; port ranges must not run backwards;
- has at most one kind of match per endpoint (`tags`, `address_group`, `virtual_network`, `subnet`,
  `any`);
- gets its `tag_refs` and `address_group_refs` from its endpoints (setting them directly is a 400),
  every endpoint tag and address group must exist (404), and `tag_ids` are filled in;
- compiles `match_tags` into `match_tag_types` (default: the `application` type).
A global firewall object (fq_name of length 2) may only refer to global ones. `draft_mode_state` is
read-only on every security object.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from .errors import bad_request, fq_repr, not_found, unknown_id
from .hooks import Change, HookedApi, ResourceHooks, Undo
from .store import Ref, RefMap, StoredObject
from .tags import PREDEFINED_TAG_TYPES, tag_type_id, underscored


# IANA protocol numbers under the names the config API accepts (Contrail adds "icmp6" and "any").
PROTOCOLS: Dict[str, int] = {
    "any": 0, "hopopt": 0, "ip": 0, "icmp": 1, "igmp": 2, "ipip": 4, "tcp": 6, "egp": 8, "udp": 17,
    "dccp": 33, "ipv6-encap": 41, "ipv6-route": 43, "ipv6-frag": 44, "rsvp": 46, "gre": 47, "esp": 50,
    "ah": 51, "ipv6-icmp": 58, "icmpv6": 58, "icmp6": 58, "ipv6-nonxt": 59, "ipv6-opts": 60, "ospf": 89,
    "vrrp": 112, "pgm": 113, "sctp": 132, "udplite": 136,
}
DEFAULT_MATCH_TAG_TYPES = [PREDEFINED_TAG_TYPES["application"]]
_ENDPOINTS = ("endpoint_1", "endpoint_2")
_ENDPOINT_KINDS = ("tags", "address_group", "virtual_network", "subnet", "any")


def _title(obj_type: str) -> str:
    return underscored(obj_type).replace("_", " ").title()


def _check_draft_state(props: Mapping[str, Any]) -> None:
    if "draft_mode_state" in props:
        raise bad_request("Security resource property 'draft_mode_state' is only readable")


def _check_scope(obj: StoredObject, ref_fields: Mapping[str, Mapping[str, Ref]], *checked: str) -> None:
    """A global security object (fq_name of length 2) may refer to global ones only."""
    if len(obj.fq_name) != 2:
        return
    for ref_field in checked:
        for ref in ref_fields.get(ref_field, {}).values():
            if len(ref.to) != 2:
                ref_type = ref_field[: -len("_refs")]
                raise bad_request(
                    f"Global {_title(obj.type)} {':'.join(obj.fq_name)} ({obj.uuid}) cannot reference a scoped "
                    f"{ref_type.replace('_', ' ').title()} {':'.join(ref.to)} ({ref.uuid})")


class SecurityHooks(ResourceHooks):
    """Address and service groups: only the read-only draft state."""

    def pre_create(self, api: HookedApi, obj: StoredObject, undo: Undo) -> None:
        _check_draft_state(obj.props)

    def pre_update(self, api: HookedApi, current: StoredObject, change: Change) -> None:
        _check_draft_state(change.props)


class FirewallPolicyHooks(SecurityHooks):
    def pre_create(self, api: HookedApi, obj: StoredObject, undo: Undo) -> None:
        super().pre_create(api, obj, undo)
        _check_scope(obj, obj.refs, "firewall_rule_refs")

    def pre_update(self, api: HookedApi, current: StoredObject, change: Change) -> None:
        super().pre_update(api, current, change)
        _check_scope(current, change.new_refs(current), "firewall_rule_refs")


class ApplicationPolicySetHooks(SecurityHooks):
    def pre_create(self, api: HookedApi, obj: StoredObject, undo: Undo) -> None:
        super().pre_create(api, obj, undo)
        _check_all_applications(obj.props)
        _check_scope(obj, obj.refs, "firewall_policy_refs")

    def pre_update(self, api: HookedApi, current: StoredObject, change: Change) -> None:
        super().pre_update(api, current, change)
        _check_all_applications(change.props)
        _check_scope(current, change.new_refs(current), "firewall_policy_refs")


def _check_all_applications(props: Mapping[str, Any]) -> None:
    if "all_applications" in props:
        raise bad_request("Application policy set 'all-applications' flag is read-only")


class FirewallRuleHooks(SecurityHooks):
    _SCOPED_REFS = ("address_group_refs", "service_group_refs", "virtual_network_refs")

    def pre_create(self, api: HookedApi, obj: StoredObject, undo: Undo) -> None:
        super().pre_create(api, obj, undo)
        _check_scope(obj, obj.refs, *self._SCOPED_REFS)
        _check_service(obj.props.get("service"), obj.refs.get("service_group_refs"))
        if "match_tags" not in obj.props:
            obj.props["match_tag_types"] = {"tag_type": list(DEFAULT_MATCH_TAG_TYPES)}
        _fix_protocol(obj.props)
        _compile_match_tags(api, obj.props)
        _check_endpoints(obj.props)
        if obj.refs.get("tag_refs"):
            raise bad_request("Cannot directly define Tags reference from a Firewall Rule. "
                              "Use 'tags' endpoints property in the Firewall Rule")
        if obj.refs.get("address_group_refs"):
            raise bad_request("Cannot directly define Address Group reference from a Firewall Rule. "
                              "Use 'address_group' endpoints property in the Firewall Rule")
        tag_refs = _endpoint_tag_refs(api, obj, obj.props, {})
        ag_refs = _endpoint_address_group_refs(api, obj.props, {})
        for ref_field, refs in (("tag_refs", tag_refs), ("address_group_refs", ag_refs)):
            if refs:
                obj.refs[ref_field] = refs
            else:
                obj.refs.pop(ref_field, None)

    def pre_update(self, api: HookedApi, current: StoredObject, change: Change) -> None:
        super().pre_update(api, current, change)
        _check_scope(current, change.new_refs(current), *self._SCOPED_REFS)
        service = change.props["service"] if "service" in change.props else current.props.get("service")
        sg_refs = (change.refs["service_group_refs"] if "service_group_refs" in change.refs
                   else current.refs.get("service_group_refs"))
        _check_service(service, sg_refs)
        _fix_protocol(change.props)
        _compile_match_tags(api, change.props)
        _check_endpoints(change.props)
        if "tag_refs" in change.refs:
            raise bad_request("Cannot directly define Tags reference from a Firewall Rule. "
                              "Use 'tags' endpoints property in the Firewall Rule")
        if "address_group_refs" in change.refs:
            raise bad_request("Cannot directly define Address Group reference from a Firewall Rule. "
                              "Use 'address_group' endpoints property in the Firewall Rule")
        for ref_field, refs in (
                ("tag_refs", _endpoint_tag_refs(api, current, change.props, current.props)),
                ("address_group_refs", _endpoint_address_group_refs(api, change.props, current.props))):
            if refs.keys() != current.refs.get(ref_field, {}).keys():
                change.refs[ref_field] = refs


def _check_service(service: Any, service_group_refs: Optional[Mapping[str, Ref]]) -> None:
    if service and service_group_refs:
        raise bad_request("Firewall Rule cannot have both defined 'service' property and Service Group reference(s)")
    if not service and not service_group_refs:
        raise bad_request("Firewall Rule requires at least 'service' property or Service Group references(s)")


def _fix_protocol(props: Dict[str, Any]) -> None:
    """Validate the protocol and port ranges of `service` and fill in `protocol_id`."""
    service = props.get("service")
    if not service:
        return
    protocol = service.get("protocol")
    if protocol:
        if protocol.isdigit():
            protocol_id = int(protocol)
            if protocol_id > 255:
                raise bad_request(f"Invalid protocol: {protocol}")
        elif protocol in PROTOCOLS:
            protocol_id = PROTOCOLS[protocol]
        else:
            raise bad_request(f"Invalid protocol: {protocol}")
        service["protocol_id"] = protocol_id
    for key in ("src_ports", "dst_ports"):
        ports = service.get(key) or {}
        start, end = ports.get("start_port"), ports.get("end_port")
        if start is not None and end is not None and start > end:
            raise bad_request(f"Invalid {key} range {start}-{end}: the start port is above the end port")


def _compile_match_tags(api: HookedApi, props: Dict[str, Any]) -> None:
    if "match_tags" not in props:
        return
    type_ids = []
    for type_name in (props["match_tags"] or {}).get("tag_list") or []:
        type_name = type_name.lower()
        if type_name == "label":
            raise bad_request("labels not allowed as match-tags")
        type_ids.append(tag_type_id(api, type_name))
    props["match_tag_types"] = {"tag_type": type_ids}


def _check_endpoints(props: Mapping[str, Any]) -> None:
    for ep_name in _ENDPOINTS:
        endpoint = props.get(ep_name)
        if endpoint is None:
            continue
        if sum(1 for kind in _ENDPOINT_KINDS if endpoint.get(kind)) > 1:
            raise bad_request("Endpoint is limited to only one endpoint type at a time")


def _endpoint_tag_refs(api: HookedApi, obj: StoredObject, new: Dict[str, Any],
                       old: Mapping[str, Any]) -> RefMap:
    """Tag refs of the endpoints (new ones where given, else the stored ones); fills `tag_ids`."""
    refs: RefMap = {}
    for ep_name in _ENDPOINTS:
        is_new = ep_name in new
        endpoint = new.get(ep_name) if is_new else old.get(ep_name)
        if not endpoint:
            continue
        tag_ids = []
        for tag_name in sorted(set(endpoint.get("tags") or [])):
            tag = api.lookup("tag", _endpoint_tag_fq_name(obj, tag_name))
            if tag is None:
                raise not_found(unknown_id(f"tag {fq_repr(_endpoint_tag_fq_name(obj, tag_name))}"))
            tag_ids.append(int(tag.props["tag_id"], 0))
            refs[tag.uuid] = Ref(list(tag.fq_name), tag.uuid, None)
        if is_new:
            endpoint["tag_ids"] = tag_ids
    return refs


def _endpoint_tag_fq_name(obj: StoredObject, tag_name: str) -> List[str]:
    """Endpoint tags are global with a `global:` prefix, else in the rule's own scope."""
    if "=" not in tag_name:
        raise not_found(f"Invalid tag name '{tag_name}'")
    if tag_name.startswith("global:"):
        return [tag_name[len("global:"):]]
    if obj.parent_type == "policy-management":
        return obj.fq_name[:-2] + [tag_name]
    if obj.parent_type == "project":
        return obj.fq_name[:-1] + [tag_name]
    raise bad_request(f"Firewall rule {obj.parent_type} ({':'.join(obj.fq_name)}) parent type "
                      f"'{obj.uuid}' is not supported as security resource scope")


def _endpoint_address_group_refs(api: HookedApi, new: Mapping[str, Any], old: Mapping[str, Any]) -> RefMap:
    refs: RefMap = {}
    for ep_name in _ENDPOINTS:
        endpoint = new.get(ep_name) if ep_name in new else old.get(ep_name)
        name = (endpoint or {}).get("address_group")
        if not name:
            continue
        group = api.lookup("address-group", name.split(":"))
        if group is None:
            raise not_found(f"No Address Group object found for {name}")
        refs[group.uuid] = Ref(list(group.fq_name), group.uuid, None)
    return refs
