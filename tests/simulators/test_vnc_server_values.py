"""Who owns which value in the embedded config API: the store keeps what ConfigApi hands it, callers
get copies, and a change replaces a stored value instead of editing it (which is what lets the HTTP
app encode renderings that share stored values, `copy_values=False`)."""
from __future__ import annotations

import json
from typing import Any, Dict

from simulators.vnc_api.api import ConfigApi
from simulators.vnc_api.store import copy_json
from simulators.vnc_api.views import ListQuery

PM = ["default-policy-management"]


def annotated(name: str, value: str) -> Dict[str, Any]:
    return {"fq_name": PM + [name], "parent_type": "policy-management",
            "annotations": {"key_value_pair": [{"key": "owner", "value": value}]}}


def test_copy_json_copies_containers_and_shares_leaves():
    leaf = "text"
    value = {"a": [{"b": leaf}, 1, None, True], "t": ({"c": 2},)}
    copied = copy_json(value)
    assert copied == value
    assert copied is not value and copied["a"] is not value["a"] and copied["a"][0] is not value["a"][0]
    assert isinstance(copied["t"], tuple) and copied["t"][0] is not value["t"][0]
    assert copied["a"][0]["b"] is leaf


def test_a_body_changed_after_create_leaves_the_store_alone():
    api = ConfigApi()
    body = annotated("ag", "k8s")
    created = api.create("address-group", body)
    body["annotations"]["key_value_pair"][0]["value"] = "changed"
    assert api.read("address-group", created["uuid"])["annotations"]["key_value_pair"][0]["value"] == "k8s"


def test_answers_are_the_callers_own():
    api = ConfigApi()
    uuid = api.create("address-group", annotated("ag", "k8s"))["uuid"]
    answers = [api.read("address-group", uuid), api.dump("address-group")[0],
               api.list("address-group", ListQuery(detail=True))["address-groups"][0]["address-group"]]
    for answer in answers:
        answer["annotations"]["key_value_pair"].append({"key": "extra", "value": "x"})
        answer["id_perms"]["enable"] = False
    again = api.read("address-group", uuid)
    assert again["annotations"] == {"key_value_pair": [{"key": "owner", "value": "k8s"}]}
    assert again["id_perms"]["enable"] is True


def test_a_shared_rendering_keeps_the_values_it_was_made_with():
    api = ConfigApi()
    rule = api.create("firewall-rule", {
        "fq_name": PM + ["r"], "parent_type": "policy-management", "action_list": {"simple_action": "pass"},
        "direction": ">", "service": {"protocol": "tcp", "dst_ports": {"start_port": 80, "end_port": 80}},
        "endpoint_1": {"any": True}, "endpoint_2": {"any": True}, "annotations": annotated("r", "k8s")["annotations"]})
    policy = api.create("firewall-policy", {"fq_name": PM + ["p"], "parent_type": "policy-management"})
    ref = {"type": "firewall-policy", "uuid": policy["uuid"], "ref-type": "firewall-rule", "ref-uuid": rule["uuid"],
           "operation": "ADD", "attr": {"sequence": "00000.0"}}
    api.ref_update(ref)
    shared_rule = api.read("firewall-rule", rule["uuid"], copy_values=False)
    shared_policy = api.list("firewall-policy", ListQuery(detail=True), copy_values=False)
    before = json.dumps([shared_rule, shared_policy], sort_keys=True)

    api.update("firewall-rule", rule["uuid"], {
        "service": {"protocol": "udp", "dst_ports": {"start_port": 53, "end_port": 53}},
        "annotations": {"key_value_pair": [{"key": "owner", "value": "someone-else"}]}})
    api.ref_update({**ref, "attr": {"sequence": "00001.0"}})

    assert json.dumps([shared_rule, shared_policy], sort_keys=True) == before
    assert api.read("firewall-rule", rule["uuid"])["service"]["protocol"] == "udp"
    assert api.read("firewall-policy", policy["uuid"])["firewall_rule_refs"][0]["attr"] == {"sequence": "00001.0"}
