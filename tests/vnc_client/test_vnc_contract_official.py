"""Contract test: the official Contrail client library drives the embedded config API.

`contrail-api-client` (`vnc_api`) is the library the real contrail-kube-manager uses. It parses the
home page to find its URLs, sends the real bodies and parses the real answers into typed objects;
whatever it accepts from the embedded server is evidence that the server speaks the real API. The
scenario is kube-manager's: tags, an address group, firewall rules, a firewall policy with sequenced
rule refs, an application policy set, a workload (VN, VM, VMI) tagged by set-tag, lookups, the
expected errors (409 duplicate, 404 unknown, 409 delete of a referenced object) and clean-up.
"""
from __future__ import annotations

from typing import List

import pytest
from vnc_api.exceptions import BadRequest, NoIdError, RefsExistError
from vnc_api.gen.resource_client import (AddressGroup, ApplicationPolicySet, FirewallPolicy, FirewallRule, Tag,
                                         VirtualMachine, VirtualMachineInterface, VirtualNetwork)
from vnc_api.gen.resource_xsd import (ActionListType, FirewallRuleEndpointType, FirewallRuleMatchTagsType,
                                      FirewallSequence, FirewallServiceType, KeyValuePair, KeyValuePairs, PortType,
                                      SubnetListType, SubnetType)
from vnc_api.vnc_api import VncApi

from simulators.vnc_api.runner import BackgroundServer

UNKNOWN = "11111111-2222-4333-8444-555555555555"


@pytest.fixture
def lib(server: BackgroundServer) -> VncApi:
    return VncApi(api_server_host=server.host, api_server_port=server.port, auth_type="noauth")


def owner_marks(kind: str) -> KeyValuePairs:
    return KeyValuePairs([KeyValuePair("owner", "k8s"), KeyValuePair("cluster", "k8s"), KeyValuePair("kind", kind)])


def rule(pm, name: str, ep1: FirewallRuleEndpointType, ep2: FirewallRuleEndpointType, action: str = "pass",
         service: FirewallServiceType = None) -> FirewallRule:
    return FirewallRule(
        name=name, parent_obj=pm, action_list=ActionListType(simple_action=action), direction=">",
        endpoint_1=ep1, endpoint_2=ep2, match_tags=FirewallRuleMatchTagsType(tag_list=[]),
        service=service or FirewallServiceType(protocol="tcp", dst_ports=PortType(80, 80)),
        annotations=owner_marks("firewall-rule"))


def sequences(refs: List[dict]) -> List[tuple]:
    """(sequence, rule name) in sequence order: the server returns refs in uuid order, as the real one."""
    return sorted((r["attr"].sequence, r["to"][-1]) for r in refs)


def test_full_kube_manager_scenario_through_the_official_library(server, lib):
    pm = lib.policy_management_read(fq_name=["default-policy-management"])
    project = lib.project_read(fq_name=["default-domain", "default-project"])
    assert pm.get_fq_name() == ["default-policy-management"] and project.uuid

    # Tags: the type is lower-cased, ids are type << 16 | value; a duplicate is a 409.
    app = Tag(tag_type_name="application", tag_value="k8s")
    lib.tag_create(app)
    ns = Tag(tag_type_name="Namespace", tag_value="default")
    lib.tag_create(ns)
    sel = Tag(tag_type_name="label", tag_value="k8s-sel-0123456789ab")
    lib.tag_create(sel)
    app, ns = lib.tag_read(id=app.uuid), lib.tag_read(fq_name=["namespace=default"])
    assert (app.name, app.tag_id) == ("application=k8s", "0x00010000")
    assert (ns.tag_type_name, ns.tag_id) == ("namespace", "0x00ff0000")
    assert ns.get_tag_type_refs()[0]["to"] == ["namespace"]
    with pytest.raises(RefsExistError):
        lib.tag_create(Tag(tag_type_name="application", tag_value="k8s"))

    # An address group, shared by rules; the prefix comes back normalised.
    group = AddressGroup(name="10.0.0.0_8", parent_obj=pm, annotations=owner_marks("address-group"),
                         address_group_prefix=SubnetListType(subnet=[SubnetType("10.1.2.3", 8)]))
    lib.address_group_create(group)
    group = lib.address_group_read(fq_name=["default-policy-management", "10.0.0.0_8"])
    assert group.get_address_group_prefix().get_subnet()[0].ip_prefix == "10.0.0.0"

    # Firewall rules: endpoint tags and groups become refs, with tag ids and the protocol id.
    ingress = rule(pm, "k8s-default-ingress-np-0-podSelector-0-0",
                   FirewallRuleEndpointType(tags=["application=k8s", "namespace=default"]),
                   FirewallRuleEndpointType(tags=["label=k8s-sel-0123456789ab"]))
    egress = rule(pm, "k8s-default-egress-np-0-ipBlock-0-cidr-10.0.0.0_8-0",
                  FirewallRuleEndpointType(tags=["label=k8s-sel-0123456789ab"]),
                  FirewallRuleEndpointType(address_group="default-policy-management:10.0.0.0_8"))
    deny = rule(pm, "k8s-default-ingress-np-denyall", FirewallRuleEndpointType(any=True),
                FirewallRuleEndpointType(tags=["label=k8s-sel-0123456789ab"]), action="deny",
                service=FirewallServiceType(protocol="any", dst_ports=PortType(0, 65535)))
    for fr in (ingress, egress, deny):
        lib.firewall_rule_create(fr)
    read = lib.firewall_rule_read(id=ingress.uuid)
    assert {r["to"][0] for r in read.get_tag_refs()} == {"application=k8s", "namespace=default",
                                                         "label=k8s-sel-0123456789ab"}
    assert sorted(read.get_endpoint_1().get_tag_ids()) == [0x00010000, 0x00FF0000]
    assert read.get_service().get_protocol_id() == 6
    assert [r["uuid"] for r in lib.firewall_rule_read(id=egress.uuid).get_address_group_refs()] == [group.uuid]

    # A firewall policy with sequenced rule refs, and the cluster APS tagged application=k8s.
    policy = FirewallPolicy(name="k8s-default-np", parent_obj=pm, annotations=owner_marks("firewall-policy"))
    policy.add_firewall_rule(egress, FirewallSequence(sequence="00001.0"))
    policy.add_firewall_rule(ingress, FirewallSequence(sequence="00000.0"))
    lib.firewall_policy_create(policy)
    denyall = FirewallPolicy(name="k8s-denyall", parent_obj=pm)
    denyall.add_firewall_rule(deny, FirewallSequence(sequence="1.000000000001"))
    lib.firewall_policy_create(denyall)
    assert sequences(lib.firewall_policy_read(id=policy.uuid).get_firewall_rule_refs()) == [
        ("00000.0", ingress.name), ("00001.0", egress.name)]
    aps = ApplicationPolicySet(name="k8s", parent_obj=pm)
    aps.add_firewall_policy(policy, FirewallSequence(sequence="1.123456789012"))
    aps.add_firewall_policy(denyall, FirewallSequence(sequence="2.0"))
    aps.add_tag(app)
    lib.application_policy_set_create(aps)
    aps = lib.application_policy_set_read(fq_name=["default-policy-management", "k8s"])
    assert sequences(aps.get_firewall_policy_refs()) == [("1.123456789012", policy.name), ("2.0", denyall.name)]
    assert [r["uuid"] for r in aps.get_tag_refs()] == [app.uuid]

    # A sequence changes with a ref-update (ADD on an existing ref updates its attr).
    lib.ref_update("application-policy-set", aps.uuid, "firewall-policy", denyall.uuid, None, "ADD",
                   FirewallSequence(sequence="3.0"))
    assert sequences(lib.application_policy_set_read(id=aps.uuid).get_firewall_policy_refs())[-1] == (
        "3.0", denyall.name)

    # The workload: a VMI needs its network; tags go on by set-tag.
    vn = VirtualNetwork("k8s-default-pod-network", parent_obj=project)
    lib.virtual_network_create(vn)
    vm = VirtualMachine("0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9")
    lib.virtual_machine_create(vm)
    with pytest.raises(BadRequest):
        lib.virtual_machine_interface_create(VirtualMachineInterface("orphan", parent_obj=project))
    vmi = VirtualMachineInterface("pod-eth0", parent_obj=project)
    vmi.add_virtual_network(vn)
    vmi.add_virtual_machine(vm)
    lib.virtual_machine_interface_create(vmi)
    lib.set_tag(vmi, "application", "k8s", is_global=True)
    lib.set_tags(vmi, {"namespace": {"is_global": True, "value": "default"},
                       "label": {"is_global": True, "add_values": ["k8s-sel-0123456789ab"]}})
    vmi = lib.virtual_machine_interface_read(id=vmi.uuid)
    assert sorted(r["to"][0] for r in vmi.get_tag_refs()) == [
        "application=k8s", "label=k8s-sel-0123456789ab", "namespace=default"]
    assert vmi.get_virtual_machine_interface_mac_addresses().get_mac_address()
    vm = lib.virtual_machine_read(id=vm.uuid, fields=["virtual_machine_interface_back_refs"])
    assert [r["uuid"] for r in vm.get_virtual_machine_interface_back_refs()] == [vmi.uuid]

    # Lookups by fq_name and uuid, lists with selectors.
    assert lib.fq_name_to_id("firewall-rule", deny.get_fq_name()) == deny.uuid
    assert lib.id_to_fq_name_type(policy.uuid) == (policy.get_fq_name(), "firewall-policy")
    listed = lib.firewall_rules_list(parent_id=pm.uuid)["firewall-rules"]
    assert {r["uuid"] for r in listed} == {ingress.uuid, egress.uuid, deny.uuid}
    detailed = lib.firewall_rules_list(detail=True, filters={"direction": ">"})
    assert {r.get_action_list().get_simple_action() for r in detailed} == {"pass", "deny"}
    assert [p["uuid"] for p in lib.firewall_policys_list(back_ref_id=[deny.uuid])["firewall-policys"]] == [
        denyall.uuid]
    assert lib.virtual_machine_interfaces_list(back_ref_id=[vm.uuid])["virtual-machine-interfaces"][0]["uuid"] == (
        vmi.uuid)

    # Updates through the library: a property, and refs diffed into ref-updates.
    read = lib.firewall_rule_read(id=ingress.uuid)
    read.set_direction("<>")
    lib.firewall_rule_update(read)
    assert lib.firewall_rule_read(id=ingress.uuid).get_direction() == "<>"
    policy = lib.firewall_policy_read(id=policy.uuid)
    policy.del_firewall_rule(egress)
    lib.firewall_policy_update(policy)
    assert sequences(lib.firewall_policy_read(id=policy.uuid).get_firewall_rule_refs()) == [("00000.0", ingress.name)]

    # The expected errors: duplicate 409, unknown 404, delete of referenced objects 409.
    with pytest.raises(RefsExistError):
        lib.firewall_rule_create(rule(pm, ingress.name, FirewallRuleEndpointType(any=True),
                                      FirewallRuleEndpointType(any=True)))
    with pytest.raises(NoIdError):
        lib.firewall_rule_read(id=UNKNOWN)
    with pytest.raises(NoIdError):
        lib.fq_name_to_id("firewall-rule", ["default-policy-management", "nope"])
    for delete in (lambda: lib.firewall_rule_delete(id=ingress.uuid), lambda: lib.tag_delete(id=app.uuid),
                   lambda: lib.firewall_policy_delete(id=policy.uuid), lambda: lib.virtual_network_delete(id=vn.uuid),
                   lambda: lib.address_group_delete(id=group.uuid)):
        with pytest.raises(RefsExistError):
            delete()

    # Clean-up in dependency order leaves only what the server started with.
    lib.unset_tag(vmi, "label")
    assert sorted(r["to"][0] for r in lib.virtual_machine_interface_read(id=vmi.uuid).get_tag_refs()) == [
        "application=k8s", "namespace=default"]
    lib.application_policy_set_delete(id=aps.uuid)
    for fp in (policy, denyall):
        lib.firewall_policy_delete(id=fp.uuid)
    for fr in (ingress, egress, deny):
        lib.firewall_rule_delete(fq_name=fr.get_fq_name())
    lib.address_group_delete(id=group.uuid)
    lib.virtual_machine_interface_delete(id=vmi.uuid)
    lib.virtual_machine_delete(id=vm.uuid)
    lib.virtual_network_delete(id=vn.uuid)
    for tag in (app, ns, sel):
        lib.tag_delete(id=tag.uuid)
    with pytest.raises(NoIdError):
        lib.tag_read(id=ns.uuid)
    assert lib.tag_types_list()["tag-types"] and "namespace" not in {
        t["fq_name"][0] for t in lib.tag_types_list()["tag-types"]}
    for collection in ("firewall_rules", "firewall_policys", "application_policy_sets", "address_groups", "tags",
                       "virtual_machine_interfaces", "virtual_machines", "virtual_networks"):
        assert list(getattr(lib, f"{collection}_list")().values()) == [[]], collection


def test_the_library_sees_validation_errors_as_bad_requests(lib):
    pm = lib.policy_management_read(fq_name=["default-policy-management"])
    with pytest.raises(NoIdError):  # an endpoint tag that does not exist: 404
        lib.firewall_rule_create(rule(pm, "r", FirewallRuleEndpointType(tags=["application=missing"]),
                                      FirewallRuleEndpointType(any=True)))
    both = rule(pm, "r", FirewallRuleEndpointType(any=True, address_group="default-policy-management:g"),
                FirewallRuleEndpointType(any=True))
    with pytest.raises(BadRequest) as excinfo:
        lib.firewall_rule_create(both)
    assert excinfo.value.status_code == 400 and "only one endpoint type" in str(excinfo.value)
