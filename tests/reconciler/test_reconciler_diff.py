"""diff.plan and the body comparison: what to write next for one object, or what to wait for."""
from __future__ import annotations

import json

from kube_manager.reconciler import compare
from kube_manager.reconciler.compare import AsDesired, all_targets, changed_fields, kept, matches, same
from kube_manager.reconciler.diff import plan
from kube_manager.reconciler.multimap import Multimap
from kube_manager.reconciler.ownership import OwnershipMarks, annotation_map
from tests.support.diff_support import PM, FakeView, policy, policy_body, ref, rule, rule_body, tag

# --- comparison --------------------------------------------------------------------------------


def test_same_ignores_what_the_server_adds_but_not_what_we_set():
    desired = {"endpoint_1": {"tags": ["a=b"]}, "service": {"protocol": "tcp"}}
    actual = {"endpoint_1": {"tags": ["a=b"], "tag_ids": [7], "any": None}, "service": {"protocol": "tcp"},
              "uuid": "u", "href": "h", "id_perms": {"enable": True}}
    assert same(desired, actual)
    assert not same(desired, {**actual, "endpoint_1": {"tags": ["a=c"]}})
    assert not same({"tags": ["a", "b"]}, {"tags": ["a"]})


def test_empty_values_are_all_equal():
    assert same({"firewall_rule_refs": []}, {})
    assert same({"x": None}, {"x": {}})
    assert not same({"x": []}, {"x": ["y"]})
    # a dict of nothing set reads back as one of nothing set, even where the server added to it
    assert same({"subnet": None}, {"subnet": None, "tag_ids": []})
    assert not same({"subnet": None}, {"subnet": None, "tag_ids": [7]})


def test_refs_compare_by_target_and_attr_regardless_of_order_and_uuid():
    desired = policy_body(rule("r1"), rule("r2"))
    actual = {"firewall_rule_refs": [
        {"to": list(PM) + ["r2"], "uuid": "u2", "href": "h", "attr": {"sequence": "00001.0"}},
        {"to": list(PM) + ["r1"], "uuid": "u1", "attr": {"sequence": "00000.0"}}]}
    assert matches("firewall-policy", desired, actual)
    actual["firewall_rule_refs"][0]["attr"] = {"sequence": "00007.0"}
    assert changed_fields("firewall-policy", desired, actual) == {
        "firewall_rule_refs": desired["firewall_rule_refs"]}


def test_changed_fields_never_sends_identity():
    desired = {"fq_name": ["x"], "parent_type": "policy-management", "address_group_prefix": {"subnet": []}}
    assert changed_fields("address-group", desired, {"fq_name": ["y"]}) == {}


def test_all_targets_names_ref_lists_and_rule_endpoints():
    body = rule_body("namespace=ns", "application=k8s", address_group="default-policy-management:10.0.0.0/8")
    assert set(all_targets("firewall-rule", body)) == {
        tag("namespace=ns"), tag("application=k8s"), ("address-group", PM + ("10.0.0.0/8",))}
    assert all_targets("firewall-policy", policy_body(rule("r1"))) == [rule("r1")]


# --- plan --------------------------------------------------------------------------------------


def test_create_waits_for_its_tags_then_creates():
    key = rule("r")
    body = rule_body("a=b")
    step = plan(key, body, None, FakeView())
    assert step.action == "wait" and step.pending == [tag("a=b")]
    step = plan(key, body, None, FakeView(present={tag("a=b")}))
    assert step.action == "create" and step.body == body and step.complete


def test_a_failed_hard_dependency_blocks():
    step = plan(rule("r"), rule_body("a=b"), None, FakeView(blocked={tag("a=b")}))
    assert step.action == "wait" and step.blocked == [tag("a=b")] and not step.pending


def test_unchanged_object_needs_nothing():
    body = rule_body("a=b")
    step = plan(rule("r"), body, {**body, "uuid": "u"}, FakeView(present={tag("a=b")}))
    assert step.action == "none" and step.complete


def test_update_sends_only_the_changed_fields():
    old = {**rule_body("a=b"), "uuid": "u"}
    new = rule_body("a=b")
    new["action_list"] = {"simple_action": "deny"}
    step = plan(rule("r"), new, old, FakeView(present={tag("a=b")}))
    assert step.action == "update" and step.uuid == "u" and step.body == {"action_list": {"simple_action": "deny"}}


def test_ref_list_waits_for_pending_rules_and_skips_failed_ones():
    key = policy("p")
    body = policy_body(rule("r1"), rule("r2"), rule("r3"))
    step = plan(key, body, None, FakeView(present={rule("r1")}, blocked={rule("r3")}))
    assert step.action == "wait" and step.pending == [rule("r2")]
    step = plan(key, body, None, FakeView(present={rule("r1"), rule("r2")}, blocked={rule("r3")}))
    assert step.action == "create" and not step.complete and step.blocked == [rule("r3")]
    assert [r["to"][-1] for r in step.body["firewall_rule_refs"]] == ["r1", "r2"]


def test_add_gate_holds_a_ref_back():
    key = policy("k8s-denyall")
    deny = rule("deny")
    gate = policy("p")
    body = policy_body(deny)
    assert plan(key, body, None, FakeView(present={deny}, add_gates={deny: gate})).pending == [gate]
    step = plan(key, body, None, FakeView(present={deny}, add_gates={deny: gate}, blocked={gate}))
    assert step.action == "create" and step.body["firewall_rule_refs"] == [] and step.blocked == [gate]


def test_removal_gate_pending_waits_and_blocked_keeps_old_refs():
    key = policy("p")
    actual = {**policy_body(rule("r1"), rule("old")), "uuid": "u"}
    body = policy_body(rule("r1"))
    gate = policy("k8s-denyall")
    present = {rule("r1"), rule("old")}
    assert plan(key, body, actual, FakeView(present=present, remove_gate=gate)).pending == [gate]
    step = plan(key, body, actual, FakeView(present=present, remove_gate=gate, blocked={gate}))
    assert step.action == "none" and not step.complete and step.blocked == [gate]
    step = plan(key, body, actual, FakeView(present=present))
    assert step.action == "update" and [r["to"][-1] for r in step.body["firewall_rule_refs"]] == ["r1"]


def test_delete_waits_for_referrers_to_let_go():
    key = tag("a=b")
    actual = {"fq_name": ["a=b"], "uuid": "t"}
    holder = rule("r")
    assert plan(key, None, actual, FakeView(referrers={key: [holder]})).pending == [holder]
    assert plan(key, None, actual, FakeView(referrers={key: [holder]}, blocked={holder})).blocked == [holder]
    step = plan(key, None, actual, FakeView())
    assert step.action == "delete" and step.uuid == "t"


def test_nothing_desired_nothing_there():
    assert plan(tag("x=y"), None, None, FakeView()).action == "none"


# --- ownership ---------------------------------------------------------------------------------


def test_marks_decide_ownership_not_names():
    marks = OwnershipMarks(owner="k8s", cluster="c1")
    ours = {"fq_name": ["x"], "annotations": {"key_value_pair": [
        {"key": "owner", "value": "k8s"}, {"key": "cluster", "value": "c1"}]}}
    other_cluster = {"annotations": {"key_value_pair": [
        {"key": "owner", "value": "k8s"}, {"key": "cluster", "value": "c2"}]}}
    assert marks.owns(ours)
    assert not marks.owns(other_cluster)
    assert not marks.owns({"fq_name": ["k8s-ns-np"]})
    assert annotation_map({"annotations": {"key_value_pair": [None, {"key": 3}]}}) == {}
    assert "c2" in marks.describe(other_cluster)


def test_one_ref_moved_in_a_long_list_is_a_ref_update():
    from kube_manager.reconciler.diff import LONG_REF_LIST, RefUpdate
    rules = [rule(f"r{i}") for i in range(LONG_REF_LIST + 2)]
    key = policy("p")
    view = FakeView(present=set(rules))
    actual = {**policy_body(*rules[:-1]), "uuid": "u"}

    def change(desired):
        step = plan(key, desired, actual, view)
        return step.action, step.ref_change
    last = f"{len(rules) - 1:05d}.0"
    assert change(policy_body(*rules)) == (
        "update", RefUpdate("firewall_rule_refs", "ADD", rules[-1], {"sequence": last}))
    assert change(policy_body(*rules[:-2])) == ("update", RefUpdate("firewall_rule_refs", "DELETE", rules[-2]))
    assert change(policy_body(*rules[1:])) == ("update", None)  # many moved (renumbered): one PUT
    assert change(policy_body(*rules[:-1])) == ("none", None)
    short = {**policy_body(rule("a")), "uuid": "s"}
    step = plan(key, policy_body(), short, FakeView(present={rule("a")}))
    assert step.action == "update" and step.ref_change is None  # a short list: a PUT is as small
    renamed = {**policy_body(*rules), "display_name": "x"}
    assert change(renamed) == ("update", None)  # more than the ref list changes: one PUT


def test_kept_shares_what_reads_back_as_desired_and_keeps_drift_and_the_uuid():
    desired = {"fq_name": list(rule("r")[1]), "parent_type": "policy-management",
               "endpoint_1": {"tags": ["app=web"]}, "endpoint_2": {"any": True},
               "service": {"protocol": "tcp", "dst_ports": {"start_port": 80, "end_port": 80}}}
    listed = {"uuid": "u-1", "href": "http://x/firewall-rule/u-1", "name": "r", "parent_uuid": "p-1",
              "fq_name": list(rule("r")[1]), "parent_type": "policy-management",
              "endpoint_1": {"tags": ["app=web"], "tag_ids": [7]},  # the server's extra key: still "as desired"
              "endpoint_2": {"any": True}, "id_perms": {"enable": True},
              "service": {"protocol": "tcp", "dst_ports": {"start_port": 81, "end_port": 81}}}  # drift
    result = kept("firewall-rule", desired, listed)
    assert set(result) == {"uuid", "fq_name", "parent_type", "endpoint_1", "endpoint_2", "service"}
    assert all(result[name] is desired[name] for name in ("fq_name", "parent_type", "endpoint_1", "endpoint_2"))
    assert result["service"] is listed["service"]
    assert changed_fields("firewall-rule", desired, result) == {"service": desired["service"]}
    assert kept("tag", {"fq_name": ["a=b"]}, {"uuid": "t", "tag_id": "0x1", "fq_name": ["a=b"]})["tag_id"] == "0x1"
    assert kept("firewall-rule", None, listed) is listed  # not ours to keep in step: kept whole, deleted soon


def test_an_object_read_back_exactly_as_desired_is_kept_as_the_desired_body_and_its_uuid():
    """Memory (issue 12): no dict per such object, the desired body itself with the uuid; it reads
    like the dict it replaces and diffs as settled without a field compared."""
    desired = {"fq_name": list(rule("r")[1]), "endpoint_1": {"tags": ["app=web"]}, "endpoint_2": {"any": True}}
    listed = json.loads(json.dumps({**desired, "uuid": "u-1", "href": "http://x/firewall-rule/u-1"}))
    result = kept("firewall-rule", desired, listed)
    assert isinstance(result, AsDesired) and result.body is desired
    assert result == {"uuid": "u-1", **desired} and dict(result) == {"uuid": "u-1", **desired}
    assert result["uuid"] == "u-1" and result.get("href") is None and len(result) == 4
    assert changed_fields("firewall-rule", desired, result) == {} and matches("firewall-rule", desired, result)
    assert changed_fields("firewall-rule", {**desired, "direction": "<>"}, result) == {"direction": "<>"}
    drifted = kept("firewall-rule", desired, {**listed, "endpoint_2": {"any": False}})
    assert not isinstance(drifted, AsDesired) and drifted["endpoint_2"] == {"any": False}


def test_kept_holds_its_own_copy_of_the_listed_uuid_and_tag_id():
    """A string kept from a listing would keep the listing's memory: the uuid is copied."""
    listed = json.loads('{"uuid": "4f1c0f0e-0000-4000-8000-000000000001", "tag_id": "0x00ff0001", "fq_name": ["a=b"]}')
    result = kept("tag", {"fq_name": ["a=b"]}, listed)
    assert result["uuid"] == listed["uuid"] and result["uuid"] is not listed["uuid"]
    assert result["tag_id"] == listed["tag_id"] and result["tag_id"] is not listed["tag_id"]


def test_kept_compares_ref_lists_as_sets_and_leaves_indexed_lists_alone():
    desired = {"fq_name": list(policy("p")[1]),
               "firewall_rule_refs": [ref(rule("a"), "00000.0"), ref(rule("b"), "00001.0")]}
    listed = {"uuid": "u", "fq_name": list(policy("p")[1]),
              "firewall_rule_refs": [dict(ref(rule("b"), "00001.0"), uuid="2"), dict(ref(rule("a"), "00000.0"), uuid="1")]}
    assert kept("firewall-policy", desired, listed)["firewall_rule_refs"] is desired["firewall_rule_refs"]
    skipped = kept("firewall-policy", desired, listed, skip={"firewall_rule_refs"})
    assert skipped["firewall_rule_refs"] is listed["firewall_rule_refs"]


def test_multimap_holds_one_value_as_itself_and_several_in_a_set():
    index: Multimap[str, str] = Multimap()
    index.add("rule", "policy-1")
    index.add("rule", "policy-1")
    assert list(index.get("rule")) == ["policy-1"] and list(index.get("other")) == []
    index.add("rule", "policy-2")
    assert sorted(index.get("rule")) == ["policy-1", "policy-2"]
    index.discard("rule", "policy-1")
    assert list(index.get("rule")) == ["policy-2"]
    index.discard("rule", "policy-3")
    index.discard("rule", "policy-2")
    assert list(index.get("rule")) == []


def test_a_listed_object_is_kept_as_desired_though_a_listing_answers_no_parent_type():
    """The config API's listing answers no `parent_type` (an identity field, never compared): an
    object that reads back as desired in every other field is kept as the desired body."""
    desired = rule_body("app=web")
    listed = json.loads(json.dumps({**desired, "uuid": "u-1", "endpoint_1": {"tags": ["app=web"], "tag_ids": [7]}}))
    del listed["parent_type"]
    result = kept("firewall-rule", desired, listed)
    assert isinstance(result, AsDesired) and result.body is desired and result["uuid"] == "u-1"
    assert not isinstance(kept("firewall-rule", desired, {k: v for k, v in listed.items() if k != "direction"}),
                          AsDesired)


def test_ref_lists_compare_as_multisets_whether_or_not_each_ref_names_a_target_of_its_own():
    """`same_refs` reads the usual lists (distinct targets) as maps; duplicates, empty attrs
    written differently and invalid refs still compare as before (multisets, attrs normalised)."""
    a, b = list(rule("a")[1]), list(rule("b")[1])
    same_refs = compare.same_refs
    field = "firewall_rule_refs"

    def body(*refs):
        return {field: list(refs)}
    assert same_refs("firewall-policy", field, body({"to": a, "attr": None}, {"to": b, "attr": {"sequence": "1"}}),
                     body({"to": b, "uuid": "u", "attr": {"sequence": "1"}}, {"to": a, "attr": {}}))
    assert not same_refs("firewall-policy", field, body({"to": a, "attr": {"sequence": "0"}}, {"to": a, "attr": {"sequence": "1"}}),
                         body({"to": a, "attr": {"sequence": "1"}}, {"to": a, "attr": {"sequence": "1"}}))
    assert same_refs("firewall-policy", field, body({"to": a, "attr": None}, {"to": a, "attr": None}),
                     body({"to": a, "attr": None}, {"to": a, "attr": None}))
    assert same_refs("firewall-policy", field, body({"to": a, "attr": None}), body({"to": a, "attr": None}, "junk"))
    assert not same_refs("firewall-policy", field, body({"to": a, "attr": None}), body({"to": b, "attr": None}))
