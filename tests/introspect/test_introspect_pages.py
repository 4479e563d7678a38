"""The introspect list and detail pages against a filled DB: content, JSON shapes, filters, escaping."""
from __future__ import annotations

import html

import pytest

from introspect.app import create_app
from introspect.lists import LIST_PAGES
from kube_manager.records.db import ConnectionStatus
from kube_manager.observability.metrics import Metrics

from tests.support.introspect_support import (AG_NAME, FP_DB, FP_MON, NOW, R_DB_DENY, R_MON_DENY, R_MONITORING,
                                R_STALE, R_WEB_TO_DB, XSS, build_db, call, policy_sequence)


@pytest.fixture
def db():
    return build_db()


@pytest.fixture
def app(db):
    metrics = Metrics()
    metrics.bind_database(db)
    return create_app(db, registry=metrics.registry, clock=lambda: NOW)


def get_json(app, url):
    reply = call(app, url)
    assert reply.status == 200, reply.text
    assert reply.headers["Content-Type"] == "application/json"
    return reply.json()


def names(rows):
    return [row["name"] for row in rows]


@pytest.mark.parametrize("page", LIST_PAGES, ids=lambda p: p.path)
def test_every_list_page_renders_html_with_its_rows(app, db, page):
    reply = call(app, page.path)
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "text/html; charset=utf-8"
    text = reply.text
    assert f"<h1>{page.title}</h1>" in text
    rows = get_json(app, page.path + "?format=json")[page.json_key]
    assert rows, "the fixture fills every list"
    assert f"Showing 1&ndash;{len(rows)} of {len(rows)}" in text
    for row in rows:
        assert html.escape(str(row["name"]), quote=False) in text


def test_index_links_every_list_with_its_count(app):
    text = call(app, "/").text
    for page in LIST_PAGES:
        count = len(get_json(app, page.path + "?format=json")[page.json_key])
        assert f'<a href="{page.path}">{page.title}</a> <span class="count">{count}</span>' in text
    assert '<a href="/explain">' in text and '1 translation error' in text
    index = get_json(app, "/?format=json")
    assert {entry["path"] for entry in index["lists"]} == {page.path for page in LIST_PAGES}


def test_kube_introspect_xml_leads_to_the_index(app):
    reply = call(app, "/kube_introspect.xml")
    assert (reply.status, reply.headers["Location"]) == (302, "/")


def test_network_policy_json_has_exactly_the_spec_shape(app, db):
    rows = get_json(app, "/Snh_NetworkPolicyDatabaseList?format=json")["network_policies"]
    assert all(set(row) == {"uid", "namespace", "name", "spec", "firewall_policy", "rules", "state",
                            "errors"} for row in rows)
    by_name = {row["name"]: row for row in rows}
    good = by_name["db-allow-web"]
    assert good == {"uid": "uid-np-db", "namespace": "shop", "name": "db-allow-web",
                    "spec": db.network_policies[("shop", "db-allow-web")].spec,
                    "firewall_policy": ["default-policy-management", FP_DB],
                    "rules": [R_WEB_TO_DB, R_DB_DENY], "state": "synced", "errors": []}
    # The record's own error and the translator's rejection, each once.
    assert by_name[XSS]["errors"] == [f"write failed: {XSS}",
                                      f"podSelector: unknown operator 'Sometimes' {XSS}"]
    assert by_name[XSS]["state"] == "rejected"


def test_pod_json_has_exactly_the_spec_shape(app):
    pods = get_json(app, "/Snh_PodDatabaseList?format=json")["pods"]
    assert pods[0] == {"uid": "uid-shop-db", "namespace": "shop", "name": "db", "ip": "10.0.1.20",
                       "tags": ["app=db", "application=k8s", "namespace=shop"], "vmi_state": "synced"}
    assert [(p["namespace"], p["name"], p["vmi_state"]) for p in pods] == [
        ("shop", "db", "synced"), ("shop", "web", "synced"), ("tools", "debug", "no-vm")]


def test_pod_page_shows_tags_state_and_why_a_pod_is_not_tagged(app):
    text = call(app, "/Snh_PodDatabaseList").text
    assert '<a href="/Snh_TagDatabaseList?name=app%3Dweb"><code>app=web</code></a>' in text
    assert '<span class="state state-no-vm">no-vm</span>' in text
    assert "virtual-machine uid-tools-debug not found" in text


def test_namespace_list_counts_pods_and_policies(app):
    rows = get_json(app, "/Snh_NamespaceDatabaseList?format=json")["namespaces"]
    assert rows == [
        {"uid": "uid-ns-shop", "name": "shop", "pods": 2, "network_policies": 2,
         "labels": {"kubernetes.io/metadata.name": "shop", "team": "payments"}},
        {"uid": "uid-ns-tools", "name": "tools", "pods": 1, "network_policies": 1,
         "labels": {"kubernetes.io/metadata.name": "tools"}},
    ]


def test_contrail_objects_show_presence_in_the_config_api(app):
    rules = {r["name"]: r for r in get_json(app, "/Snh_FirewallRuleDatabaseList?format=json")["firewall_rules"]}
    assert rules[R_WEB_TO_DB]["state"] == "present" and rules[R_WEB_TO_DB]["uuid"]
    assert rules[R_MONITORING]["state"] == "pending" and rules[R_MONITORING]["uuid"] == ""
    assert rules[R_STALE]["state"] == "stale" and rules[R_STALE]["policy"] is None
    tags = {t["name"]: t for t in get_json(app, "/Snh_TagDatabaseList?format=json")["tags"]}
    assert tags["app=db"]["type"] == "app" and tags["app=db"]["value"] == "db"
    assert tags["app=db"]["tag_id"].startswith("0x")
    assert tags["app=db"]["pods"] == ["shop/db"]
    assert tags["app=db"]["rules"] == [R_WEB_TO_DB, R_DB_DENY]  # by name
    groups = get_json(app, "/Snh_AddressGroupDatabaseList?format=json")["address_groups"]
    assert groups[0]["name"] == AG_NAME
    assert groups[0]["prefixes"] == ["10.200.0.0/24", "10.200.2.0/23", "10.200.4.0/22"]
    assert groups[0]["rules"] == [R_MONITORING]


def test_rules_and_policies_are_listed_in_evaluation_order(app):
    policies = get_json(app, "/Snh_FirewallPolicyDatabaseList?format=json")["firewall_policies"]
    expected = sorted([FP_DB, FP_MON], key=policy_sequence) + ["k8s-denyall", "k8s-allowall"]
    assert names(policies) == expected
    assert policies[-2]["sequence"] == "2.0" and policies[-1]["sequence"] == "3.0"
    db_policy = next(p for p in policies if p["name"] == FP_DB)
    assert db_policy["network_policy"] == "shop/db-allow-web" and db_policy["namespace"] == "shop"
    rules = get_json(app, "/Snh_FirewallRuleDatabaseList?format=json")["firewall_rules"]
    order = {FP_DB: [R_WEB_TO_DB], FP_MON: [R_MONITORING]}
    denies = sorted([R_DB_DENY, R_MON_DENY], key=lambda n: (policy_sequence(n), n))
    assert names(rules) == (order[expected[0]] + order[expected[1]] + denies
                            + ["k8s-allowall-ingress", "k8s-allowall-egress", R_STALE])
    aps = get_json(app, "/Snh_ApplicationPolicySetDatabaseList?format=json")["application_policy_sets"]
    assert aps[0]["tags"] == ["application=k8s"]
    assert [p["name"] for p in aps[0]["firewall_policies"]] == expected


def test_rule_page_describes_endpoints_services_and_actions(app):
    text = call(app, "/Snh_FirewallRuleDatabaseList?name=" + R_WEB_TO_DB).text
    assert "<code>app=web &amp; application=k8s &amp; namespace=shop</code>" in text
    assert "<code>tcp/5432</code>" in text
    assert '<span class="state state-pass">pass</span>' in text
    text = call(app, "/Snh_FirewallRuleDatabaseList?policy=" + FP_MON).text
    assert f"<code>address-group {AG_NAME}</code>" in text
    assert "Showing 1&ndash;1 of 1 (filtered from 7)" in text


@pytest.mark.parametrize("url, expected", [
    ("/Snh_NetworkPolicyDatabaseList?network_policy_uuid=uid-np-mon", ["allow-monitoring"]),
    ("/Snh_NetworkPolicyDatabaseList?namespace=shop", ["allow-monitoring", "db-allow-web"]),
    ("/Snh_NetworkPolicyDatabaseList?name=db-allow-web", ["db-allow-web"]),
    ("/Snh_NetworkPolicyDatabaseList?q=ALLOW", ["allow-monitoring", "db-allow-web"]),
    ("/Snh_NetworkPolicyDatabaseList?state=rejected", [XSS]),
    ("/Snh_NetworkPolicyDatabaseList?namespace=shop&name=nothing", []),
    ("/Snh_PodDatabaseList?namespace=tools", ["debug"]),
    ("/Snh_PodDatabaseList?tag=app%3Dweb", ["web"]),
    ("/Snh_PodDatabaseList?ip=10.0.1.20", ["db"]),
    ("/Snh_PodDatabaseList?vmi_state=no-vm", ["debug"]),
    ("/Snh_NamespaceDatabaseList?namespace=tools", ["tools"]),
    ("/Snh_TagDatabaseList?type=namespace", ["namespace=shop", "namespace=tools"]),
    ("/Snh_FirewallPolicyDatabaseList?namespace=shop", sorted([FP_DB, FP_MON], key=policy_sequence)),
    ("/Snh_FirewallRuleDatabaseList?namespace=shop&q=denyall",
     sorted([R_DB_DENY, R_MON_DENY], key=lambda n: (policy_sequence(n), n))),
    ("/Snh_FirewallRuleDatabaseList?tag=app%3Ddb", [R_WEB_TO_DB, R_DB_DENY]),
    ("/Snh_FirewallRuleDatabaseList?address_group=" + AG_NAME, [R_MONITORING]),
    ("/Snh_FirewallRuleDatabaseList?state=stale", [R_STALE]),
    ("/Snh_KubeApiConnectionStatus?name=pods", ["pods"]),
    # An empty filter (as a submitted form sends it) filters nothing.
    ("/Snh_PodDatabaseList?namespace=&name=", ["db", "web", "debug"]),
])
def test_filters(app, url, expected):
    data = get_json(app, url + "&format=json")
    (rows,) = data.values()
    assert names(rows) == expected


def test_filter_form_keeps_its_values_and_pages(app):
    text = call(app, "/Snh_PodDatabaseList?namespace=shop&limit=1").text
    assert '<input type="text" name="namespace" value="shop">' in text
    assert "Showing 1&ndash;1 of 2 (filtered from 3)" in text
    assert 'href="/Snh_PodDatabaseList?namespace=shop&amp;limit=1&amp;offset=1">next</a>' in text
    second = call(app, "/Snh_PodDatabaseList?namespace=shop&limit=1&offset=1").text
    assert "Showing 2&ndash;2 of 2" in second and ">previous</a>" in second
    assert names(get_json(app, "/Snh_PodDatabaseList?format=json&limit=2&offset=1")["pods"]) == ["web", "debug"]


@pytest.mark.parametrize("url, message", [
    ("/Snh_PodDatabaseList?namespac=shop", "unknown query parameter(s) namespac"),
    ("/Snh_PodDatabaseList?format=xml", "unknown format &#39;xml&#39;"),
    ("/Snh_PodDatabaseList?limit=ten", "limit must be a whole number"),
    ("/Snh_PodDatabaseList?limit=0", "limit must be at least 1"),
    ("/Snh_PodDatabaseList?offset=%C2%B2", "offset must be a whole number"),
    ("/Snh_NetworkPolicyDetail?namespace=shop", "give both namespace= and name="),
])
def test_bad_queries_answer_400_with_the_reason(app, url, message):
    reply = call(app, url)
    assert reply.status == 400
    assert message in reply.text and "Traceback" not in reply.text


def test_bad_query_in_json_answers_json(app):
    reply = call(app, "/Snh_TagDatabaseList?format=json&colour=red")
    assert reply.status == 400 and "colour" in reply.json()["error"]


def test_unknown_page_and_policy_are_404(app):
    assert call(app, "/Snh_Nothing").status == 404
    reply = call(app, "/Snh_NetworkPolicyDetail?namespace=shop&name=ghost&format=json")
    assert reply.status == 404 and reply.json() == {"error": "no NetworkPolicy shop/ghost in the database"}


def test_policy_detail_shows_spec_rules_in_order_and_tags(app):
    text = call(app, "/Snh_NetworkPolicyDetail?namespace=shop&name=db-allow-web").text
    assert "<h1>NetworkPolicy shop/db-allow-web</h1>" in text
    assert '<span class="state state-synced">synced</span>' in text
    assert "port: 5432" in text and "app: web" in text  # the spec, as YAML
    assert text.index(R_WEB_TO_DB) < text.index(R_DB_DENY)  # pass rule, then its deny rule
    assert R_MON_DENY not in text and R_MONITORING not in text  # another policy's rules
    assert '<span class="state state-deny">deny</span>' in text
    data = get_json(app, "/Snh_NetworkPolicyDetail?namespace=shop&name=db-allow-web&format=json")
    detail = data["network_policy"]
    assert names(detail["firewall_rules"]) == [R_WEB_TO_DB, R_DB_DENY]
    assert detail["firewall_rules"][0]["endpoint_1"] == {"tags": ["app=web", "application=k8s", "namespace=shop"]}
    assert detail["firewall_rules"][0]["service"]["dst_ports"] == {"start_port": 5432, "end_port": 5432}
    assert names(detail["tags"]) == ["app=db", "app=web", "application=k8s", "namespace=shop"]
    assert detail["address_groups"] == [] and detail["missing_rules"] == []


def test_policy_detail_finds_deny_rules_by_name_when_the_record_lists_only_pass_rules(db, app):
    db.network_policies[("shop", "allow-monitoring")].status.rules = [R_MONITORING]
    data = get_json(app, "/Snh_NetworkPolicyDetail?namespace=shop&name=allow-monitoring&format=json")
    detail = data["network_policy"]
    assert names(detail["firewall_rules"]) == [R_MONITORING, R_MON_DENY]
    assert names(detail["address_groups"]) == [AG_NAME]
    assert detail["firewall_rules"][0]["state"] == "pending"
    # The deny rule still counts as the policy's namespace's on the rule list.
    rules = get_json(app, "/Snh_FirewallRuleDatabaseList?namespace=shop&q=monitoring&format=json")
    assert names(rules["firewall_rules"]) == [R_MONITORING, R_MON_DENY]


def test_policy_detail_reports_rule_names_known_nowhere(db, app):
    db.network_policies[("shop", "db-allow-web")].rules.append("k8s-shop-ingress-db-allow-web-9-ghost-0-0")
    data = get_json(app, "/Snh_NetworkPolicyDetail?namespace=shop&name=db-allow-web&format=json")
    assert data["network_policy"]["missing_rules"] == ["k8s-shop-ingress-db-allow-web-9-ghost-0-0"]
    assert "known to neither the translator nor the config API" in call(
        app, "/Snh_NetworkPolicyDetail?namespace=shop&name=db-allow-web").text


def test_the_db_is_read_at_each_request(db, app):
    db.network_policies.pop(("shop", "db-allow-web"))
    rows = get_json(app, "/Snh_NetworkPolicyDatabaseList?format=json")["network_policies"]
    assert names(rows) == ["allow-monitoring", XSS]


def test_markup_in_names_and_errors_is_shown_as_text_on_every_page(app):
    escaped = html.escape(XSS)
    urls = [page.path for page in LIST_PAGES] + [
        "/", "/Snh_NetworkPolicyDetail?namespace=tools&name=" + XSS.replace("<", "%3C").replace(">", "%3E"),
        "/Snh_NetworkPolicyDatabaseList?name=%3Cb%3E"]
    for url in urls:
        text = call(app, url).text
        assert "<script>" not in text, url
        assert "<b>" not in text, url
    policy_list = call(app, "/Snh_NetworkPolicyDatabaseList").text
    assert policy_list.count(escaped) >= 4  # the name, the record's error, the rejection, its name
    assert f"podSelector: unknown operator &#39;Sometimes&#39; {escaped}" in policy_list
    # Even the JSON is never served as HTML.
    reply = call(app, "/Snh_NetworkPolicyDatabaseList?format=json")
    assert reply.headers["Content-Type"] == "application/json"
    assert reply.headers["X-Content-Type-Options"] == "nosniff"


def test_translation_errors_section_lists_rejections_with_filters(db, app):
    db.errors.append({"kind": "NetworkPolicy", "namespace": "shop", "name": "db-allow-web",
                      "reason": "named port 'metrics' resolves on no pod"})
    text = call(app, "/Snh_NetworkPolicyDatabaseList?namespace=shop").text
    section = text[text.index('id="translation-errors"'):]
    assert "named port &#39;metrics&#39; resolves on no pod" in section
    assert "Sometimes" not in section  # the tools error is filtered out with its namespace


def test_connection_pages_show_times_errors_and_reconnects(app):
    text = call(app, "/Snh_KubeApiConnectionStatus?name=pods").text
    assert "2027-01-15 07:59:55Z (5 s ago)" in text  # last event
    assert "2027-01-15 07:50:00Z (10 min ago)" in text  # last error
    assert '<div class="error">410 Gone: too old resource version</div>' in text
    assert '<td class="col-reconnects">2</td>' in text
    vnc = get_json(app, "/Snh_VncApiConnectionStatus?format=json")["vnc_api_connections"]
    assert vnc == [{"name": "config-api", "url": "http://10.0.0.5:8082", "connected": True,
                    "last_event_at": NOW - 2, "last_error": "", "last_error_at": None,
                    "reconnects": 0}]
    vnc_page = call(app, "/Snh_VncApiConnectionStatus").text
    assert "never" in vnc_page  # no error yet
    # The config API is not a watch: no "initial list done: no" that would look like a fault.
    assert "initial list done" not in vnc_page and "resourceVersion" not in vnc_page
    assert "initial list done" in text and "resourceVersion" in text
    assert "served" not in vnc_page


def test_connection_page_shows_a_custom_resource_the_api_server_does_not_serve(db, app):
    db.kube_connections["clusternetworkpolicies"] = ConnectionStatus(
        "clusternetworkpolicies", url="https://k8s:6443/apis/policy.networking.k8s.io/v1alpha2/clusternetworkpolicies",
        initial_list_done=True, absent=True)
    rows = {row["name"]: row for row in
            get_json(app, "/Snh_KubeApiConnectionStatus?format=json")["kube_api_connections"]}
    assert rows["clusternetworkpolicies"]["served"] is False and rows["pods"]["served"] is True
    assert rows["clusternetworkpolicies"]["initial_list_done"] is True
    text = call(app, "/Snh_KubeApiConnectionStatus?name=clusternetworkpolicies").text
    assert "CRD" in text and "served" in text
