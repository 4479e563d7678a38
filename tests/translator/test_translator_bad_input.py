"""SPEC 11: invalid parts are rejected as narrowly as possible, with a reason, and never crash."""
from __future__ import annotations

import pytest

from tests.support.builders import pod, policy
from tests.support.schema_oracle import policies_by_name, rule_refs, rules, run


def pass_rules(result, ns="n", name="p"):
    return [n for n, _ in rule_refs(result, f"k8s-{ns}-{name}")]


def deny_rules(result):
    return sorted(n for n, _ in rule_refs(result, "k8s-denyall"))


def reasons(result):
    return [e["reason"] for e in result["errors"]]


@pytest.mark.parametrize("bad_peer, fragment", [
    ({"ipBlock": {"cidr": "10.0.0.0/33"}}, "not a valid CIDR"),
    ({"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24"]}}, "strict subset"),
    ({"ipBlock": {"cidr": "10.0.0.0/16"}, "podSelector": {}}, "both ipBlock and another peer"),
    ({"podSelector": {"matchExpressions": [{"key": "a", "operator": "Maybe"}]}}, "not a valid selector operator"),
    ({"namespaceSelector": {"matchLabels": {"a b": "c"}}}, "label key"),
    ({"podSelecter": {}}, "unknown field"),
    ({}, "must specify a peer"),
    (None, "must specify a peer"),
    ("10.0.0.0/8", "expected an object"),
])
def test_a_bad_peer_drops_only_its_rules_and_keeps_indices(bad_peer, fragment):
    spec = {"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}, bad_peer, {"namespaceSelector": {}}],
                                            "ports": [{"port": 80}]}]}
    result = run(policies=[policy("n", "p", spec)])
    assert pass_rules(result) == ["k8s-n-ingress-p-0-podSelector-0-0", "k8s-n-ingress-p-0-namespaceSelector-2-0"]
    assert deny_rules(result) == ["k8s-n-ingress-p-denyall"]
    assert len(result["errors"]) == 1
    error = result["errors"][0]
    assert (error["kind"], error["namespace"], error["name"]) == ("NetworkPolicy", "n", "p")
    assert error["reason"].startswith("spec.ingress[0].from[1]") and fragment in error["reason"]


@pytest.mark.parametrize("bad_port, fragment", [
    ({"port": 90, "endPort": 80}, "below port"),
    ({"port": "http", "endPort": 90}, "named port"),
    ({"protocol": "ICMP", "port": 1}, "unsupported protocol"),
    ({"protocol": "tcp", "port": 1}, "unsupported protocol"),
    ({"prot": 1}, "unknown field"),
])
def test_a_bad_port_drops_only_itself_and_services_count_the_survivors(bad_port, fragment):
    spec = {"podSelector": {}, "ingress": [{"from": [{"podSelector": {}}],
                                            "ports": [{"port": 80}, bad_port, {"port": 443}]}]}
    result = run(policies=[policy("n", "p", spec)])
    names = pass_rules(result)
    assert names == ["k8s-n-ingress-p-0-podSelector-0-0", "k8s-n-ingress-p-0-podSelector-0-1"]
    assert rules(result)[names[1]]["service"]["dst_ports"]["start_port"] == 443
    assert reasons(result)[0].startswith("spec.ingress[0].ports[1]") and fragment in reasons(result)[0]


@pytest.mark.parametrize("block", [
    {"from": [{"ipBlock": {"cidr": "bad"}}], "ports": [{"port": 80}]},
    {"from": [{"podSelector": {}}], "ports": [{"port": 0}]},
    {"form": [{"podSelector": {"matchLabels": {"a": "b"}}}]},
    {"from": {"podSelector": {}}},
    {"from": [{"podSelector": {}}], "ports": {"port": 80}},
    "allow everything",
])
def test_a_block_that_cannot_be_read_or_has_nothing_valid_never_becomes_allow_all(block):
    spec = {"podSelector": {}, "ingress": [block, {"from": [{"podSelector": {}}]}]}
    result = run(policies=[policy("n", "p", spec)])
    assert pass_rules(result) == ["k8s-n-ingress-p-1-podSelector-0-0"]
    assert deny_rules(result) == ["k8s-n-ingress-p-denyall"]
    assert reasons(result) and reasons(result)[0].startswith("spec.ingress[0]")


@pytest.mark.parametrize("spec, fragment", [
    ({"podSelector": {"matchLabels": {"a": 1}}, "ingress": [{}]}, "spec.podSelector"),
    ({"podSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}, "spec.podSelector"),
    ({"podSelector": {}, "policyTypes": ["ingress"]}, "spec.policyTypes[0]"),
    ({"podSelector": {}, "policyTypes": [None]}, "spec.policyTypes[0]"),
    ({"podSelector": {}, "policyTypes": ["Ingress", "Egress", "Ingress"]}, "more than two"),
    ({"podSelector": {}, "policyTypes": "Ingress"}, "expected a list"),
    (["not", "a", "spec"], "spec: expected an object"),
])
def test_a_bad_own_selector_or_policy_types_rejects_the_policy_whole(spec, fragment):
    result = run(policies=[policy("n", "p", spec), policy("n", "ok", {"podSelector": {}})])
    assert "k8s-n-p" not in policies_by_name(result)
    assert deny_rules(result) == ["k8s-n-ingress-ok-denyall"]
    assert not any("-p-" in name for name in rules(result))
    (reason,) = reasons(result)
    assert reason.startswith("spec") and fragment in reason and reason.endswith("rejected whole")


def test_unknown_spec_fields_are_reported_and_ignored():
    spec = {"podSelector": {}, "ingres": [{}], "egress": [{}]}
    result = run(policies=[policy("n", "p", spec)])
    assert pass_rules(result) == ["k8s-n-egress-p-0-allow-all-0"]
    assert deny_rules(result) == ["k8s-n-egress-p-denyall", "k8s-n-ingress-p-denyall"]
    assert reasons(result) == ["spec: unknown field 'ingres' (did you mean 'ingress'?); ignored; "
                               "without spec.ingress it allows no ingress traffic to the pods it selects"]


@pytest.mark.parametrize("spec, reason", [
    # the misspelt selector: the policy now selects every pod of its namespace, and says so
    ({"podSelectr": {"matchLabels": {"app": "web"}}, "ingress": [{}]},
     "spec: unknown field 'podSelectr' (did you mean 'podSelector'?); ignored; "
     "without spec.podSelector it selects every pod of its namespace"),
    ({"podSelector": {}, "policyTypes": ["Egress"], "egres": [{}]},
     "spec: unknown field 'egres' (did you mean 'egress'?); ignored; "
     "without spec.egress it allows no egress traffic from the pods it selects"),
    # an ingress list absent but not isolated (policyTypes: Egress only): no effect to tell
    ({"podSelector": {}, "policyTypes": ["Egress"], "egress": [{}], "ingres": [{}]},
     "spec: unknown field 'ingres' (did you mean 'ingress'?); ignored"),
    ({"podSelector": {}, "ingress": [], "colour": "blue"}, "spec: unknown field 'colour'; ignored"),
])
def test_an_unknown_spec_field_says_what_was_likely_meant_and_its_effect(spec, reason):
    assert reasons(run(policies=[policy("n", "p", spec)])) == [reason]


def test_the_misspelt_selector_does_select_every_pod_as_the_reason_says():
    """The effect named is the effect applied (the translation checked, not the message alone)."""
    pods = [pod("n", "web", "10.0.0.1", app="web"), pod("n", "db", "10.0.0.2", app="db")]
    spec = {"podSelectr": {"matchLabels": {"app": "web"}}, "ingress": []}
    typo = run(pods=pods, policies=[policy("n", "p", spec)], semantics="kubernetes")
    everyone = run(pods=pods, policies=[policy("n", "p", {"podSelector": {}, "ingress": []})], semantics="kubernetes")
    web_only = run(pods=pods, policies=[policy("n", "p", {"podSelector": {"matchLabels": {"app": "web"}},
                                                          "ingress": []})], semantics="kubernetes")
    tagged = {(w["name"], tuple(w["tags"])) for w in typo["workloads"]}
    assert tagged == {(w["name"], tuple(w["tags"])) for w in everyone["workloads"]}
    assert tagged != {(w["name"], tuple(w["tags"])) for w in web_only["workloads"]}  # db isolated too


def test_a_misspelt_field_inside_a_block_is_named_with_its_likely_meaning():
    spec = {"podSelector": {}, "ingress": [{"from": [{"podSelectr": {}}], "ports": [{"port": 80, "protocl": "TCP"}]}]}
    assert reasons(run(policies=[policy("n", "p", spec)])) == [
        "spec.ingress[0].from[0]: unknown field 'podSelectr' (did you mean 'podSelector'?); the peer is ignored",
        "spec.ingress[0].ports[0]: unknown field 'protocl' (did you mean 'protocol'?); the port is ignored"]


def test_an_unreadable_egress_list_still_isolates_egress():
    result = run(policies=[policy("n", "p", {"podSelector": {}, "egress": "all"})])
    assert deny_rules(result) == ["k8s-n-egress-p-denyall", "k8s-n-ingress-p-denyall"]
    assert pass_rules(result) == []
    assert reasons(result) == ["spec.egress: expected a list, got str; no egress rule is written"]


def test_nulls_are_read_as_the_api_server_decodes_them():
    spec = {"podSelector": None, "policyTypes": None,
            "ingress": [None, {"from": [{"namespaceSelector": {}, "podSelector": None}], "ports": [None]}],
            "egress": None}
    result = run(policies=[policy("n", "p", spec)])
    assert pass_rules(result) == ["k8s-n-ingress-p-0-allow-all-0", "k8s-n-ingress-p-1-namespaceSelector-0-0"]
    service = rules(result)["k8s-n-ingress-p-1-namespaceSelector-0-0"]["service"]
    assert (service["protocol"], service["dst_ports"]) == ("tcp", {"start_port": 0, "end_port": 65535})
    assert deny_rules(result) == ["k8s-n-ingress-p-denyall"]
    assert result["errors"] == []
    assert run(policies=[policy("n", "p", None)])["errors"] == []


def test_bad_objects_are_reported_by_kind_and_skipped():
    bad = [
        {"kind": "NetworkPolicy", "metadata": {"name": "Bad_Name", "namespace": "n"}, "spec": {}},
        {"kind": "NetworkPolicy", "metadata": {"namespace": "n"}, "spec": {}},
        "not an object",
    ]
    pods = [{"metadata": {"name": "p", "namespace": "n", "labels": {"a": 1}}},
            {"metadata": {"name": "q", "namespace": "n"}, "status": {"podIP": "300.1.1.1"}},
            pod("n", "good")]
    namespaces = [{"metadata": {"name": "UPPER"}}, {"metadata": {"name": "ok", "labels": {"k": ["v"]}}}]
    result = run(namespaces=namespaces, pods=pods, policies=bad)
    assert [(e["kind"], e["namespace"], e["name"]) for e in result["errors"]] == [
        ("Namespace", "", "UPPER"), ("Namespace", "", "ok"),
        ("NetworkPolicy", "default", ""), ("NetworkPolicy", "n", ""), ("NetworkPolicy", "n", "Bad_Name"),
        ("Pod", "n", "p"), ("Pod", "n", "q")]
    assert [(w["namespace"], w["name"]) for w in result["workloads"]] == [("n", "good")]
    assert "namespace=UPPER" not in [t["fq_name"][0] for t in result["tags"]]


def test_yaml_values_json_does_not_know_never_break_the_spec_hash():
    import datetime
    spec = {"podSelector": {"matchLabels": {"date": datetime.date(2020, 1, 1)}}, 1: "x"}
    result = run(policies=[policy("n", "p", spec)])
    assert "spec.podSelector" in reasons(result)[0]
