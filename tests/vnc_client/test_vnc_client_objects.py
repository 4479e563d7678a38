"""Typed objects: round trips, partial bodies, and the official library as the oracle of field names."""
from __future__ import annotations

import json
from typing import Any, Dict

import pytest
from vnc_api import vnc_api as official
from vnc_api.gen import resource_client

from vnc_client import objects as o
from vnc_client.schema import RESOURCE_TYPES

PM = ["default-policy-management"]
ANNOTATIONS = o.KeyValuePairs.of({"owner": "k8s", "cluster": "k8s", "kind": "firewall-rule"})

SAMPLES = [
    o.Tag.named("application", "k8s", annotations=ANNOTATIONS),
    o.AddressGroup(PM + ["10.0.0.0/8"], annotations=ANNOTATIONS,
                   address_group_prefix=o.SubnetList([o.Subnet("10.0.0.0", 8)])),
    o.FirewallRule(
        PM + ["k8s-default-ingress-np-0-podSelector-0-0"], annotations=ANNOTATIONS,
        action_list=o.ActionList("pass"),
        service=o.FirewallService("tcp", dst_ports=o.PortRange(80, 80), src_ports=o.PortRange()),
        endpoint_1=o.FirewallEndpoint(tags=["application=k8s", "namespace=default"]),
        endpoint_2=o.FirewallEndpoint(address_group="default-policy-management:10.0.0.0/8"),
        direction=">", match_tags=o.MatchTags()),
    o.FirewallPolicy(PM + ["k8s-default-np"], firewall_rule_refs=[
        o.Ref.sequenced(PM + ["k8s-default-ingress-np-0-podSelector-0-0"], "00000.0", uuid="r-1")]),
    o.ApplicationPolicySet(PM + ["k8s"], all_applications=False,
                           tag_refs=[o.Ref(["application=k8s"])],
                           firewall_policy_refs=[o.Ref.sequenced(PM + ["k8s-allowall"], "3.0")]),
    o.PolicyManagement(PM),
    o.Project(["default-domain", "default-project"]),
    o.VirtualNetwork(["default-domain", "default-project", "pod-network"]),
    o.VirtualMachine(["0f8c6c2e-3a1b-4f7e-9a55-0d1c2b3a4f5e"]),
    o.VirtualMachineInterface(
        ["default-domain", "default-project", "pod-vmi"],
        virtual_network_refs=[o.Ref(["default-domain", "default-project", "pod-network"])],
        virtual_machine_refs=[o.Ref(["0f8c6c2e-3a1b-4f7e-9a55-0d1c2b3a4f5e"], uuid="vm-1")]),
]


def prune(value: Any) -> Any:
    """Drop what carries no information (null, [], {}, false) so two serialisers can be compared."""
    if isinstance(value, dict):
        kept = {k: prune(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, [], {}, False)}
    if isinstance(value, list):
        return [prune(v) for v in value]
    return value


def restrict(value: Any, shape: Any) -> Any:
    """`value` keeping only the dict keys `shape` has (the official classes add server defaults)."""
    if isinstance(value, dict) and isinstance(shape, dict):
        return {k: restrict(value[k], shape[k]) for k in shape if k in value}
    if isinstance(value, list) and isinstance(shape, list) and len(value) == len(shape):
        return [restrict(v, s) for v, s in zip(value, shape)]
    return value


def official_body(resource: o.VncObject) -> Dict[str, Any]:
    cls = official.obj_type_to_vnc_class(resource.resource_type, resource_client.__name__)
    parsed = cls.from_dict(**resource.to_body())
    return json.loads(json.dumps(parsed, default=official._obj_serializer_all))


@pytest.mark.parametrize("resource", SAMPLES, ids=lambda r: r.resource_type)
def test_body_means_the_same_to_the_official_library(resource):
    # The official classes silently drop unknown fields, so a misspelt field shows up as a difference.
    ours = prune(resource.to_body())
    assert restrict(prune(official_body(resource)), ours) == ours


@pytest.mark.parametrize("resource", SAMPLES, ids=lambda r: r.resource_type)
def test_round_trip_through_a_read_answer(resource):
    answer = dict(resource.to_body(), uuid="u-1", href="http://vnc/x/u-1", name=resource.name,
                  id_perms={"enable": True})
    back = o.object_from_body(resource.resource_type, answer)
    assert back == type(resource)(**{**resource.__dict__, "uuid": "u-1"})
    assert back.extra == {"href": "http://vnc/x/u-1", "name": resource.name, "id_perms": {"enable": True}}
    assert "href" not in back.to_body() and back.to_body()["uuid"] == "u-1"


def test_every_typed_object_is_in_the_schema_table_with_a_valid_default_parent():
    for name, cls in o.OBJECT_CLASSES.items():
        rt = RESOURCE_TYPES[name]
        assert cls.default_parent_type in rt.parent_types or (
            cls.default_parent_type is None and "config-root" in rt.parent_types), name


def test_exact_firewall_rule_body():
    assert SAMPLES[2].to_body() == {
        "fq_name": PM + ["k8s-default-ingress-np-0-podSelector-0-0"],
        "parent_type": "policy-management",
        "annotations": {"key_value_pair": [{"key": "cluster", "value": "k8s"}, {"key": "kind", "value": "firewall-rule"},
                                           {"key": "owner", "value": "k8s"}]},
        "action_list": {"simple_action": "pass"},
        "service": {"protocol": "tcp", "src_ports": {"start_port": 0, "end_port": 65535},
                    "dst_ports": {"start_port": 80, "end_port": 80}},
        "endpoint_1": {"tags": ["application=k8s", "namespace=default"]},
        "endpoint_2": {"address_group": "default-policy-management:10.0.0.0/8"},
        "direction": ">",
        "match_tags": {"tag_list": []},
    }


def test_refs_always_carry_attr_and_carry_uuid_only_when_known():
    assert o.Ref(["application=k8s"]).to_body() == {"to": ["application=k8s"], "attr": None}
    assert o.Ref.sequenced(["a"], "1.0", uuid="u").to_body() == {"to": ["a"], "attr": {"sequence": "1.0"}, "uuid": "u"}


def test_unset_fields_are_left_out_so_a_partial_update_changes_nothing_else():
    vmi = o.VirtualMachineInterface(["default-domain", "default-project", "v"])
    assert vmi.to_body() == {"fq_name": ["default-domain", "default-project", "v"], "parent_type": "project"}
    assert o.FirewallPolicy(PM + ["p"], firewall_rule_refs=[]).to_body()["firewall_rule_refs"] == []


def test_global_objects_have_no_parent_type_and_names_come_from_fq_name():
    tag = o.Tag.named("namespace", "default")
    assert tag.parent_type is None and "parent_type" not in tag.to_body()
    assert tag.name == "namespace=default"
    assert o.KeyValuePairs.of({"b": "2", "a": "1"}).as_dict() == {"a": "1", "b": "2"}


@pytest.mark.parametrize("fq_name", [[], "default-policy-management:x", ["a", ""], ["a", 1]])
def test_bad_fq_names_are_refused(fq_name):
    with pytest.raises(ValueError, match="fq_name must be"):
        o.FirewallRule(fq_name)


@pytest.mark.parametrize("body, message", [
    ({"uuid": "u"}, "missing fq_name"),
    ("not an object", "expected a JSON object"),
    ({"fq_name": ["a", "b"], "firewall_rule_refs": {"to": ["x"]}}, "expected a list"),
    ({"fq_name": ["a", "b"], "firewall_rule_refs": [{"attr": None}]}, "Ref: missing to"),
])
def test_bad_bodies_are_refused_with_a_reason(body, message):
    with pytest.raises(ValueError, match=message):
        o.FirewallPolicy.from_body(body)


def test_unknown_type_has_no_typed_object():
    with pytest.raises(ValueError, match="no typed object"):
        o.object_from_body("service-group", {"fq_name": ["x"]})
