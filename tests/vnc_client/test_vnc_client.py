"""VncClient operations against a scripted HTTP server: exact URLs, query strings and bodies.

The expected requests are the ones the official library (vnc_api.py) sends for the same operation.
"""
from __future__ import annotations

import json
import logging
import time
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Tuple

import pytest

from kube_manager.plumbing.kvlog import FIELDS_ATTR
from tests.support.scripted_http import json_params_matcher, query_param_matcher, scripted_proxy
from vnc_client import transport
from vnc_client.client import LIST_BULK_THRESHOLD, VncClient, encode_filters
from vnc_client.errors import InvalidResponse

BASE = "http://vnc.test:8082"
RULE_FQ = ["default-policy-management", "k8s-default-ingress-np-0-podSelector-0-0"]
RULE_BODY = {
    "fq_name": RULE_FQ,
    "parent_type": "policy-management",
    "action_list": {"simple_action": "pass"},
    "direction": ">",
}


@pytest.fixture
def rsps(monkeypatch):
    yield from scripted_proxy(monkeypatch)


@pytest.fixture
def client():
    with VncClient("vnc.test") as c:
        yield c


def sent_json(call: Any) -> Any:
    return json.loads(call.request.body)


def test_create_posts_wrapped_body_and_returns_it_with_the_server_fields(rsps, client):
    rsps.post(f"{BASE}/firewall-rules", match=[json_params_matcher({"firewall-rule": RULE_BODY})],
              json={"firewall-rule": {"uuid": "u-1", "fq_name": RULE_FQ, "name": RULE_FQ[-1],
                                      "parent_uuid": "pm-1", "href": f"{BASE}/firewall-rule/u-1"}})
    created = client.create("firewall-rule", RULE_BODY)
    assert created["uuid"] == "u-1"
    assert created["parent_uuid"] == "pm-1"
    assert created["action_list"] == {"simple_action": "pass"}


@pytest.mark.parametrize("bad_type", ["firewall-rules", "no-such-type", ""])
def test_unknown_resource_type_is_refused_before_any_request(rsps, client, bad_type):
    with pytest.raises(ValueError, match="unknown resource type"):
        client.create(bad_type, {"fq_name": ["x"]})
    assert len(rsps.calls) == 0


def test_create_refuses_a_body_that_is_not_a_mapping(client):
    with pytest.raises(ValueError, match="must be a dict, got list"):
        client.create("tag", ["application=k8s"])  # type: ignore[arg-type]


def test_read_by_uuid_with_fields(rsps, client):
    rsps.get(f"{BASE}/firewall-policy/p-1",
             match=[query_param_matcher({"fields": "firewall_rule_refs,annotations"})],
             json={"firewall-policy": {"uuid": "p-1", "firewall_rule_refs": []}})
    got = client.read("firewall-policy", "p-1", fields=["firewall_rule_refs", "annotations"])
    assert got == {"uuid": "p-1", "firewall_rule_refs": []}


def test_read_excluding_back_refs_and_children_sends_the_official_flags(rsps, client):
    rsps.get(f"{BASE}/project/p-1",
             match=[query_param_matcher({"exclude_back_refs": "True", "exclude_children": "True"})],
             json={"project": {"uuid": "p-1"}})
    assert client.read("project", "p-1", exclude_back_refs=True, exclude_children=True) == {"uuid": "p-1"}


def test_read_by_fq_name_resolves_the_uuid_first(rsps, client):
    rsps.post(f"{BASE}/fqname-to-id",
              match=[json_params_matcher({"type": "firewall-rule", "fq_name": RULE_FQ})],
              json={"uuid": "u-1"})
    rsps.get(f"{BASE}/firewall-rule/u-1", json={"firewall-rule": {"uuid": "u-1", "fq_name": RULE_FQ}})
    assert client.read("firewall-rule", tuple(RULE_FQ))["uuid"] == "u-1"
    assert [c.request.method for c in rsps.calls] == ["POST", "GET"]


def test_uuid_is_quoted_into_the_path(rsps, client):
    rsps.get(f"{BASE}/tag/a%2Fb%3Fc", json={"tag": {"uuid": "a/b?c"}})
    assert client.read("tag", "a/b?c") == {"uuid": "a/b?c"}


def test_empty_uuid_is_refused(client):
    with pytest.raises(ValueError, match="empty uuid"):
        client.read("tag", "")


def test_update_is_a_partial_put(rsps, client):
    change = {"firewall_policy_refs": [{"to": ["default-policy-management", "k8s-allowall"],
                                        "attr": {"sequence": "3.0"}}]}
    rsps.put(f"{BASE}/application-policy-set/a-1",
             match=[json_params_matcher({"application-policy-set": change})],
             json={"application-policy-set": {"uuid": "a-1", "href": f"{BASE}/application-policy-set/a-1"}})
    assert client.update("application-policy-set", "a-1", change)["uuid"] == "a-1"


def test_delete_by_uuid_and_by_fq_name(rsps, client):
    rsps.delete(f"{BASE}/address-group/g-1", body="")
    rsps.post(f"{BASE}/fqname-to-id", json={"uuid": "g-2"})
    rsps.delete(f"{BASE}/address-group/g-2", body="")
    assert client.delete("address-group", "g-1") is None
    client.delete("address-group", ["default-policy-management", "10.0.0.0/8"])
    assert [c.request.url for c in rsps.calls] == [
        f"{BASE}/address-group/g-1", f"{BASE}/fqname-to-id", f"{BASE}/address-group/g-2"]


def test_list_summary(rsps, client):
    items = [{"uuid": "t-1", "fq_name": ["application=k8s"], "href": f"{BASE}/tag/t-1"}]
    rsps.get(f"{BASE}/tags", match=[query_param_matcher({})], json={"tags": items})
    assert client.list("tag") == items


def test_list_detail_with_every_query_option(rsps, client):
    rsps.get(f"{BASE}/firewall-rules", match=[query_param_matcher({
        "detail": "True",
        "fields": "annotations,endpoint_1",
        "parent_id": "pm-1,pm-2",
        "back_ref_id": "fp-1",
        "obj_uuids": "u-1,u-2",
        "filters": 'display_name=="a",direction==">",direction=="<>"',
    })], json={"firewall-rules": [{"firewall-rule": {"uuid": "u-1"}}, {"firewall-rule": {"uuid": "u-2"}}]})
    got = client.list("firewall-rule", detail=True, fields=["annotations", "endpoint_1"], parent_id=["pm-1", "pm-2"],
                      back_ref_id="fp-1", obj_uuids=["u-1", "u-2"],
                      filters={"display_name": "a", "direction": [">", "<>"]})
    assert got == [{"uuid": "u-1"}, {"uuid": "u-2"}]


def test_list_with_many_ids_posts_the_query_to_list_bulk_collection(rsps, client):
    uuids = [f"v-{i}" for i in range(LIST_BULK_THRESHOLD + 1)]
    rsps.post(f"{BASE}/list-bulk-collection", match=[json_params_matcher({
        "type": "virtual-machine-interface", "obj_uuids": ",".join(uuids), "fields": "tag_refs", "detail": True})],
        json={"virtual-machine-interfaces": [{"virtual-machine-interface": {"uuid": "v-0", "tag_refs": []}}]})
    got = client.list("virtual-machine-interface", obj_uuids=uuids, fields=["tag_refs"], detail=True)
    assert got == [{"uuid": "v-0", "tag_refs": []}]


def test_list_at_the_threshold_still_uses_get(rsps, client):
    uuids = [f"v-{i}" for i in range(LIST_BULK_THRESHOLD)]
    rsps.get(f"{BASE}/virtual-machine-interfaces", match=[query_param_matcher(
        {"back_ref_id": ",".join(uuids)})], json={"virtual-machine-interfaces": []})
    assert client.list("virtual-machine-interface", back_ref_id=uuids) == []


def test_list_by_parent_fq_name(rsps, client):
    rsps.get(f"{BASE}/address-groups",
             match=[query_param_matcher({"parent_fq_name_str": "default-policy-management"})],
             json={"address-groups": []})
    assert client.list("address-group", parent_fq_name=["default-policy-management"]) == []


@pytest.mark.parametrize("option", ["obj_uuids", "back_ref_id", "parent_id"])
def test_list_with_an_empty_id_list_matches_nothing_without_a_request(rsps, client, option):
    assert client.list("virtual-machine-interface", **{option: []}) == []
    assert len(rsps.calls) == 0


def test_list_answer_without_the_plural_key_is_an_invalid_response(rsps, client):
    rsps.get(f"{BASE}/tags", json={"tag": []})
    with pytest.raises(InvalidResponse, match="no 'tags' list"):
        client.list("tag")


def test_filters_are_encoded_like_the_official_library():
    assert encode_filters({"a": "x", "b": [1, True], "c": None}) == 'a=="x",b==1,b==true,c==null'
    with pytest.raises(ValueError, match="cannot contain a comma"):
        encode_filters({"display_name": "a,b"})


def test_fqname_to_id_and_id_to_fqname(rsps, client):
    rsps.post(f"{BASE}/fqname-to-id", match=[json_params_matcher(
        {"type": "tag", "fq_name": ["namespace=default"]})], json={"uuid": "t-1"})
    rsps.post(f"{BASE}/id-to-fqname", match=[json_params_matcher({"uuid": "t-1"})],
              json={"type": "tag", "fq_name": ["namespace=default"]})
    assert client.fqname_to_id("tag", ["namespace=default"]) == "t-1"
    assert client.id_to_fqname("t-1") == {"type": "tag", "fq_name": ["namespace=default"]}


def test_ref_update_add_by_fq_name_with_attr(rsps, client):
    rsps.post(f"{BASE}/ref-update", match=[json_params_matcher({
        "operation": "ADD", "type": "firewall-policy", "uuid": "fp-1", "ref-type": "firewall-rule",
        "ref-fq-name": RULE_FQ, "attr": {"sequence": "00000.0"}})], json={"uuid": "fp-1"})
    assert client.ref_update("firewall-policy", "fp-1", "firewall-rule", ref_fq_name=RULE_FQ,
                             attr={"sequence": "00000.0"}) == "fp-1"


def test_ref_update_delete_by_uuid_accepts_the_ref_field_name(rsps, client):
    rsps.post(f"{BASE}/ref-update", match=[json_params_matcher({
        "operation": "DELETE", "type": "application-policy-set", "uuid": "a-1", "ref-type": "firewall-policy",
        "ref-uuid": "fp-1", "attr": None})], json={"uuid": "a-1"})
    assert client.ref_update("application-policy-set", "a-1", "firewall_policy_refs", "fp-1",
                             operation="DELETE") == "a-1"


@pytest.mark.parametrize("kwargs, message", [
    ({"ref_uuid": "x", "operation": "REPLACE"}, "ADD or DELETE"),
    ({}, "needs ref_uuid or ref_fq_name"),
])
def test_ref_update_refuses_bad_arguments(rsps, client, kwargs, message):
    with pytest.raises(ValueError, match=message):
        client.ref_update("firewall-policy", "fp-1", "firewall-rule", **kwargs)
    assert len(rsps.calls) == 0


def test_set_tag_single_value_and_removal(rsps, client):
    rsps.post(f"{BASE}/set-tag", match=[json_params_matcher({
        "obj_type": "virtual-machine-interface", "obj_uuid": "v-1",
        "namespace": {"is_global": True, "value": "default"}})], json={})
    rsps.post(f"{BASE}/set-tag", match=[json_params_matcher({
        "obj_type": "virtual-machine-interface", "obj_uuid": "v-1", "app": None})], json={})
    client.set_tag("virtual-machine-interface", "v-1", "namespace", "default")
    client.set_tag("virtual-machine-interface", "v-1", "app", None)
    # each call is one request, with the body its matcher names (in that order)
    bodies = [json.loads(call.request.body) for call in rsps.calls]
    assert [sorted(set(body) - {"obj_type", "obj_uuid"}) for body in bodies] == [["namespace"], ["app"]]
    assert bodies[1]["app"] is None


def test_set_labels_adds_and_deletes_values_of_the_label_type(rsps, client):
    rsps.post(f"{BASE}/set-tag", match=[json_params_matcher({
        "obj_type": "virtual-machine-interface", "obj_uuid": "v-1",
        "label": {"is_global": True, "add_values": ["k8s-sel-aaa"], "delete_values": ["k8s-sel-bbb"]}})], json={})
    client.set_labels("virtual-machine-interface", "v-1", add=["k8s-sel-aaa"], delete=["k8s-sel-bbb"])
    assert len(rsps.calls) == 1
    assert json.loads(rsps.calls[0].request.body)["label"] == {
        "is_global": True, "add_values": ["k8s-sel-aaa"], "delete_values": ["k8s-sel-bbb"]}


@pytest.mark.parametrize("changes, message", [({}, "at least one tag type"), ({"obj_uuid": None}, "not a tag type")])
def test_set_tags_refuses_bad_changes(rsps, client, changes, message):
    with pytest.raises(ValueError, match=message):
        client.set_tags("virtual-machine-interface", "v-1", changes)
    assert len(rsps.calls) == 0


def test_home_page(rsps, client):
    rsps.get(f"{BASE}/", json={"href": BASE, "links": []})
    assert client.home() == {"href": BASE, "links": []}


def test_success_with_a_body_that_is_not_json_is_an_invalid_response(rsps, client):
    rsps.get(f"{BASE}/tag/t-1", body="<html>proxy</html>")
    with pytest.raises(InvalidResponse, match="GET /tag/t-1: status 200"):
        client.read("tag", "t-1")


def test_create_answer_without_the_object_is_an_invalid_response(rsps, client):
    rsps.post(f"{BASE}/tags", json={"uuid": "t-1"})
    with pytest.raises(InvalidResponse, match="no 'tag' object"):
        client.create("tag", {"fq_name": ["namespace=default"], "tag_type_name": "namespace",
                            "tag_value": "default"})


def test_every_write_is_logged_once_at_debug_with_type_and_fq_name(rsps, client, caplog):
    """The reconciler owns the INFO line of each write; the client's own line is DEBUG."""
    rsps.post(f"{BASE}/firewall-rules", json={"firewall-rule": {"uuid": "u-1", "fq_name": RULE_FQ}})
    rsps.put(f"{BASE}/firewall-rule/u-1", json={"firewall-rule": {"uuid": "u-1"}})
    rsps.post(f"{BASE}/fqname-to-id", json={"uuid": "u-1"})
    rsps.delete(f"{BASE}/firewall-rule/u-1", body="")
    rsps.post(f"{BASE}/ref-update", json={"uuid": "fp-1"})
    rsps.post(f"{BASE}/set-tag", json={})
    with caplog.at_level(logging.DEBUG, logger="vnc_client.client"):
        client.create("firewall-rule", RULE_BODY)
        client.update("firewall-rule", "u-1", {"fq_name": RULE_FQ, "direction": "<>"})
        client.delete("firewall-rule", RULE_FQ)
        client.ref_update("firewall-policy", "fp-1", "firewall-rule", "u-1", attr={"sequence": "00000.0"})
        client.set_tag("virtual-machine-interface", "v-1", "namespace", "default")
    writes = [getattr(r, FIELDS_ATTR) for r in caplog.records if r.getMessage() == "vnc write"]
    fq = ":".join(RULE_FQ)
    assert writes[0] == {"op": "create", "type": "firewall-rule", "fq_name": fq, "uuid": "u-1"}
    assert writes[1] == {"op": "update", "type": "firewall-rule", "fq_name": fq, "uuid": "u-1",
                         "fields": "direction,fq_name"}
    assert writes[2] == {"op": "delete", "type": "firewall-rule", "fq_name": fq, "uuid": "u-1"}
    assert {k: writes[3][k] for k in ("op", "type", "uuid", "ref_type", "ref")} == {
        "op": "ref-add", "type": "firewall-policy", "uuid": "fp-1", "ref_type": "firewall-rule", "ref": "u-1"}
    assert (writes[4]["op"], writes[4]["type"], writes[4]["uuid"]) == ("set-tag", "virtual-machine-interface", "v-1")
    assert len(writes) == 5
    assert [r.levelname for r in caplog.records] == ["DEBUG"] * 5


def test_observer_sees_every_attempt_with_a_path_template_and_its_duration(rsps, monkeypatch):
    """The seconds reported are the time the request took: the server's answers here take 0.25 s
    and 1.5 s on a clock that moves only while it answers."""
    clock = [1000.0]
    monkeypatch.setattr(transport, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=time.sleep))

    def answering_in(seconds: float):
        """A matcher the server runs while it answers: the clock moves only then."""
        def advance(_request: Any) -> bool:
            clock[0] += seconds
            return True
        return [advance]

    seen: List[Tuple[str, str, Optional[int], float]] = []
    rsps.get(f"{BASE}/firewall-rule/u-1", json={"firewall-rule": {"uuid": "u-1"}}, match=answering_in(0.25))
    rsps.get(f"{BASE}/firewall-rule/u-2", status=404, body="not found", match=answering_in(1.5))
    with VncClient("vnc.test", observer=lambda *a: seen.append(a)) as c:
        c.read("firewall-rule", "u-1")
        with pytest.raises(Exception):
            c.read("firewall-rule", "u-2")
    assert [s[:3] for s in seen] == [("GET", "/firewall-rule/{uuid}", 200), ("GET", "/firewall-rule/{uuid}", 404)]
    assert [s[3] for s in seen] == [pytest.approx(0.25), pytest.approx(1.5)]


def test_a_failing_observer_does_not_break_the_call(rsps, caplog):
    def broken(*_: Any) -> None:
        raise RuntimeError("metrics down")

    rsps.get(f"{BASE}/", json={"links": []})
    with VncClient("vnc.test", observer=broken) as c:
        assert c.home() == {"links": []}
    assert "vnc observer failed" in caplog.text


@pytest.mark.parametrize("kwargs, message", [
    ({"endpoints": ""}, "empty VNC endpoint"),
    ({"endpoints": []}, "at least one VNC endpoint"),
    ({"endpoints": "host:http"}, "invalid port"),
    ({"endpoints": "ftp://host"}, "not an http"),
    ({"concurrency": 0}, "concurrency"),
    ({"read_timeout": 0}, "timeouts"),
    ({"ca_file": "/no/such/ca.pem"}, "does not exist"),
])
def test_bad_settings_are_refused_with_a_reason(kwargs, message):
    with pytest.raises(ValueError, match=message):
        VncClient(**kwargs)


def test_endpoints_accept_comma_lists_ports_ipv6_and_urls():
    with VncClient("10.0.0.1, ::1,h:9000,https://api.example/contrail/", 8082) as c:
        assert c.endpoints == ["http://10.0.0.1:8082", "http://[::1]:8082", "http://h:9000",
                               "https://api.example/contrail"]
        assert c.current_endpoint == "http://10.0.0.1:8082"


# --- paginated listings ---------------------------------------------------------------------------

def _page_query(marker: str, **extra: str) -> Any:
    return query_param_matcher({"page_marker": marker, "page_limit": "2", **extra})


def test_list_pages_follows_the_marker_and_asks_for_each_page_when_the_last_is_taken(rsps, client):
    rsps.get(f"{BASE}/tags", match=[_page_query("None", fields="tag_id")],
             json={"tags": [{"uuid": "t-1"}, {"uuid": "t-2"}], "marker": "application=a:t-2"})
    rsps.get(f"{BASE}/tags", match=[_page_query("application=a:t-2", fields="tag_id")],
             json={"tags": [{"uuid": "t-3"}], "marker": None})
    pages = client.list_pages("tag", 2, fields=["tag_id"])
    assert next(pages) == [{"uuid": "t-1"}, {"uuid": "t-2"}]
    assert len(rsps.calls) == 1  # the next page only once this one is taken
    assert list(pages) == [[{"uuid": "t-3"}]]
    assert len(rsps.calls) == 2


def test_list_pages_unwraps_detailed_items(rsps, client):
    rsps.get(f"{BASE}/tags", match=[_page_query("None", detail="True")],
             json={"tags": [{"tag": {"uuid": "t-1"}}], "marker": None})
    assert list(client.list_pages("tag", 2, detail=True)) == [[{"uuid": "t-1"}]]


def test_a_server_that_does_not_paginate_answers_in_one_page(rsps, client):
    rsps.get(f"{BASE}/tags", json={"tags": [{"uuid": f"t-{i}"} for i in range(5)]})
    assert [len(page) for page in client.list_pages("tag", 2)] == [5]


def test_a_marker_that_does_not_move_the_walk_on_is_an_invalid_response(rsps, client):
    rsps.get(f"{BASE}/tags", match=[_page_query("None")], json={"tags": [{"uuid": "t-1"}], "marker": "m:t-1"})
    rsps.get(f"{BASE}/tags", match=[_page_query("m:t-1")], json={"tags": [{"uuid": "t-1"}], "marker": "m:t-1"})
    with pytest.raises(InvalidResponse, match="does not move the walk on"):
        list(client.list_pages("tag", 2))


def test_list_pages_with_many_ids_carries_the_page_in_the_list_bulk_body(rsps, client):
    uuids = [f"v-{i}" for i in range(LIST_BULK_THRESHOLD + 1)]
    base = {"type": "virtual-machine-interface", "obj_uuids": ",".join(uuids), "detail": False, "page_limit": "2"}
    rsps.post(f"{BASE}/list-bulk-collection", match=[json_params_matcher({**base, "page_marker": "None"})],
              json={"virtual-machine-interfaces": [{"uuid": "v-0"}, {"uuid": "v-1"}], "marker": "v-1"})
    rsps.post(f"{BASE}/list-bulk-collection", match=[json_params_matcher({**base, "page_marker": "v-1"})],
              json={"virtual-machine-interfaces": [], "marker": None})
    assert list(client.list_pages("virtual-machine-interface", 2, obj_uuids=uuids)) == [
        [{"uuid": "v-0"}, {"uuid": "v-1"}], []]


def test_list_pages_refuses_a_page_limit_below_one(client):
    with pytest.raises(ValueError, match="page_limit"):
        next(client.list_pages("tag", 0))
