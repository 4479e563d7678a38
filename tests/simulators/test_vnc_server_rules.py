"""The embedded config API's type rules over HTTP: tags, set-tag, firewall rules, VMIs, scoping."""
from __future__ import annotations

import pytest

from tests.support.vnc_server_support import PM, PROJECT, expect_error, group_body, make_workload, rule_body, tag_body


def tag_refs(http, obj_type, uuid):
    return sorted(r["to"][-1] for r in http.read(obj_type, uuid).get("tag_refs", []))


# --- tags -----------------------------------------------------------------------------------------

def test_tag_type_is_lower_cased_and_names_the_tag(http):
    tag = http.create("tag", {"fq_name": ["anything"], "tag_type_name": "Tier", "tag_value": "Web"})
    read = http.read("tag", tag["uuid"])
    assert read["fq_name"] == ["tier=Web"] and read["name"] == "tier=Web" and read["display_name"] == "tier=Web"
    assert read["tag_type_name"] == "tier" and read["tag_value"] == "Web"
    assert read["perms2"]["global_access"] == 7


def test_tag_ids_are_type_id_and_lowest_free_value_id(http):
    app_a = http.create("tag", tag_body("application", "a"))
    app_b = http.create("tag", tag_body("application", "b"))
    ns = http.create("tag", tag_body("namespace", "default"))
    env = http.create("tag", tag_body("env", "prod"))
    ids = {k: http.read("tag", t["uuid"])["tag_id"] for k, t in
           (("a", app_a), ("b", app_b), ("ns", ns), ("env", env))}
    assert ids == {"a": "0x00010000", "b": "0x00010001", "ns": "0x00ff0000", "env": "0x01000000"}
    http.delete(f"/tag/{app_a['uuid']}")
    again = http.create("tag", tag_body("application", "c"))
    assert http.read("tag", again["uuid"])["tag_id"] == "0x00010000"


def test_tag_types_are_created_with_the_first_tag_and_deleted_with_the_last(http):
    first = http.create("tag", tag_body("namespace", "a"))
    second = http.create("tag", tag_body("namespace", "b"))
    tag_type = http.read("tag", first["uuid"])["tag_type_refs"][0]
    assert tag_type["to"] == ["namespace"]
    assert http.read("tag-type", tag_type["uuid"])["tag_type_id"] == "0x00ff"
    http.delete(f"/tag/{first['uuid']}")
    assert http.get(f"/tag-type/{tag_type['uuid']}").status_code == 200
    http.delete(f"/tag/{second['uuid']}")
    assert http.get(f"/tag-type/{tag_type['uuid']}").status_code == 404
    predefined = http.create("tag", tag_body("application", "x"))
    app_type = http.read("tag", predefined["uuid"])["tag_type_refs"][0]["uuid"]
    http.delete(f"/tag/{predefined['uuid']}")
    assert http.get(f"/tag-type/{app_type}").status_code == 200


@pytest.mark.parametrize("body, fragment", [
    ({"fq_name": ["t"], "tag_type_name": "app"}, "Tag must be created with a type and a value"),
    ({"fq_name": ["t"], "tag_value": "x"}, "Tag must be created with a type and a value"),
    ({"fq_name": ["t"], "tag_type_name": "app", "tag_value": "x", "tag_id": "0x00010001"}, "Tag ID is not setable"),
])
def test_tag_create_errors(http, body, fragment):
    expect_error(http.post("/tags", {"tag": body}), 400, fragment)


def test_tag_type_value_and_id_are_immutable(http):
    tag = http.create("tag", tag_body("application", "x"))
    expect_error(http.put(f"/tag/{tag['uuid']}", {"tag": {"tag_value": "y"}}), 400, "cannot be updated")
    expect_error(http.put(f"/tag/{tag['uuid']}", {"tag": {"tag_id": "0x1"}}), 400, "cannot be updated")
    assert http.put(f"/tag/{tag['uuid']}", {"tag": {"annotations": {"key_value_pair": [
        {"key": "owner", "value": "k8s"}]}}}).status_code == 200


def test_a_tag_in_use_cannot_be_deleted(http):
    workload = make_workload(http, "w")
    tag = http.create("tag", tag_body("application", "k8s"))
    http.action("/set-tag", {"obj_type": "virtual-machine-interface", "obj_uuid": workload["vmi"],
                             "application": {"is_global": True, "value": "k8s"}})
    expect_error(http.delete(f"/tag/{tag['uuid']}"), 409, "still referred", f"/virtual-machine-interface/")


def test_an_object_carries_one_tag_of_each_type_except_label(http):
    a, b = (http.create("tag", tag_body("application", v)) for v in ("a", "b"))
    body = {"fq_name": ["vm"], "tag_refs": [{"to": a["fq_name"]}, {"to": b["fq_name"]}]}
    expect_error(http.post("/virtual-machines", {"virtual-machine": body}), 400,
                 "Tag type 'application' cannot be set multiple times on the same Virtual Machine resource type")
    l1, l2 = (http.create("tag", tag_body("label", v)) for v in ("x", "y"))
    vm = http.create("virtual-machine", {"fq_name": ["vm"], "tag_refs": [{"to": l1["fq_name"]},
                                                                         {"to": l2["fq_name"]}]})
    assert tag_refs(http, "virtual-machine", vm["uuid"]) == ["label=x", "label=y"]


# --- set-tag --------------------------------------------------------------------------------------

def set_tag(http, obj_type, uuid, **changes):
    return http.post("/set-tag", {"obj_type": obj_type, "obj_uuid": uuid, **changes})


def test_set_tag_replaces_a_single_valued_type_and_removes_with_null(http):
    vmi = make_workload(http, "w")["vmi"]
    for value in ("a", "b"):
        http.create("tag", tag_body("application", value))
    http.create("tag", tag_body("namespace", "ns"))
    assert set_tag(http, "virtual-machine-interface", vmi, application={"is_global": True, "value": "a"}).json() == {}
    set_tag(http, "virtual_machine_interface", vmi, Application={"is_global": True, "value": "b"},
            namespace={"is_global": True, "value": "ns"})
    assert tag_refs(http, "virtual-machine-interface", vmi) == ["application=b", "namespace=ns"]
    set_tag(http, "virtual-machine-interface", vmi, application=None)
    assert tag_refs(http, "virtual-machine-interface", vmi) == ["namespace=ns"]


def test_set_tag_adds_and_deletes_values_of_the_multi_valued_label_type(http):
    vmi = make_workload(http, "w")["vmi"]
    for value in ("x", "y", "z"):
        http.create("tag", tag_body("label", value))
    set_tag(http, "virtual-machine-interface", vmi, label={"is_global": True, "add_values": ["x", "y"]})
    set_tag(http, "virtual-machine-interface", vmi,
            label={"is_global": True, "value": "z", "delete_values": ["x"]})
    assert tag_refs(http, "virtual-machine-interface", vmi) == ["label=y", "label=z"]


def test_set_tag_without_is_global_looks_in_the_objects_project(http):
    vmi = make_workload(http, "w")["vmi"]
    http.create("tag", tag_body("application", "global-only"))
    expect_error(set_tag(http, "virtual-machine-interface", vmi, application={"value": "global-only"}), 404,
                 "Tag with FQName ['default-domain', 'default-project', 'application=global-only'] not found")
    http.create("tag", tag_body("application", "local", parent=PROJECT))
    set_tag(http, "virtual-machine-interface", vmi, application={"value": "local"})
    assert tag_refs(http, "virtual-machine-interface", vmi) == ["application=local"]


@pytest.mark.parametrize("changes, status, fragment", [
    ({"application": {"is_global": True, "add_values": ["a"]}}, 400, "cannot be set multiple times"),
    ({"application": {"is_global": True}}, 400, "No valid value provided for tag type application"),
    ({"application": {"is_global": True, "value": "missing"}}, 404,
     "Tag with FQName ['application=missing'] not found"),
])
def test_set_tag_errors(http, changes, status, fragment):
    vmi = make_workload(http, "w")["vmi"]
    expect_error(set_tag(http, "virtual-machine-interface", vmi, **changes), status, fragment)


def test_set_tag_needs_a_known_object(http):
    expect_error(http.post("/set-tag", {"obj_uuid": "x"}), 400, "Object type and UUID must be specified")
    expect_error(set_tag(http, "no-such-type", "x"), 400, "Invalid Contrail resource type: no-such-type")
    expect_error(set_tag(http, "virtual-machine", "11111111-2222-4333-8444-555555555555"), 404, "Unknown id")


def test_address_groups_carry_label_tags_only(http):
    group = http.create("address-group", group_body("g", "10.0.0.0/8"))
    http.create("tag", tag_body("application", "a"))
    http.create("tag", tag_body("label", "l"))
    expect_error(set_tag(http, "address-group", group["uuid"], application={"is_global": True, "value": "a"}),
                 400, "Invalid tag type application for object type address_group")
    set_tag(http, "address-group", group["uuid"], label={"is_global": True, "add_values": ["l"]})
    assert tag_refs(http, "address-group", group["uuid"]) == ["label=l"]


# --- firewall rules -------------------------------------------------------------------------------

def test_rule_endpoints_become_tag_and_address_group_refs(http):
    tag = http.create("tag", tag_body("application", "k8s"))
    group = http.create("address-group", group_body("g", "10.0.0.0/8"))
    rule = http.create("firewall-rule", rule_body(
        "r", endpoint_1={"tags": ["application=k8s"]}, endpoint_2={"address_group": ":".join(group["fq_name"])}))
    read = http.read("firewall-rule", rule["uuid"])
    assert [r["uuid"] for r in read["tag_refs"]] == [tag["uuid"]]
    assert [r["uuid"] for r in read["address_group_refs"]] == [group["uuid"]]
    assert read["endpoint_1"]["tag_ids"] == [0x00010000]
    assert read["service"]["protocol_id"] == 6
    assert read["match_tag_types"] == {"tag_type": []}

    http.put(f"/firewall-rule/{rule['uuid']}", {"firewall-rule": {"endpoint_2": {"any": True}}})
    read = http.read("firewall-rule", rule["uuid"])
    assert "address_group_refs" not in read and [r["uuid"] for r in read["tag_refs"]] == [tag["uuid"]]
    assert http.delete(f"/address-group/{group['uuid']}").status_code == 200


def test_rule_endpoint_tags_and_groups_must_exist(http):
    expect_error(http.post("/firewall-rules", {"firewall-rule": rule_body("r", {"tags": ["application=nope"]})}),
                 404, "Unknown id: tag ['application=nope']")
    expect_error(http.post("/firewall-rules", {"firewall-rule": rule_body("r", {"tags": ["no-equal-sign"]})}),
                 404, "Invalid tag name 'no-equal-sign'")
    expect_error(http.post("/firewall-rules", {"firewall-rule": rule_body(
        "r", {"address_group": "default-policy-management:nope"})}), 404,
        "No Address Group object found for default-policy-management:nope")


def test_rule_tag_and_address_group_refs_cannot_be_set_directly(http):
    tag = http.create("tag", tag_body("application", "k8s"))
    group = http.create("address-group", group_body("g", "10.0.0.0/8"))
    expect_error(http.post("/firewall-rules", {"firewall-rule": rule_body("r", tag_refs=[{"to": tag["fq_name"]}])}),
                 400, "Cannot directly define Tags reference")
    expect_error(http.post("/firewall-rules", {"firewall-rule": rule_body(
        "r", address_group_refs=[{"to": group["fq_name"]}])}), 400, "Cannot directly define Address Group reference")
    rule = http.create("firewall-rule", rule_body("r"))
    response = http.post("/ref-update", {"type": "firewall-rule", "uuid": rule["uuid"], "ref-type": "tag",
                                         "ref-uuid": tag["uuid"], "operation": "ADD", "attr": None})
    expect_error(response, 400, "Cannot directly define Tags reference")


@pytest.mark.parametrize("overrides, fragment", [
    ({"endpoint_1": {"tags": ["application=k8s"], "any": True}}, "only one endpoint type at a time"),
    ({"endpoint_2": {"address_group": "default-policy-management:g", "virtual_network": "a:b:c"}},
     "only one endpoint type at a time"),
    ({"direction": "><"}, "direction: value must be one of"),
    ({"action_list": {"simple_action": "allow"}}, "simple_action: value must be one of"),
    ({"service": {"protocol": "tcp", "dst_ports": {"start_port": 0, "end_port": 70000}}}, "between 0 and 65535"),
    ({"service": {"protocol": "tcp", "dst_ports": {"start_port": -1, "end_port": 80}}}, "between 0 and 65535"),
    ({"service": {"protocol": "tcp", "dst_ports": {"start_port": 90, "end_port": 80}}}, "start port is above"),
    ({"service": {"protocol": "TCP"}}, "Invalid protocol: TCP"),
    ({"service": {"protocol": "http"}}, "Invalid protocol: http"),
    ({"service": {"protocol": "256"}}, "Invalid protocol: 256"),
    ({"service": None}, "requires at least 'service' property or Service Group"),
    ({"match_tags": {"tag_list": ["label"]}}, "labels not allowed as match-tags"),
    ({"draft_mode_state": "created"}, "'draft_mode_state' is only readable"),
])
def test_rule_validation(http, overrides, fragment):
    http.create("tag", tag_body("application", "k8s"))
    http.create("address-group", group_body("g", "10.0.0.0/8"))
    body = rule_body("r")
    body.update(overrides)
    expect_error(http.post("/firewall-rules", {"firewall-rule": body}), 400, fragment)


def test_rule_service_and_service_groups_exclude_each_other(http):
    group = http.create("service-group", {"fq_name": PM + ["web"], "parent_type": "policy-management",
                                          "service_group_firewall_service_list": {"firewall_service": [
                                              {"protocol": "tcp", "dst_ports": {"start_port": 80, "end_port": 80}}]}})
    both = rule_body("r", service_group_refs=[{"to": group["fq_name"]}])
    expect_error(http.post("/firewall-rules", {"firewall-rule": both}), 400,
                 "cannot have both defined 'service' property and Service Group")
    only_group = rule_body("r", service_group_refs=[{"to": group["fq_name"]}])
    del only_group["service"]
    rule = http.create("firewall-rule", only_group)
    expect_error(http.put(f"/firewall-rule/{rule['uuid']}", {"firewall-rule": {"service": {"protocol": "udp"}}}),
                 400, "cannot have both")


@pytest.mark.parametrize("protocol, number", [
    ("tcp", 6), ("udp", 17), ("sctp", 132), ("icmp", 1), ("icmp6", 58), ("any", 0), ("132", 132)])
def test_rule_protocols_by_name_or_number(http, protocol, number):
    rule = http.create("firewall-rule", rule_body("r", service={"protocol": protocol}))
    assert http.read("firewall-rule", rule["uuid"])["service"]["protocol_id"] == number


def test_rule_match_tags_default_to_application_and_name_known_types(http):
    body = rule_body("r")
    del body["match_tags"]
    default = http.create("firewall-rule", body)
    assert http.read("firewall-rule", default["uuid"])["match_tag_types"] == {"tag_type": [1]}
    named = http.create("firewall-rule", rule_body("r2", match_tags={"tag_list": ["Tier", "application"]}))
    assert http.read("firewall-rule", named["uuid"])["match_tag_types"] == {"tag_type": [2, 1]}
    expect_error(http.post("/firewall-rules", {"firewall-rule": rule_body("r3", match_tags={"tag_list": ["nope"]})}),
                 404, "Unknown id: tag_type ['nope']")


def test_global_firewall_objects_refer_to_global_objects_only(http):
    vn = http.create("virtual-network", {"fq_name": PROJECT + ["vn"], "parent_type": "project"})
    expect_error(http.post("/firewall-rules", {"firewall-rule": rule_body(
        "r", virtual_network_refs=[{"to": vn["fq_name"]}])}), 400, "cannot reference a scoped Virtual Network")
    scoped_pm = http.create("policy-management", {"fq_name": PROJECT + ["pm"], "parent_type": "project"})
    scoped = rule_body("r")
    scoped.update(fq_name=scoped_pm["fq_name"] + ["r"])
    scoped_rule = http.create("firewall-rule", scoped)
    global_policy = {"fq_name": PM + ["p"], "parent_type": "policy-management",
                     "firewall_rule_refs": [{"to": scoped_rule["fq_name"], "attr": {"sequence": "1"}}]}
    expect_error(http.post("/firewall-policys", {"firewall-policy": global_policy}), 400,
                 "cannot reference a scoped Firewall Rule")


def test_application_policy_set_flag_all_applications_is_read_only(http):
    body = {"fq_name": PM + ["k8s"], "parent_type": "policy-management", "all_applications": True}
    expect_error(http.post("/application-policy-sets", {"application-policy-set": body}), 400,
                 "'all-applications' flag is read-only")


# --- virtual machine interfaces -------------------------------------------------------------------

def test_a_vmi_needs_a_virtual_network_and_gets_a_mac(http):
    body = {"fq_name": PROJECT + ["vmi"], "parent_type": "project"}
    expect_error(http.post("/virtual-machine-interfaces", {"virtual-machine-interface": body}), 400,
                 "must have valide Virtual Network reference")
    workload = make_workload(http, "w")
    macs = http.read("virtual-machine-interface", workload["vmi"])["virtual_machine_interface_mac_addresses"]
    assert macs["mac_address"][0].startswith("02:")


def test_network_and_machine_outlive_their_interfaces_only(http):
    workload = make_workload(http, "w")
    expect_error(http.delete(f"/virtual-network/{workload['vn']}"), 409, "still referred")
    expect_error(http.delete(f"/virtual-machine/{workload['vm']}"), 409, "still referred")
    assert http.delete(f"/virtual-machine-interface/{workload['vmi']}").status_code == 200
    assert http.delete(f"/virtual-machine/{workload['vm']}").status_code == 200
    assert http.delete(f"/virtual-network/{workload['vn']}").status_code == 200
