"""`/Snh_ClusterNetworkPolicyDatabaseList` (SPEC 10, 13): the JSON shape, what the HTML shows
(tier, priority, subject, each rule's action, the emitted firewall policy and rules, state, errors
and rejections), escaping, filters, the index link, read-only."""
from __future__ import annotations

import pytest

from introspect.app import create_app
from tests.support.introspect_support import CNP_SPEC, FP_CNP, NOW, PM, R_CNP_DENY, XSS, build_db, call

PATH = "/Snh_ClusterNetworkPolicyDatabaseList"


@pytest.fixture
def db():
    return build_db()


@pytest.fixture
def app(db):
    return create_app(db, clock=lambda: NOW)


def rows(app, query=""):
    reply = call(app, f"{PATH}?format=json{query}")
    assert reply.status == 200 and reply.headers["Content-Type"] == "application/json"
    return reply.json()["cluster_network_policies"]


def test_json_lists_them_like_network_policies_plus_tier_priority_subject_and_actions(app):
    by_name = {row["name"]: row for row in rows(app)}
    assert by_name["deny-tenants"] == {
        "uid": "uid-cnp-tenants", "name": "deny-tenants", "tier": "Admin", "priority": 10,
        "subject": CNP_SPEC["subject"], "spec": CNP_SPEC,
        "actions": [{"direction": "ingress", "index": 0, "name": "from-monitoring", "action": "Pass"},
                    {"direction": "ingress", "index": 1, "name": "no-tenants", "action": "Deny"}],
        "firewall_policy": [PM, FP_CNP], "rules": [R_CNP_DENY], "state": "synced", "errors": []}
    assert list(by_name) == ["bad", "deny-tenants"]  # by name


def test_a_malformed_one_is_listed_rejected_with_the_translators_reasons_and_its_own(app, db):
    db.errors.append({"kind": "ClusterNetworkPolicy", "namespace": "", "name": "bad",
                      "reason": "subject: must be an object"})
    db.errors.append({"kind": "NetworkPolicy", "namespace": "", "name": "bad", "reason": "not this one"})
    bad = {row["name"]: row for row in rows(app)}["bad"]
    assert bad["state"] == "rejected" and bad["firewall_policy"] == [] and bad["rules"] == []
    assert bad["errors"] == [f"egress[0]: unknown action {XSS}", "subject: must be an object"]
    # What can be read of the spec is shown; a rule that is not an object has no name nor action.
    assert bad["actions"] == [{"direction": "egress", "index": 0, "name": XSS, "action": XSS},
                              {"direction": "egress", "index": 1, "name": "", "action": ""}]


def test_html_shows_tier_priority_subject_actions_emitted_objects_and_escapes(app):
    reply = call(app, PATH)
    assert reply.status == 200 and reply.headers["Content-Type"] == "text/html; charset=utf-8"
    text = reply.text
    assert "<h1>ClusterNetworkPolicies</h1>" in text
    assert "ingress[0] from-monitoring: Pass" in text and "ingress[1] no-tenants: Deny" in text
    assert "Admin" in text and "<code>10</code>" in text
    assert f'<a href="/Snh_FirewallPolicyDatabaseList?name={FP_CNP}">' in text
    assert R_CNP_DENY in text and "team" in text and "payments" in text
    assert XSS not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert '<span class="state state-rejected">rejected</span>' in text


def test_filters_by_tier_state_and_name(app, db):
    db.cluster_network_policies["deny-tenants"].tier = "Baseline"
    assert [row["name"] for row in rows(app, "&tier=Baseline")] == ["deny-tenants"]
    assert [row["name"] for row in rows(app, "&state=rejected")] == ["bad"]
    assert [row["name"] for row in rows(app, "&q=TENANT")] == ["deny-tenants"]


def test_linked_from_the_index_with_its_count(app):
    assert f'<a href="{PATH}">ClusterNetworkPolicies</a> <span class="count">2</span>' in call(app, "/").text


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
def test_read_only(app, method):
    assert call(app, PATH, method).status == 405


def test_the_pod_page_lists_the_rules_that_concern_the_pod_as_subject_or_peer_in_order(app, db):
    db.namespaces["tools"].labels["team"] = "tenants"  # tools/debug becomes a peer of the Deny
    subject = call(app, "/Snh_PodDetail?namespace=shop&name=web&format=json").json()["cluster_rules"]
    assert [(r["policy"], r["tier"], r["priority"], r["direction"], r["rule"], r["rule_name"], r["action"],
             r["as"]) for r in subject] == [
        ("deny-tenants", "Admin", 10, "ingress", 0, "from-monitoring", "Pass", "subject"),
        ("deny-tenants", "Admin", 10, "ingress", 1, "no-tenants", "Deny", "subject")]
    peer = call(app, "/Snh_PodDetail?namespace=tools&name=debug&format=json").json()["cluster_rules"]
    assert [(r["policy"], r["rule"], r["action"], r["as"]) for r in peer] == [
        ("deny-tenants", 1, "Deny", "peer")]
    html = call(app, "/Snh_PodDetail?namespace=tools&name=debug").text
    assert 'id="cluster-rules"' in html and "this pod is one of its peers" in html
    assert f'href="{PATH}?name=deny-tenants"' in html


def test_the_pod_page_says_when_no_cluster_rule_concerns_the_pod(app, db):
    assert call(app, "/Snh_PodDetail?namespace=tools&name=debug&format=json").json()["cluster_rules"] == []
    html = call(app, "/Snh_PodDetail?namespace=tools&name=debug").text
    assert "No ClusterNetworkPolicy rule applies to this pod" in html and 'id="cluster-rules"' not in html
