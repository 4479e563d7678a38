"""The embedded config API over HTTP: URLs, answer shapes, generic checks, lists and actions."""
from __future__ import annotations

import uuid as uuid_lib

import pytest

from tests.support.vnc_server_support import PM, PROJECT, expect_error, group_body, make_workload, rule_body, tag_body
from vnc_client.schema import RESOURCE_TYPES

UNKNOWN = "11111111-2222-4333-8444-555555555555"


# --- home page and defaults -----------------------------------------------------------------------

def test_home_page_links_every_collection_resource_base_and_action(http):
    home = http.get("/").json()
    assert home["href"] == http.url
    links = {(l["link"]["rel"], l["link"]["name"]): l["link"] for l in home["links"]}
    for rt in RESOURCE_TYPES.values():
        assert links[("collection", rt.name)]["href"] == f"{http.url}/{rt.plural}"
        assert links[("resource-base", rt.name)]["href"] == f"{http.url}/{rt.name}"
    assert links[("action", "name-to-id")] == {"rel": "action", "href": f"{http.url}/fqname-to-id",
                                               "name": "name-to-id", "method": "POST"}
    for name, path in (("id-to-name", "/id-to-fqname"), ("ref-update", "/ref-update"), ("set-tag", "/set-tag"),
                       ("list-bulk-collection", "/list-bulk-collection")):
        assert links[("action", name)]["href"] == http.url + path


def test_starts_with_default_domain_project_policy_management_and_predefined_tag_types(http):
    domain = http.action("/fqname-to-id", {"type": "domain", "fq_name": ["default-domain"]})["uuid"]
    project = http.read("project", http.action("/fqname-to-id", {"type": "project", "fq_name": PROJECT})["uuid"])
    assert project["parent_type"] == "domain" and project["parent_uuid"] == domain
    assert http.action("/fqname-to-id", {"type": "policy-management", "fq_name": PM})["uuid"]
    types = {t["fq_name"][0]: t["uuid"] for t in http.get("/tag-types").json()["tag-types"]}
    ids = {name: http.read("tag-type", u)["tag_type_id"] for name, u in types.items()}
    assert ids == {"label": "0x0000", "application": "0x0001", "tier": "0x0002", "deployment": "0x0003",
                   "site": "0x0004"}


# --- create ---------------------------------------------------------------------------------------

def test_create_answers_identity_and_parent(http):
    group = http.create("address-group", group_body("g", "10.0.0.0/8"))
    pm_uuid = http.action("/fqname-to-id", {"type": "policy-management", "fq_name": PM})["uuid"]
    assert group["name"] == "g" and group["fq_name"] == PM + ["g"]
    assert group["href"] == f"{http.url}/address-group/{group['uuid']}"
    assert group["parent_type"] == "policy-management" and group["parent_uuid"] == pm_uuid
    assert group["parent_href"] == f"{http.url}/policy-management/{pm_uuid}"
    tag = http.create("tag", tag_body("app", "x"))
    assert "parent_type" not in tag and "parent_uuid" not in tag


def test_create_keeps_a_uuid_given_and_refuses_a_bad_or_taken_one(http):
    wanted = str(uuid_lib.uuid4())
    assert http.create("virtual-machine", {"fq_name": ["vm1"], "uuid": wanted})["uuid"] == wanted
    expect_error(http.post("/virtual-machines", {"virtual-machine": {"fq_name": ["vm2"], "uuid": "nope"}}),
                 400, "Invalid UUID format")
    expect_error(http.post("/virtual-machines", {"virtual-machine": {"fq_name": ["vm3"], "uuid": wanted}}),
                 409, f"{wanted} already exists with fq_name: ['vm1']")


def test_create_refuses_a_duplicate_fq_name_with_409(http):
    first = http.create("address-group", group_body("g", "10.0.0.0/8"))
    expect_error(http.post("/address-groups", {"address-group": group_body("g", "10.1.0.0/16")}),
                 409, f"['default-policy-management', 'g'] already exists with uuid: {first['uuid']}")


@pytest.mark.parametrize("body, fragment", [
    ({"parent_type": "policy-management"}, "no fq_name in POST body"),
    ({"fq_name": PM + ["a:b"], "parent_type": "policy-management"}, "invalid chars"),
    ({"fq_name": PM + ["g"], "parent_type": "domain"}, "Invalid parent type: domain"),
    ({"fq_name": PM + ["g"]}, "Missing parent type"),
    ({"fq_name": ["g"], "parent_type": "policy-management"}, "Invalid fq-name for object with parent_type"),
])
def test_create_checks_name_and_parent(http, body, fragment):
    expect_error(http.post("/address-groups", {"address-group": body}), 400, fragment)


def test_create_under_a_missing_parent_is_404(http):
    body = {"fq_name": ["nope", "g"], "parent_type": "policy-management"}
    expect_error(http.post("/address-groups", {"address-group": body}),
                 404, "Parent ['nope'] type policy-management does not exist")


def test_create_without_parent_needs_a_one_element_fq_name(http):
    expect_error(http.post("/virtual-machines", {"virtual-machine": {"fq_name": ["a", "b"]}}),
                 400, "Invalid fq-name of an object with no parent")


def test_unknown_top_level_fields_are_dropped_as_the_real_server_stores_known_fields_only(http):
    vm = http.create("virtual-machine", {"fq_name": ["vm"], "no_such_field": 1, "server_type": "container"})
    read = http.read("virtual-machine", vm["uuid"])
    assert "no_such_field" not in read and read["server_type"] == "container"


# --- property validation ---------------------------------------------------------------------------

def test_property_types_are_checked_integers_converted_and_subnets_normalised(http):
    rule = http.create("firewall-rule", rule_body("r", service={"protocol": "tcp", "dst_ports": {
        "start_port": "80", "end_port": "81"}}))
    assert http.read("firewall-rule", rule["uuid"])["service"]["dst_ports"] == {"start_port": 80, "end_port": 81}
    group = http.create("address-group", group_body("g", "10.1.2.3/8"))
    assert http.read("address-group", group["uuid"])["address_group_prefix"]["subnet"] == [
        {"ip_prefix": "10.0.0.0", "ip_prefix_len": 8}]


@pytest.mark.parametrize("obj_type, body, fragment", [
    ("virtual-machine", {"fq_name": ["vm"], "server_type": "mainframe"}, "value must be one of"),
    ("application-policy-set", {"fq_name": PM + ["a"], "parent_type": "policy-management",
                                "annotations": {"key_value_pair": [{"key": "k", "value": "v", "x": 1}]}},
     "does not have field x"),
    ("address-group", group_body("g", "10.0.0.0/99"), "Subnet type '10.0.0.0/99' is invalid"),
    ("virtual-network", {"fq_name": PROJECT + ["vn"], "parent_type": "project", "is_shared": "yes"},
     "true/false expected"),
    ("address-group", {"fq_name": PM + ["g"], "parent_type": "policy-management", "address_group_prefix": "x"},
     "Error in property address_group_prefix"),
])
def test_bad_property_values_are_400(http, obj_type, body, fragment):
    expect_error(http.post(f"/{obj_type}s", {obj_type: body}), 400, "Bad property in create", fragment)


# --- read -----------------------------------------------------------------------------------------

def test_read_returns_refs_with_attr_and_back_refs_and_children_unless_excluded(http):
    rule = http.create("firewall-rule", rule_body("r"))
    policy = http.create("firewall-policy", {"fq_name": PM + ["p"], "parent_type": "policy-management",
                                             "firewall_rule_refs": [{"to": rule["fq_name"],
                                                                     "attr": {"sequence": "00001.0"}}]})
    read = http.read("firewall-policy", policy["uuid"])
    assert read["firewall_rule_refs"] == [{"to": rule["fq_name"], "uuid": rule["uuid"],
                                           "attr": {"sequence": "00001.0"},
                                           "href": f"{http.url}/firewall-rule/{rule['uuid']}"}]
    back = http.read("firewall-rule", rule["uuid"])["firewall_policy_back_refs"]
    assert back == [{"to": policy["fq_name"], "uuid": policy["uuid"], "attr": {"sequence": "00001.0"},
                     "href": f"{http.url}/firewall-policy/{policy['uuid']}"}]
    assert "firewall_policy_back_refs" not in http.read("firewall-rule", rule["uuid"], exclude_back_refs="True")
    pm = http.read("policy-management", policy["parent_uuid"])
    assert [c["uuid"] for c in pm["firewall_rules"]] == [rule["uuid"]]
    assert "firewall_rules" not in http.read("policy-management", policy["parent_uuid"], exclude_children="True")


def test_read_with_fields_returns_only_those_plus_identity(http):
    rule = http.create("firewall-rule", rule_body("r"))
    read = http.read("firewall-rule", rule["uuid"], fields="direction,firewall_policy_back_refs")
    assert read["direction"] == ">"
    assert "service" not in read and "endpoint_1" not in read and "firewall_policy_back_refs" not in read
    assert {"uuid", "fq_name", "name", "href", "parent_type", "parent_uuid", "id_perms", "perms2"} <= set(read)


def test_children_are_listed_in_creation_order_and_refs_in_uuid_order(http):
    rules = [http.create("firewall-rule", rule_body(f"r{i}")) for i in range(6)]
    pm = http.read("policy-management", rules[0]["parent_uuid"])
    assert [c["uuid"] for c in pm["firewall_rules"]] == [r["uuid"] for r in rules]
    policy = http.create("firewall-policy", {
        "fq_name": PM + ["p"], "parent_type": "policy-management",
        "firewall_rule_refs": [{"to": r["fq_name"], "attr": {"sequence": f"{i}.0"}} for i, r in enumerate(rules)]})
    refs = http.read("firewall-policy", policy["uuid"])["firewall_rule_refs"]
    assert [r["uuid"] for r in refs] == sorted(r["uuid"] for r in rules)


def test_read_of_an_unknown_uuid_or_of_another_type_is_404(http):
    expect_error(http.get(f"/firewall-rule/{UNKNOWN}"), 404, f"Unknown id: {UNKNOWN}")
    vm = http.create("virtual-machine", {"fq_name": ["vm"]})
    expect_error(http.get(f"/firewall-rule/{vm['uuid']}"), 404, "No firewall-rule object found")


def test_exclude_hrefs_leaves_hrefs_out(http):
    group = http.create("address-group", group_body("g", "10.0.0.0/8"))
    read = http.read("address-group", group["uuid"], exclude_hrefs="True")
    assert "href" not in read and "parent_href" not in read


# --- update ---------------------------------------------------------------------------------------

def test_put_replaces_only_the_fields_given(http):
    rule = http.create("firewall-rule", rule_body("r"))
    response = http.put(f"/firewall-rule/{rule['uuid']}", {"firewall-rule": {"direction": "<>"}})
    assert response.status_code == 200
    assert response.json() == {"firewall-rule": {"uuid": rule["uuid"],
                                                 "href": f"{http.url}/firewall-rule/{rule['uuid']}"}}
    read = http.read("firewall-rule", rule["uuid"])
    assert read["direction"] == "<>" and read["service"]["protocol"] == "tcp"


def test_put_of_a_ref_field_replaces_the_whole_list(http):
    r1, r2 = (http.create("firewall-rule", rule_body(n)) for n in ("r1", "r2"))
    policy = http.create("firewall-policy", {"fq_name": PM + ["p"], "parent_type": "policy-management",
                                             "firewall_rule_refs": [{"to": r1["fq_name"], "attr": {"sequence": "1"}}]})
    http.put(f"/firewall-policy/{policy['uuid']}", {"firewall-policy": {
        "firewall_rule_refs": [{"uuid": r2["uuid"], "to": r2["fq_name"], "attr": {"sequence": "2"}}]}})
    refs = http.read("firewall-policy", policy["uuid"])["firewall_rule_refs"]
    assert [(r["uuid"], r["attr"]) for r in refs] == [(r2["uuid"], {"sequence": "2"})]


def test_put_errors(http):
    expect_error(http.put(f"/firewall-rule/{UNKNOWN}", {"firewall-rule": {"direction": ">"}}), 404, "Unknown id")
    rule = http.create("firewall-rule", rule_body("r"))
    expect_error(http.put(f"/firewall-rule/{rule['uuid']}", {"firewall-rule": {"direction": "sideways"}}),
                 400, "Bad property in http_put")
    expect_error(http.put(f"/firewall-rule/{rule['uuid']}", {"address-group": {}}), 400, "the body must be")
    empty = http.put(f"/firewall-rule/{rule['uuid']}", {})
    assert empty.status_code == 200 and empty.content == b""


def test_a_no_op_update_does_not_change_the_store(server, http):
    rule = http.create("firewall-rule", rule_body("r"))
    before = server.store.revision
    http.put(f"/firewall-rule/{rule['uuid']}", {"firewall-rule": {"direction": ">"}})
    http.read("firewall-rule", rule["uuid"])
    assert server.store.revision == before
    http.put(f"/firewall-rule/{rule['uuid']}", {"firewall-rule": {"direction": "<"}})
    assert server.store.revision > before


# --- delete ---------------------------------------------------------------------------------------

def test_delete_then_read_is_404_and_a_second_delete_is_404(http):
    group = http.create("address-group", group_body("g", "10.0.0.0/8"))
    assert http.delete(f"/address-group/{group['uuid']}").status_code == 200
    expect_error(http.get(f"/address-group/{group['uuid']}"), 404)
    expect_error(http.delete(f"/address-group/{group['uuid']}"), 404, f"ID {group['uuid']} does not exist")


def test_delete_is_refused_while_referred_or_while_children_exist(http):
    rule = http.create("firewall-rule", rule_body("r"))
    policy = http.create("firewall-policy", {"fq_name": PM + ["p"], "parent_type": "policy-management",
                                             "firewall_rule_refs": [{"to": rule["fq_name"], "attr": None}]})
    expect_error(http.delete(f"/firewall-rule/{rule['uuid']}"), 409, "Delete when resource still referred",
                 f"{http.url}/firewall-policy/{policy['uuid']}")
    expect_error(http.delete(f"/policy-management/{rule['parent_uuid']}"), 409,
                 "Delete when children still present", f"/firewall-rule/{rule['uuid']}")
    assert http.delete(f"/firewall-policy/{policy['uuid']}").status_code == 200
    assert http.delete(f"/firewall-rule/{rule['uuid']}").status_code == 200


# --- lists ----------------------------------------------------------------------------------------

def test_list_shapes_plain_detail_and_count(http):
    group = http.create("address-group", group_body("g", "10.0.0.0/8"))
    plain = http.get("/address-groups").json()
    assert plain == {"address-groups": [{"uuid": group["uuid"], "fq_name": group["fq_name"],
                                         "href": f"{http.url}/address-group/{group['uuid']}"}]}
    detail = http.get("/address-groups", detail="True").json()["address-groups"]
    assert detail[0]["address-group"]["address_group_prefix"]["subnet"][0]["ip_prefix"] == "10.0.0.0"
    assert detail[0]["address-group"]["name"] == "g"
    assert http.get("/address-groups", count="true").json() == {"address-groups": {"count": 1}}
    with_fields = http.get("/address-groups", fields="address_group_prefix").json()["address-groups"][0]
    assert with_fields["address_group_prefix"]["subnet"][0]["ip_prefix_len"] == 8


def test_list_selectors_parent_back_ref_uuids_and_fq_names(http):
    workload = make_workload(http, "w")
    other = http.create("virtual-machine", {"fq_name": ["other-vm"]})
    project_uuid = http.action("/fqname-to-id", {"type": "project", "fq_name": PROJECT})["uuid"]

    def uuids(path, **params):
        return [o["uuid"] for o in http.get(path, **params).json()[path.strip("/")]]

    assert uuids("/virtual-machine-interfaces", parent_id=project_uuid) == [workload["vmi"]]
    assert uuids("/virtual-machine-interfaces", parent_fq_name_str=":".join(PROJECT)) == [workload["vmi"]]
    assert uuids("/virtual-machine-interfaces", parent_fq_name_str="default-domain:nope") == []
    assert uuids("/virtual-machine-interfaces", back_ref_id=workload["vm"]) == [workload["vmi"]]
    assert uuids("/virtual-machine-interfaces", back_ref_id=other["uuid"]) == []
    assert uuids("/virtual-machines", obj_uuids=f"{other['uuid']},{workload['vm']}") == sorted(
        [other["uuid"], workload["vm"]], key=lambda u: "other-vm" if u == other["uuid"] else "w-vm")
    assert uuids("/virtual-machines", fq_names="other-vm,missing") == [other["uuid"]]


def test_list_filters_match_property_values(http):
    tags = {v: http.create("tag", tag_body(t, v)) for t, v in (("application", "a"), ("tier", "b"))}
    by_type = http.get("/tags", filters='tag_type_name=="application"').json()["tags"]
    assert [t["uuid"] for t in by_type] == [tags["a"]["uuid"]]
    either = http.get("/tags", filters="tag_value==a,tag_value==b").json()["tags"]
    assert {t["uuid"] for t in either} == {tags["a"]["uuid"], tags["b"]["uuid"]}
    expect_error(http.get("/tags", filters="tag_value=a"), 400, "Invalid filter")


def test_list_bulk_collection_answers_as_the_get(http):
    groups = [http.create("address-group", group_body(f"g{i}", f"10.{i}.0.0/16")) for i in range(3)]
    body = {"type": "address-group", "obj_uuids": ",".join(g["uuid"] for g in groups[:2]), "detail": False}
    answer = http.action("/list-bulk-collection", body)
    assert sorted(g["uuid"] for g in answer["address-groups"]) == sorted(g["uuid"] for g in groups[:2])
    expect_error(http.post("/list-bulk-collection", {"type": "address-group", "obj_uuids": [groups[0]["uuid"]]}),
                 400, "comma-separated string")
    expect_error(http.post("/list-bulk-collection", {"type": "address-group", "filters": {"a": 1}}),
                 400, "Invalid filter")


def test_list_by_parent_fq_name_may_name_the_parent_type(http):
    scoped_pm = http.create("policy-management", {"fq_name": PROJECT + ["pm"], "parent_type": "project"})
    group = http.create("address-group", {**group_body("g", "10.0.0.0/8"), "fq_name": scoped_pm["fq_name"] + ["g"]})
    by_pm = http.get("/address-groups", parent_fq_name_str=":".join(scoped_pm["fq_name"]),
                     parent_type="policy-management").json()["address-groups"]
    assert [g["uuid"] for g in by_pm] == [group["uuid"]]
    expect_error(http.get("/address-groups", parent_fq_name_str="a", parent_type="nope"), 404, "nope")


# --- actions --------------------------------------------------------------------------------------

def test_fqname_to_id_and_id_to_fqname(http):
    group = http.create("address-group", group_body("g", "10.0.0.0/8"))
    assert http.action("/fqname-to-id", {"type": "address_group", "fq_name": group["fq_name"]}) == {
        "uuid": group["uuid"]}
    assert http.action("/id-to-fqname", {"uuid": group["uuid"]}) == {"fq_name": group["fq_name"],
                                                                    "type": "address-group"}
    expect_error(http.post("/fqname-to-id", {"type": "address-group", "fq_name": PM + ["x"]}),
                 404, "Name ['default-policy-management', 'x'] not found")
    expect_error(http.post("/fqname-to-id", {"type": "no-such-type", "fq_name": ["x"]}), 404, "no-such-type")
    expect_error(http.post("/id-to-fqname", {"uuid": UNKNOWN}), 404, f"UUID {UNKNOWN} not found")


def test_ref_update_adds_updates_and_deletes_refs_with_attr(http):
    rule = http.create("firewall-rule", rule_body("r"))
    policy = http.create("firewall-policy", {"fq_name": PM + ["p"], "parent_type": "policy-management"})

    def ref_update(**fields):
        body = {"type": "firewall-policy", "uuid": policy["uuid"], "ref-type": "firewall-rule", **fields}
        return http.post("/ref-update", body)

    assert ref_update(operation="ADD", **{"ref-uuid": rule["uuid"]}, attr={"sequence": "1.0"}).json() == {
        "uuid": policy["uuid"]}
    ref_update(operation="ADD", **{"ref-fq-name": rule["fq_name"]}, attr={"sequence": "2.0"})
    refs = http.read("firewall-policy", policy["uuid"])["firewall_rule_refs"]
    assert [(r["uuid"], r["attr"]) for r in refs] == [(rule["uuid"], {"sequence": "2.0"})]
    ref_update(operation="DELETE", **{"ref-uuid": rule["uuid"]})
    assert "firewall_rule_refs" not in http.read("firewall-policy", policy["uuid"])
    assert ref_update(operation="DELETE", **{"ref-uuid": rule["uuid"]}).status_code == 200  # already gone

    expect_error(ref_update(operation="ADD", **{"ref-uuid": UNKNOWN}), 404, f"Unknown id: {UNKNOWN}")
    expect_error(ref_update(operation="ADD", **{"ref-fq-name": PM + ["nope"]}), 404, "not found")
    expect_error(ref_update(operation="SWAP", **{"ref-uuid": rule["uuid"]}), 400, "operation should be add or delete")
    expect_error(ref_update(operation="ADD"), 400, "ref-uuid or ref-fq-name must be specified")
    expect_error(ref_update(operation="ADD", **{"ref-uuid": rule["uuid"]}, attr={"sequence": "1", "x": 1}),
                 400, "Bad reference in ref-update")
    expect_error(http.post("/ref-update", {"type": "firewall-policy", "uuid": policy["uuid"]}), 400,
                 "type/uuid/ref-type/operation is null")
    expect_error(http.post("/ref-update", {"type": "firewall-policy", "uuid": UNKNOWN, "ref-type": "firewall-rule",
                                           "operation": "ADD", "ref-uuid": rule["uuid"]}), 404, "Unknown id")


def test_refs_to_unknown_security_objects_are_404_and_to_other_objects_400(http):
    body = {"fq_name": PM + ["p"], "parent_type": "policy-management",
            "firewall_rule_refs": [{"uuid": UNKNOWN, "to": PM + ["ghost"], "attr": None}]}
    expect_error(http.post("/firewall-policys", {"firewall-policy": body}), 404, f"Unknown id: {UNKNOWN}")
    body["firewall_rule_refs"] = [{"to": PM + ["ghost"], "attr": None}]
    expect_error(http.post("/firewall-policys", {"firewall-policy": body}), 404,
                 "Unknown id: firewall_rule ['default-policy-management', 'ghost']")
    vmi = {"fq_name": PROJECT + ["vmi"], "parent_type": "project",
           "virtual_network_refs": [{"to": PROJECT + ["ghost"]}]}
    expect_error(http.post("/virtual-machine-interfaces", {"virtual-machine-interface": vmi}), 400,
                 "Unknown reference in resource create")


def test_sequenced_refs_need_a_valid_firewall_sequence(http):
    rule = http.create("firewall-rule", rule_body("r"))
    body = {"fq_name": PM + ["p"], "parent_type": "policy-management",
            "firewall_rule_refs": [{"to": rule["fq_name"], "attr": {"seq": "1"}}]}
    expect_error(http.post("/firewall-policys", {"firewall-policy": body}), 400, "Bad reference in create")


# --- HTTP plumbing --------------------------------------------------------------------------------

def test_malformed_requests(http):
    bad_json = http.session.post(http.url + "/tags", data=b"{not json", timeout=10)
    expect_error(bad_json, 400, "invalid JSON")
    expect_error(http.post("/tags", {"address-group": {}}), 400, '{"tag": {...}}')
    expect_error(http.get("/no-such-things"), 404, "Not found")
    expect_error(http.session.patch(http.url + "/tags", timeout=10), 405)
