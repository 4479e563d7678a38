"""Introspect pages over a DB the real cache and translator filled from examples/demo: the explain
trace and banner, decoded selector tags, the pod page, policy rules with their deny rules, and the
uid filter. (introspect_support's hand-made DB has no translator behind it, so it cannot show
decoding.)"""
from __future__ import annotations

from typing import Any, Dict

import pytest

from introspect.app import create_app
from introspect.explain import db_explainer
from tests.support.introspect_support import call, demo_db
from kube_manager.records.db import Database


@pytest.fixture(scope="module")
def db() -> Database:
    return demo_db()


@pytest.fixture(scope="module")
def app(db):
    return create_app(db, explain=db_explainer(db, "k8s"))


def flat(text: str) -> str:
    return " ".join(text.split())


def get_json(app, url: str) -> Dict[str, Any]:
    reply = call(app, url + ("&" if "?" in url else "?") + "format=json")
    assert reply.status == 200, reply.text
    return reply.json()


def test_explain_page_shows_the_trace(app):
    html = flat(call(app, "/explain?from=shop/web-1&to=shop/api-2&port=9090&protocol=TCP").text)
    assert 'id="trace"' in html
    assert ('<a href="/Snh_NetworkPolicyDetail?namespace=shop&amp;name=api-from-web">'
            'shop/api-from-web</a>') in html
    assert 'port &#34;http&#34; is 9091 on shop/api-2, not 9090' in html
    data = get_json(app, "/explain?from=shop/web-1&to=shop/api-2&port=9090&protocol=TCP")
    (step,) = [s for s in data["trace"] if s["policy"] == "shop/api-from-web"]
    assert step["blocks"][0]["reason"] == 'port "http" is 9091 on shop/api-2, not 9090'


def test_explain_decodes_the_selector_tags_of_both_ends(app):
    data = get_json(app, "/explain?from=shop/web-1&to=shop/api-2&port=9090&protocol=TCP")
    named = [t for t in data["to"]["tags"] if t.startswith("label=k8s-sel-")]
    assert named and set(named) <= set(data["selectors"])
    texts = {data["selectors"][t]["text"] for t in named}
    assert 'pods app=api in namespace shop where port "http" (TCP) is 9091' in texts
    html = call(app, "/explain?from=shop/web-1&to=shop/api-2&port=9090&protocol=TCP").text
    assert "where port &#34;http&#34; (TCP) is 9091" in html


@pytest.mark.parametrize("flow, banner", [
    ("from=shop/web-1&to=shop/api-2&port=9090", "verdict-dropped"),  # both drop
    ("from=shop/web-1&to=shop/api-1&port=9090", "verdict-dropped"),  # Kubernetes drops
    ("from=monitoring/prometheus-0&to=shop/api-1&port=9100", "verdict-allowed"),  # both allow
])
def test_the_banner_follows_the_worse_verdict(app, flow, banner):
    html = call(app, f"/explain?{flow}&protocol=TCP").text
    assert f'class="verdict {banner}"' in html


def test_tag_list_decodes_selector_tags_in_html_and_json(app, db):
    tags = get_json(app, "/Snh_TagDatabaseList?q=k8s-sel")["tags"]
    assert tags and all(t["selector"] is not None for t in tags)
    by_name = {t["name"]: t for t in tags}
    named = [n for n, t in by_name.items() if t["selector"][1:] == ["http", "TCP", 9091]]
    assert len(named) == 1
    assert by_name[named[0]]["selector"][0] == [{"namespace": "shop"},
                                                 {"matchLabels": {"app": "api"}}]
    plain = get_json(app, "/Snh_TagDatabaseList?name=app%3Dapi")["tags"]
    assert plain[0]["selector"] is None  # a label tag reads as what it is
    html = flat(call(app, f"/Snh_TagDatabaseList?name={named[0]}").text)
    assert 'pods app=api in namespace shop where port &#34;http&#34; (TCP) is 9091' in html


def test_rules_decode_their_selector_tags(app):
    rules = get_json(app, "/Snh_FirewallRuleDatabaseList?policy=k8s-shop-api-from-web")
    (rule,) = [r for r in rules["firewall_rules"] if r["name"].endswith("-0-1")]
    (tag,) = rule["selectors"]
    assert rule["endpoint_2"] == {"tags": [tag]}
    assert rule["selectors"][tag][1:] == ["http", "TCP", 9091]
    html = call(app, "/Snh_FirewallRuleDatabaseList?policy=k8s-shop-api-from-web").text
    assert f"{tag} (pods app=api in namespace shop where port &#34;http&#34; (TCP) is 9091)" in html


def test_tag_ids_come_from_the_rules_the_config_api_filled(db, app):
    tag = "app=web"
    assert get_json(app, f"/Snh_TagDatabaseList?name={tag}")["tags"][0]["tag_id"] == ""
    rules = db.desired["firewall-rule"]
    fq, body = next((fq, b) for fq, b in rules.items() if tag in (b["endpoint_1"].get("tags") or []))
    actual = {**body, "uuid": "u-1",
              "endpoint_1": {**body["endpoint_1"],
                             "tag_ids": [0x00FF0000 + i for i in range(len(body["endpoint_1"]["tags"]))]}}
    db.actual.setdefault("firewall-rule", {})[fq] = actual
    try:
        index = body["endpoint_1"]["tags"].index(tag)
        row = get_json(app, f"/Snh_TagDatabaseList?name={tag}")["tags"][0]
        assert row["tag_id"] == f"0x{0x00FF0000 + index:08x}"
    finally:
        del db.actual["firewall-rule"][fq]


def test_network_policy_rules_include_its_deny_rules(app):
    (entry,) = get_json(app, "/Snh_NetworkPolicyDatabaseList?namespace=shop&name=default-deny")[
        "network_policies"]
    assert entry["rules"] == ["k8s-shop-ingress-default-deny-denyall",
                              "k8s-shop-egress-default-deny-denyall"]
    (api,) = get_json(app, "/Snh_NetworkPolicyDatabaseList?namespace=shop&name=api-from-web")[
        "network_policies"]
    assert api["rules"][-1] == "k8s-shop-ingress-api-from-web-denyall"
    assert len(api["rules"]) == 3  # two pass rules (http is 9090 and 9091) and the deny rule


def test_the_uid_filter_leads_to_the_policy(app):
    uid = "0b8e1d2c-0002-4f00-8000-000000000003"
    reply = call(app, f"/Snh_NetworkPolicyDatabaseList?network_policy_uuid={uid}")
    assert reply.status == 302
    assert reply.headers["Location"] == "/Snh_NetworkPolicyDetail?namespace=shop&name=api-from-web"
    listed = get_json(app, f"/Snh_NetworkPolicyDatabaseList?network_policy_uuid={uid}")
    assert [p["name"] for p in listed["network_policies"]] == ["api-from-web"]
    unknown = call(app, "/Snh_NetworkPolicyDatabaseList?network_policy_uuid=nope")
    assert unknown.status == 200  # nothing to lead to: the (empty) list


def test_pods_are_links_to_the_pod_page(app):
    html = call(app, "/Snh_PodDatabaseList?namespace=shop").text
    assert '<a href="/Snh_PodDetail?namespace=shop&amp;name=api-2">api-2</a>' in html
    explain = call(app, "/explain?from=shop/web-1&to=shop/api-2&port=9090&protocol=TCP").text
    assert 'href="/Snh_PodDetail?namespace=shop&amp;name=api-2"' in explain


def test_pod_page_lists_tags_selecting_and_admitting_policies(app):
    data = get_json(app, "/Snh_PodDetail?namespace=shop&name=api-2")
    assert data["pod"]["ip"] == "10.1.0.22"
    tags = {t["tag"]: t["selector"] for t in data["pod"]["tags"]}
    assert tags["app=api"] is None
    assert any(s and s[1:] == ["http", "TCP", 9091] for s in tags.values())
    selected = {row["policy"]: row["isolates"] for row in data["selected_by"]}
    assert selected == {"shop/default-deny": ["ingress", "egress"],
                        "shop/api-from-web": ["ingress"], "shop/allow-dns": ["egress"],
                        "shop/allow-prometheus": ["ingress"], "shop/api-to-payments": ["egress"]}
    to_it = {(r["policy"], r["as"]) for r in data["admits_to"]}
    assert ("shop/api-from-web", "selected") in to_it
    from_it = {(r["policy"], r["as"]) for r in data["admits_from"]}
    # api-2 sends to payments by its own egress policy; payments admits it as a peer.
    assert ("shop/api-to-payments", "selected") in from_it
    assert ("payments/payments-ingress", "peer") in from_it
    html = call(app, "/Snh_PodDetail?namespace=shop&name=api-2").text
    assert '<a href="/Snh_NetworkPolicyDetail?namespace=shop&amp;name=api-from-web">' in html
    assert 'name="from" value="shop/api-2"' in html
    assert call(app, "/Snh_PodDetail?namespace=shop&name=ghost").status == 404
    assert call(app, "/Snh_PodDetail?namespace=shop").status == 400


def test_a_pod_selected_by_no_policy(app):
    data = get_json(app, "/Snh_PodDetail?namespace=monitoring&name=prometheus-0")
    assert data["selected_by"] == []
    assert {r["policy"] for r in data["admits_from"]} == {"shop/allow-prometheus"}
    assert "No NetworkPolicy selects this pod" in call(
        app, "/Snh_PodDetail?namespace=monitoring&name=prometheus-0").text
