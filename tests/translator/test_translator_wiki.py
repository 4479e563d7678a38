"""The Contrail wiki's six illustrations, as this implementation translates them (examples/wiki).

Differences from the wiki's tables are deliberate (SPEC **Fix** items, docs/mapping.md): names carry
the cluster and the egress block index, every tag endpoint carries application=<cluster>, the
except is subtracted from the address group instead of becoming a deny rule, and each policy's
default deny is a rule in <cluster>-denyall.
"""
from __future__ import annotations

import os

import pytest

from kube_manager.offline.manifests import load_manifests
from kube_manager.translator import translate
from tests.support.schema_oracle import assert_translation_valid, rule_refs, rules, tag_names
from tests.support.paths import EXAMPLES

WIKI = str(EXAMPLES / "wiki")
ANY = {"protocol": "any", "src_ports": {"start_port": 0, "end_port": 65535},
       "dst_ports": {"start_port": 0, "end_port": 65535}}
DEFAULT_PODS = ["application=k8s", "namespace=default"]
DB_PODS = ["application=k8s", "namespace=default", "role=db"]


def illustration(number: int):
    manifests = load_manifests([os.path.join(WIKI, "cluster.yaml"),
                                os.path.join(WIKI, f"illustration-{number}.yaml")])
    result = translate(manifests.objects, semantics="cluster-wide").to_dict()
    assert_translation_valid(result)
    assert result["errors"] == []
    return result


def tcp(port: int):
    return {"protocol": "tcp", "src_ports": {"start_port": 0, "end_port": 65535},
            "dst_ports": {"start_port": port, "end_port": port}}


def summary(rule):
    return (rule["action_list"]["simple_action"], rule["service"], rule["endpoint_1"], rule["direction"],
            rule["endpoint_2"])


def denyall_refs(result):
    return [name for name, _ in rule_refs(result, "k8s-denyall")]


def test_illustration_1_ip_block_namespace_and_pod_selectors():
    result = illustration(1)
    assert tag_names(result) == ["application=k8s", "namespace.project=myproject", "namespace=default",
                                 "namespace=myproject", "role=db", "role=frontend"]
    groups = {g["fq_name"][-1]: [f"{s['ip_prefix']}/{s['ip_prefix_len']}"
                                 for s in g["address_group_prefix"]["subnet"]]
              for g in result["address_groups"]}
    assert groups == {
        "10.0.0.0/24": ["10.0.0.0/24"],
        "172.17.0.0/16-except-172.17.1.0/24": [
            "172.17.0.0/24", "172.17.2.0/23", "172.17.4.0/22", "172.17.8.0/21", "172.17.16.0/20",
            "172.17.32.0/19", "172.17.64.0/18", "172.17.128.0/17"],
    }
    by_name = rules(result)
    prefix = "k8s-default-ingress-test-network-policy-0"
    expected = {
        f"{prefix}-ipBlock-0-cidr-172.17.0.0/16-0": (
            "pass", tcp(6379), {"address_group": "default-policy-management:172.17.0.0/16-except-172.17.1.0/24"},
            ">", {"tags": DB_PODS}),
        f"{prefix}-namespaceSelector-1-0": (
            "pass", tcp(6379), {"tags": ["application=k8s", "namespace.project=myproject"]}, ">", {"tags": DB_PODS}),
        f"{prefix}-podSelector-2-0": (
            "pass", tcp(6379), {"tags": ["application=k8s", "namespace=default", "role=frontend"]}, ">",
            {"tags": DB_PODS}),
        "k8s-default-egress-test-network-policy-0-ipBlock-0-cidr-10.0.0.0/24-0": (
            "pass", tcp(5978), {"tags": DB_PODS}, ">", {"address_group": "default-policy-management:10.0.0.0/24"}),
    }
    for name, rule in expected.items():
        assert summary(by_name[name]) == rule, name
    assert rule_refs(result, "k8s-default-test-network-policy") == [
        (name, "%05d.0" % i) for i, name in enumerate(expected)]
    assert summary(by_name["k8s-default-ingress-test-network-policy-denyall"]) == (
        "deny", ANY, {"any": True}, ">", {"tags": DB_PODS})
    assert summary(by_name["k8s-default-egress-test-network-policy-denyall"]) == (
        "deny", ANY, {"tags": DB_PODS}, ">", {"any": True})
    # No deny rule for the except (SPEC 3 Fix): only the two default-deny rules exist.
    assert [r for r in by_name.values() if r["action_list"]["simple_action"] == "deny"] == [
        by_name["k8s-default-egress-test-network-policy-denyall"],
        by_name["k8s-default-ingress-test-network-policy-denyall"]]


def test_illustration_2_allow_all_ingress():
    result = illustration(2)
    by_name = rules(result)
    assert summary(by_name["k8s-default-ingress-allow-all-ingress-0-allow-all-0"]) == (
        "pass", ANY, {"any": True}, ">", {"tags": DEFAULT_PODS})
    assert rule_refs(result, "k8s-default-allow-all-ingress") == [
        ("k8s-default-ingress-allow-all-ingress-0-allow-all-0", "00000.0")]
    assert denyall_refs(result) == ["k8s-default-ingress-allow-all-ingress-denyall"]


@pytest.mark.parametrize("number, policy, denied", [
    (3, "deny-ingress", ["ingress"]),
    (5, "deny-all-egress", ["egress"]),
    (6, "deny-all-ingress-egress", ["ingress", "egress"]),
])
def test_illustrations_3_5_6_default_deny_have_an_empty_policy_and_deny_rules(number, policy, denied):
    result = illustration(number)
    assert rule_refs(result, f"k8s-default-{policy}") == []
    names = {f"k8s-default-{d}-{policy}-denyall" for d in denied}
    assert set(denyall_refs(result)) == names
    by_name = rules(result)
    for direction in denied:
        rule = by_name[f"k8s-default-{direction}-{policy}-denyall"]
        endpoints = ({"any": True}, {"tags": DEFAULT_PODS})
        if direction == "egress":
            endpoints = endpoints[::-1]
        assert summary(rule) == ("deny", ANY, endpoints[0], ">", endpoints[1])


def test_illustration_4_allow_all_egress_also_isolates_ingress_as_kubernetes_defaults():
    result = illustration(4)
    by_name = rules(result)
    assert summary(by_name["k8s-default-egress-allow-all-egress-0-allow-all-0"]) == (
        "pass", ANY, {"tags": DEFAULT_PODS}, ">", {"any": True})
    assert set(denyall_refs(result)) == {"k8s-default-ingress-allow-all-egress-denyall",
                                         "k8s-default-egress-allow-all-egress-denyall"}


def test_illustration_tags_are_lazy():
    result = illustration(3)
    assert tag_names(result) == ["application=k8s", "namespace=default", "namespace=myproject"]
