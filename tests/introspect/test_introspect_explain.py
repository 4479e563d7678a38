"""The /explain page over the live DB: verdicts, the deciding rule linked, JSON, and bad input."""
from __future__ import annotations

import pytest

from introspect.app import create_app
from introspect.explain import db_explainer, db_manifests, db_translation
from kube_manager.handlers import KINDS

from tests.support.introspect_support import (FP_DB, R_DB_DENY, R_MON_DENY, R_MONITORING, R_WEB_TO_DB, XSS,
                                build_db, call, policy_sequence, offline_explainer)


@pytest.fixture
def db():
    return build_db()


@pytest.fixture
def app(db):
    return create_app(db, explain=db_explainer(db, "k8s"))


def flat(text):
    """The page with every run of whitespace as one space, as a browser shows it."""
    return " ".join(text.split())


def explain_json(app, query):
    reply = call(app, "/explain?format=json&" + query)
    return reply.status, reply.json()


def test_blank_form(app):
    reply = call(app, "/explain")
    assert reply.status == 200
    assert '<input type="text" name="from" value=""' in reply.text
    assert '<option value="TCP" selected>' in reply.text
    assert 'id="verdict"' not in reply.text


def test_an_allowed_flow_names_and_links_its_deciding_rule(app):
    reply = call(app, "/explain?from=shop%2Fweb&to=shop%2Fdb&port=5432&protocol=TCP")
    assert reply.status == 200
    text = flat(reply.text)
    assert "<strong>allowed</strong> by Contrail; Kubernetes would <strong>allow</strong> it." in text
    assert (f'<a id="deciding-rule" href="/Snh_FirewallRuleDatabaseList?name={R_WEB_TO_DB}">'
            f"<code>{R_WEB_TO_DB}</code></a>") in text
    assert f'href="/Snh_FirewallPolicyDatabaseList?name={FP_DB}"' in text
    assert 'in the config API: <span class="state state-present">present</span>' in text
    # The link leads to a list holding exactly that rule.
    rules = call(app, f"/Snh_FirewallRuleDatabaseList?name={R_WEB_TO_DB}&format=json").json()
    assert [r["name"] for r in rules["firewall_rules"]] == [R_WEB_TO_DB]


def test_the_deciding_trace_row_is_highlighted_and_only_it(app):
    status, data = explain_json(app, "from=shop%2Fweb&to=shop%2Fdb&port=5432&protocol=TCP")
    matched = [(step["side"], step["policy"], block["index"]) for step in data["trace"]
               for block in step["blocks"] if block["peer"] and block["port"]]
    assert matched, data["trace"]
    text = call(app, "/explain?from=shop%2Fweb&to=shop%2Fdb&port=5432&protocol=TCP").text
    assert text.count('class="trace-step deciding"') == 1 and text.count("&larr; decides") == 1
    row = text[text.index('id="deciding-row"'):]
    row = flat(row[:row.index("</tr>")])
    assert "shop/db-allow-web" in row and "<td>yes</td><td>yes</td>" in row, row
    # A dropped flow was decided by no rule block: nothing is highlighted.
    dropped = call(app, "/explain?from=tools/debug&to=shop/db&port=5432&protocol=TCP").text
    assert 'id="deciding-row"' not in dropped


def test_a_dropped_flow_names_the_deny_rule(app):
    status, data = explain_json(app, "from=tools/debug&to=shop/db&port=5432&protocol=tcp")
    assert status == 200
    first_deny = min([R_DB_DENY, R_MON_DENY], key=lambda n: (policy_sequence(n), n))
    assert (data["allowed"], data["kubernetes_allowed"], data["deviation"]) == (False, False, None)
    assert (data["rule"], data["policy"], data["action"]) == (first_deny, "k8s-denyall", "deny")
    html = flat(call(app, "/explain?from=tools/debug&to=shop/db&port=5432&protocol=TCP").text)
    assert "<strong>dropped</strong> by Contrail; Kubernetes would <strong>drop</strong> it." in html
    assert 'href="/Snh_NetworkPolicyDetail?namespace=shop&amp;name=db-allow-web">shop/db-allow-web</a>' in html


def test_a_flow_decided_by_a_rule_not_yet_written_says_so(app):
    reply = call(app, "/explain?from=10.200.0.7&to=shop%2Fweb&port=9100&protocol=TCP")
    assert reply.status == 200
    assert f"<code>{R_MONITORING}</code>" in reply.text
    assert 'in the config API: <span class="state state-pending">pending</span>' in flat(reply.text)


def test_json_answers_with_the_spec_section_6_keys(app):
    status, data = explain_json(app, "from=shop/web&to=shop/db&port=5432&protocol=TCP")
    assert status == 200
    assert {"allowed", "kubernetes_allowed", "rule", "policy", "deviation"} <= set(data)
    assert (data["allowed"], data["rule"], data["policy"]) == (True, R_WEB_TO_DB, FP_DB)


@pytest.mark.parametrize("query, message", [
    ("from=shop/web&to=shop/ghost&port=80&protocol=TCP", "no such pod"),
    ("from=shop/web&to=shop/db&port=99999&protocol=TCP", "invalid port"),
    ("from=shop/web&to=shop/db&port=80&protocol=ICMP", "unknown protocol"),
    ("from=shop/web&to=not an address&port=80&protocol=TCP", "expected NS/POD or an IP address"),
    ("from=shop/web&port=80", "missing to:"),
])
def test_bad_input_is_a_400_with_a_clear_message(app, query, message):
    reply = call(app, "/explain?" + query)
    assert reply.status == 400
    assert 'id="explain-error"' in reply.text and message in reply.text
    assert "Traceback" not in reply.text
    status, data = explain_json(app, query)
    assert status == 400 and message in data["error"]


def test_json_without_a_query_is_a_400(app):
    status, data = explain_json(app, "")
    assert status == 400 and data["error"].startswith("missing from, to, port:")


def test_the_protocol_is_tcp_unless_given_as_the_explain_command_says(app):
    """A URL written from `explain --from ... --to ... --port N` (TCP by default) answers the same."""
    status, data = explain_json(app, "from=shop/web&to=shop/db&port=5432")
    assert status == 200 and data["protocol"].upper() == "TCP"
    assert data == explain_json(app, "from=shop/web&to=shop/db&port=5432&protocol=TCP")[1]
    assert explain_json(app, "from=shop/web&to=shop/db&port=5432&protocol=UDP")[1]["protocol"].upper() == "UDP"


def test_explain_failures_never_show_a_traceback(db):
    def broken(*_args):
        raise ZeroDivisionError("secret internals")

    reply = call(create_app(db, explain=broken), "/explain?from=a/b&to=c/d&port=1&protocol=TCP")
    assert reply.status == 500
    assert "internal error while explaining" in reply.text and "secret internals" not in reply.text
    reply = call(create_app(db), "/explain?from=a/b&to=c/d&port=1&protocol=TCP")
    assert reply.status == 503 and "not available" in reply.text


def test_the_db_is_handed_to_explain_in_translate_shapes(db):
    translation = db_translation(db, "k8s")
    assert translation["application_policy_set"]["fq_name"] == ["default-policy-management", "k8s"]
    assert {w["name"] for w in translation["workloads"]} == {"web", "db", "debug"}
    assert len(translation["firewall_rules"]) == 6  # desired only, the stale rule is not enforced
    manifests = db_manifests(db)
    assert [n["metadata"]["name"] for n in manifests.objects["Namespace"]] == ["shop", "tools"]
    assert manifests.objects["NetworkPolicy"][0]["spec"] == db.network_policies[("shop", "allow-monitoring")].spec


def test_explain_follows_the_db(db, app):
    db.pods.pop(("shop", "web"))
    reply = call(app, "/explain?from=shop/web&to=shop/db&port=5432&protocol=TCP")
    assert reply.status == 400 and "no such pod" in reply.text


def test_the_explain_index_is_kept_until_the_cache_changes_the_db(monkeypatch):
    """Indexing the DB is what makes explain slow at scale: it is built once per DB generation, and
    the first question after a watch event sees that event."""
    from introspect import explain as explain_module
    from kube_manager.service.dispatcher import EventDispatcher
    from kube_manager.records.db import Database
    from kube_manager.translator import ClusterTranslator
    from tests.support.builders import HTTP_8080, allow_from, namespace, pod, policy

    builds = []
    real = explain_module.LiveExplainer._live_explainer
    monkeypatch.setattr(explain_module.LiveExplainer, "_live_explainer",
                        lambda *a, **k: builds.append(1) or real(*a, **k))
    db = Database()
    cache = EventDispatcher(db, ClusterTranslator("k8s", "k8s"))
    for resource in KINDS.names():
        cache.on_event(resource, "LISTED", {"resourceVersion": "1"})
    cache.on_event("namespaces", "ADDED", namespace("a"))
    cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.1", app="web", ports=HTTP_8080))
    cache.on_event("pods", "ADDED", pod("a", "client", "10.0.0.2", app="client", ports=HTTP_8080))
    explain = db_explainer(db, "k8s")

    assert explain("a/client", "a/web", "80", "TCP")["allowed"] is True  # nothing isolates web
    assert explain("a/client", "a/web", "81", "TCP")["allowed"] is True
    assert len(builds) == 1

    cache.on_event("networkpolicies", "ADDED", policy("a", "np", allow_from("client", "web", port=80)))
    assert explain("a/client", "a/web", "81", "TCP")["allowed"] is False  # the new policy isolates web
    assert explain("a/client", "a/web", "80", "TCP")["allowed"] is True
    assert len(builds) == 2

    cache.on_event("pods", "DELETED", pod("a", "client", "10.0.0.2", app="client", ports=HTTP_8080))
    with pytest.raises(ValueError, match="no such pod"):
        explain("a/client", "a/web", "80", "TCP")
    assert len(builds) == 3


def test_a_policy_rejected_whole_in_an_ends_namespace_is_named_escaped(app):
    status, data = explain_json(app, "from=tools/debug&to=shop/db&port=5432&protocol=TCP")
    # The ClusterNetworkPolicy `bad` (its subject is no selector) is rejected whole too.
    assert status == 200 and data["rejected_policies"] == ["bad", f"tools/{XSS}"]
    html = call(app, "/explain?from=tools/debug&to=shop/db&port=5432&protocol=TCP").text
    assert "rejected whole (select nothing)" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and XSS not in html


def test_building_the_index_leaves_the_garbage_collector_as_it_found_it(db, monkeypatch):
    import gc

    from kube_manager.explain.flow_index import RuleIndex

    seen = []
    real = RuleIndex.update

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(RuleIndex, "update", spy)
    assert gc.isenabled()
    db_explainer(db, "k8s")("shop/web", "shop/db", "5432", "TCP")
    assert seen == [False] and gc.isenabled()  # paused while building, running again after

    def broken(*_args, **_kwargs):
        raise RuntimeError("index bug")

    monkeypatch.setattr(RuleIndex, "update", broken)
    with pytest.raises(RuntimeError):
        db_explainer(db, "k8s")("shop/web", "shop/db", "5432", "TCP")
    assert gc.isenabled()


def test_a_replaced_index_is_freed_although_the_collector_froze_it(monkeypatch):
    """The index is frozen out of the collector's reach; it must then hold no reference cycle, or
    every change would leak the index it replaces."""
    import gc
    import weakref

    from introspect import explain as explain_module
    from kube_manager.service.dispatcher import EventDispatcher
    from kube_manager.records.db import Database
    from kube_manager.translator import ClusterTranslator
    from tests.support.builders import allow_from, namespace, pod, policy

    built = []
    real = explain_module.LiveExplainer._live_explainer

    def spy(*args, **kwargs):
        made = real(*args, **kwargs)
        built.append(weakref.ref(made))
        return made

    monkeypatch.setattr(explain_module.LiveExplainer, "_live_explainer", spy)
    db = Database()
    cache = EventDispatcher(db, ClusterTranslator("k8s", "k8s"))
    for resource in KINDS.names():
        cache.on_event(resource, "LISTED", {"resourceVersion": "1"})
    cache.on_event("namespaces", "ADDED", namespace("a"))
    cache.on_event("pods", "ADDED", pod("a", "web", "10.0.0.1", app="web"))
    cache.on_event("pods", "ADDED", pod("a", "client", "10.0.0.2", app="client"))
    cache.on_event("networkpolicies", "ADDED", policy("a", "np", allow_from("client", "web")))
    explain = db_explainer(db, "k8s")
    try:
        explain("a/client", "a/web", "80", "TCP")
        assert gc.get_freeze_count() > 0 and built[0]() is not None
        cache.on_event("pods", "ADDED", pod("a", "other", "10.0.0.3", app="other"))
        explain("a/client", "a/web", "80", "TCP")
        assert len(built) == 2 and built[0]() is None and built[1]() is not None
    finally:
        gc.unfreeze()


def test_what_a_question_compiles_is_frozen_once(db):
    """The Kubernetes side compiles the namespaces a question touches and keeps them: out of the
    collector's view after that question (else every full collection walks them during a later
    one), and a question compiling nothing new leaves the collector alone."""
    import gc

    from kube_manager.explain.k8s_netpol import Policy

    explain = db_explainer(db, "k8s")
    try:
        explain("tools/debug", "shop/db", "5432", "TCP")
        frozen = gc.get_freeze_count()
        assert not [o for o in gc.get_objects() if isinstance(o, Policy)]  # all compiled, frozen
        explain("shop/web", "shop/db", "5432", "TCP")  # shop's pods and policies compiled
        assert gc.get_freeze_count() > frozen
        assert not [o for o in gc.get_objects() if isinstance(o, Policy)]
        frozen = gc.get_freeze_count()
        explain("shop/web", "shop/db", "5432", "TCP")  # nothing new
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()


def test_the_kubernetes_side_knows_the_cluster_network_policy_tiers(db):
    """The DB's ClusterNetworkPolicies reach the verdict: an Admin tier Deny of the tools namespace
    decides the ingress of shop/db, and the page names the tier, the policy and the rule."""
    deny = db.cluster_network_policies["deny-tenants"]
    manifest = deny.manifest  # a copy (records hold their objects packed): edited, then stored back
    manifest["spec"]["ingress"][1]["from"] = [{"namespaces": {"matchLabels": {
        "kubernetes.io/metadata.name": "tools"}}}]
    deny.manifest = manifest
    app = create_app(db, explain=db_explainer(db, "k8s"))
    status, data = explain_json(app, "from=tools/debug&to=shop/db&port=5432&protocol=tcp")
    assert status == 200
    ingress = data["kubernetes"]["ingress"]
    assert (ingress["tier"], ingress["rule"]["policy"], ingress["rule"]["rule"]) == (
        "Admin", "deny-tenants", "no-tenants")
    assert [(s["kind"], s["policy"], s["allows"]) for s in data["trace"] if s["side"] == "ingress"][0] \
        == ("ClusterNetworkPolicy", "deny-tenants", False)
    text = flat(call(app, "/explain?from=tools%2Fdebug&to=shop%2Fdb&port=5432&protocol=TCP").text)
    assert "<td>Admin</td> <td>ClusterNetworkPolicy deny-tenants rule 1 no-tenants (Deny)</td>" in text
    assert ("<td>ClusterNetworkPolicy deny-tenants</td><td>no</td><td>1 no-tenants (Deny)</td> "
            "<td>yes</td><td>yes</td><td class=\"reason\">denies: tools/debug is one of the pods in "
            "namespaces kubernetes.io/metadata.name=tools; every port</td>") in text
    assert [c["metadata"]["name"] for c in db_manifests(db).objects["ClusterNetworkPolicy"]] == [
        "bad", "deny-tenants"]


PAIR_CLUSTER = """
apiVersion: v1
kind: Namespace
metadata: {name: a}
---
apiVersion: v1
kind: Namespace
metadata: {name: b}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: a, labels: {app: client}}
status: {podIP: 10.1.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: b, labels: {app: server}}
status: {podIP: 10.2.0.1}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client-out, namespace: a}
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress: [{to: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: b}}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server-in, namespace: b}
spec:
  podSelector: {}
  policyTypes: [Ingress]
  ingress: [{from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: a}}}]}]
"""
HOUSES = ("examples/cnp/cluster.yaml", "examples/cnp/admin-pass-then-deny.yaml",
          "examples/cnp/baseline-default-deny.yaml")
RAVENCLAW, SLYTHERIN, GRYFFINDOR = ("network-policy-conformance-ravenclaw/luna-lovegood-0",
                                    "network-policy-conformance-slytherin/draco-malfoy-0",
                                    "network-policy-conformance-gryffindor/harry-potter-0")


@pytest.mark.parametrize("files, source, destination, rule_prefix, row", [
    # A tier block's rule decides: the ClusterNetworkPolicy rule Kubernetes names is highlighted.
    (HOUSES, RAVENCLAW, GRYFFINDOR, "k8s--admin-", ("ingress", "default-deny-between-houses", 1)),
    (HOUSES, SLYTHERIN, GRYFFINDOR, "k8s--admin-", ("ingress", "protect-gryffindor", 1)),
    (HOUSES, GRYFFINDOR, SLYTHERIN, "k8s--baseline-", ("ingress", "default-deny-between-houses", 0)),
    # A pair rule stands for both ends' NetworkPolicies: the source's allowing block is highlighted.
    (None, "a/client", "b/server", "k8s--pair-", ("egress", "a/client-out", 0)),
])
def test_a_rule_standing_for_both_chains_highlights_the_row_kubernetes_names(tmp_path, files, source, destination,
                                                                             rule_prefix, row):
    if files is None:
        (tmp_path / "cluster.yaml").write_text(PAIR_CLUSTER)
        files = (str(tmp_path / "cluster.yaml"),)
    explainer = offline_explainer(files)
    assert explainer.explain(source, destination, 80, "TCP")["rule"].startswith(rule_prefix)
    page = create_app(build_db(), explain=explainer.explain)
    text = call(page, f"/explain?from={source}&to={destination}&port=80&protocol=TCP").text
    assert text.count('class="trace-step deciding"') == 1
    highlighted = flat(text[text.index('id="deciding-row"'):])
    highlighted = highlighted[:highlighted.index("</tr>")]
    side, policy, index = row
    assert f"<td>{side}</td>" in highlighted and policy in highlighted, highlighted
    assert f"<td>{index} " in highlighted, highlighted
