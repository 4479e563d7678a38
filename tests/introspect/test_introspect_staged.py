"""`/Snh_StagedPolicyList` and `/explain?staged=1` (SPEC 17), over a pipeline fed real events and
one staged run: the flows and would-be objects shown (JSON and HTML), the index link, both
verdicts of a flow."""
from __future__ import annotations

from prometheus_client import CollectorRegistry

from introspect.app import create_app
from introspect.explain import db_manifests
from kube_manager.service.staged_runner import StagedRunner
from tests.service.test_staged_runner import listed_pipeline, staged
from tests.support.builders import cluster_policy, cnp_rule, namespace_named, policy
from tests.support.introspect_support import call

PATH = "/Snh_StagedPolicyList"


def app_with_one_run():
    pipeline = listed_pipeline()
    pipeline.cache.on_event("networkpolicies", "ADDED", staged(policy("x", "deny", {
        "podSelector": {"matchLabels": {"app": "a"}}, "policyTypes": ["Ingress"],
        "ingress": [{"from": [{"podSelector": {"matchExpressions": [
            {"key": "app", "operator": "In", "values": ["b", "d"]}]}}]}]})))
    pipeline.cache.on_event("clusternetworkpolicies", "ADDED", staged(cluster_policy(
        "deny-y", "Admin", 3, namespace_named("y"), ingress=[cnp_rule("Deny", namespace_named("x"))])))
    StagedRunner(pipeline.db, pipeline.translator, lambda: db_manifests(pipeline.db).objects,
                 lambda record, note: False, CollectorRegistry()).run_once()
    return create_app(pipeline.db, semantics="kubernetes")


def test_json_lists_each_staged_policy_with_its_flows_and_objects():
    reply = call(app_with_one_run(), f"{PATH}?format=json")
    assert reply.status == 200
    rows = {(row["kind"], row["name"]): row for row in reply.json()["staged_policies"]}
    assert list(rows) == [("NetworkPolicy", "deny"), ("ClusterNetworkPolicy", "deny-y")]
    deny = rows[("NetworkPolicy", "deny")]
    assert deny["generation"] == 1 and deny["errors"] == [] and not deny["computing"]
    # x/a admits x/b only: y/c -> x/a closes, on every protocol
    assert [(f["from"], f["to"]) for f in deny["flows"]["closed_flows"]] == [("y/c", "x/a")] * 3
    added = [o["body"]["fq_name"][-1] for o in deny["flows"]["objects"]["added"]]
    assert "k8s-x-deny" in added
    assert rows[("ClusterNetworkPolicy", "deny-y")]["flows"]["closed"] == 2 * 3  # x/a, x/b -> y/c


def test_the_page_shows_the_closed_flows_and_the_decoded_rules():
    app = app_with_one_run()
    html = call(app, PATH).text
    assert "NetworkPolicy x/deny" in html and "ClusterNetworkPolicy deny-y" in html
    assert "would open 0 and close 3 flows among current pods" in html
    assert "<td><code>y/c</code></td><td><code>x/a</code></td>" in html
    assert "(pods app in (b,d) in namespace x)" in html  # the rule's selector tag, decoded
    assert 'href="/Snh_StagedPolicyList"' in call(app, "/").text


def test_explain_with_the_staged_policies_answers_twice():
    app = app_with_one_run()
    reply = call(app, "/explain?staged=1&from=y/c&to=x/a&port=80&protocol=TCP&format=json")
    assert reply.status == 200
    result = reply.json()
    assert result["enforced"]["allowed"] and not result["with_staged"]["allowed"] and result["changes"]
    html = call(app, "/explain?staged=1&from=y/c&to=x/a&port=80&protocol=TCP").text
    assert "as enforced now" in html and "with the staged policies enforced" in html
    assert call(app, "/explain?staged=1&from=y/c&to=nowhere/x&port=80&protocol=TCP&format=json").status == 400
